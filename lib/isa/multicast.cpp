#include "isa/multicast.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace cct::isa {

namespace {

// What a member reads: its DRAM space (activations or weights), address and shape.
bool same_source(const Instruction& a, const Instruction& b) {
  const bool act_a = a.op() == Opcode::lda_mc, act_b = b.op() == Opcode::lda_mc;
  if (act_a != act_b || a.get(Param::STaddr) != b.get(Param::STaddr)) return false;
  const Param shape = act_a ? Param::Tile : Param::Wsize;
  auto x = a.list(shape), y = b.list(shape);
  return std::equal(x.begin(), x.end(), y.begin(), y.end());
}

std::string where(const Instruction& inst, size_t index) {
  return std::string(inst.mnemonic()) + " on core " + std::to_string(inst.mapping.core) + " (instruction " +
         std::to_string(index + 1) + ")";
}

}  // namespace

MulticastGroups group_multicast_loads(const Program& p,
                                      const std::function<void(size_t, const std::string&)>& problem) {
  MulticastGroups out;
  out.group_of.assign(p.instructions.size(), -1);
  std::map<std::pair<int64_t, int32_t>, int64_t> seen;  // (tag, core) -> members so far
  std::map<std::pair<int64_t, int64_t>, int32_t> index;  // (tag, k) -> group
  // The data format of each member's configuration (the latest lda_cfg,
  // ldw_cfg or lw_cfg of its core), which with the shape gives its bytes.
  std::map<std::pair<int32_t, Opcode>, int64_t> format;
  std::vector<int64_t> member_format(p.instructions.size(), -1);
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const Instruction& inst = p.instructions[i];
    if (inst.op() == Opcode::lda_cfg || inst.op() == Opcode::ldw_cfg || inst.op() == Opcode::lw_cfg)
      format[{inst.mapping.core, inst.op()}] = inst.get(Param::DF);
    if (!is_multicast_load(inst.op())) continue;
    const Opcode cfg = inst.op() == Opcode::lda_mc ? Opcode::lda_cfg : inst.op() == Opcode::ldw_mc ? Opcode::ldw_cfg : Opcode::lw_cfg;
    if (auto f = format.find({inst.mapping.core, cfg}); f != format.end()) member_format[i] = f->second;
    const int64_t tag = inst.get(Param::TAG);
    const int64_t k = seen[{tag, inst.mapping.core}]++;
    auto [it, fresh] = index.try_emplace({tag, k}, int32_t(out.groups.size()));
    if (fresh) out.groups.push_back({tag, {}});
    out.groups[size_t(it->second)].members.push_back(uint32_t(i));
    out.group_of[i] = it->second;
  }
  for (auto& g : out.groups) {
    std::sort(g.members.begin(), g.members.end(), [&](uint32_t a, uint32_t b) {
      return p.instructions[a].mapping.core < p.instructions[b].mapping.core;
    });
    const size_t first = g.members.front();
    const Instruction& lead = p.instructions[first];
    for (uint32_t m : g.members) {
      const Instruction& inst = p.instructions[m];
      const int64_t members = inst.get(Param::MEMBERS);
      if (members != int64_t(g.members.size()))
        problem(m, where(inst, m) + ": multicast group TAG " + std::to_string(g.tag) + " has " +
                       std::to_string(g.members.size()) + " member(s) (one per core), MEMBERS says " +
                       std::to_string(members));
      if (m != first && !same_source(lead, inst))
        problem(m, where(inst, m) + ": reads other DRAM bytes than " + where(lead, first) +
                       " of its multicast group (TAG " + std::to_string(g.tag) +
                       "): members read one space, address and shape");
      else if (m != first && member_format[m] != member_format[first] && member_format[m] >= 0 &&
               member_format[first] >= 0)
        problem(m, where(inst, m) + ": its configuration's data format differs from that of " + where(lead, first) +
                       " of its multicast group (TAG " + std::to_string(g.tag) + "): members read the same bytes");
    }
  }
  return out;
}

std::string multicast_unsupported(const Instruction& inst, const std::string& arch_name) {
  return std::string(inst.mnemonic()) + ": a multicast load, but architecture \"" + arch_name +
         "\" has no multicast (noc.multicast is false)";
}

}  // namespace cct::isa
