// The multicast pass (asm --multicast; formats/ISA_Format.md 5b): the DRAM
// loads several cores make of the same bytes become one multicast group
// each, on an architecture whose NoC multicasts. The k-th load of the same
// bytes on each core joins group k of those bytes; every member keeps its
// own destination and tokens. Groups make the cores wait for each other,
// so the merged program is run through the untimed checker: if it would
// deadlock, the program is left as it was.
#include <map>
#include <tuple>
#include <vector>

#include "asm/asm.hpp"
#include "isa/check.hpp"

namespace cct::assembler {

namespace {

using isa::Opcode;
using isa::Param;

// The member of group `tag` that performs `load` on its core.
isa::Instruction member_of(const isa::Instruction& load, int64_t tag, int64_t members) {
  const Opcode op = load.op() == Opcode::lda_mov ? Opcode::lda_mc : load.op() == Opcode::ldw_mov ? Opcode::ldw_mc : Opcode::lw_mc;
  isa::Instruction m(op);
  m.mapping = load.mapping;
  m.prev = load.prev;
  m.next = load.next;
  m.set(Param::TAG, tag);
  m.set(Param::MEMBERS, members);
  for (Param p : {Param::RS, Param::DBSG, Param::SBSG, Param::STaddr, Param::DTaddr})
    if (m.has(p)) m.set(p, load.get(p));
  for (Param p : {Param::XYmode, Param::Wsize, Param::Tile})
    if (m.has(p)) m.set_list(p, load.list(p));
  return m;
}

std::vector<int32_t> as_vector(std::span<const int32_t> s) { return {s.begin(), s.end()}; }

}  // namespace

MulticastMerge merge_multicast_loads(isa::Program& program, const arch::Architecture& arch) {
  MulticastMerge out;
  if (!arch.noc.multicast) return out;
  // What a load reads: its DRAM space, address and shape, and the
  // configuration that sizes it (format; an activation's DRAM box).
  using Key = std::tuple<int, int64_t, std::vector<int32_t>, int64_t, std::vector<int32_t>>;
  std::map<Key, std::map<int32_t, std::vector<size_t>>> loads;
  std::map<std::pair<int32_t, Opcode>, size_t> cfg;  // (core, *_cfg) -> the latest
  for (size_t i = 0; i < program.size(); ++i) {
    const isa::Instruction& in = program.instructions[i];
    if (in.op() == Opcode::lda_cfg || in.op() == Opcode::ldw_cfg || in.op() == Opcode::lw_cfg) {
      cfg[{in.mapping.core, in.op()}] = i;
      continue;
    }
    int kind;
    Opcode c;
    if (in.op() == Opcode::lda_mov) kind = 0, c = Opcode::lda_cfg;
    else if (in.op() == Opcode::ldw_mov) kind = 1, c = Opcode::ldw_cfg;
    else if (in.op() == Opcode::lw_mov && in.get(Param::SS) != 0) kind = 1, c = Opcode::lw_cfg;
    else continue;
    auto it = cfg.find({in.mapping.core, c});
    if (it == cfg.end()) continue;  // the check refuses it anyway
    const isa::Instruction& conf = program.instructions[it->second];
    loads[{kind, in.get(Param::STaddr), as_vector(in.list(kind == 0 ? Param::Tile : Param::Wsize)), conf.get(Param::DF),
           kind == 0 ? as_vector(conf.list(Param::STile)) : std::vector<int32_t>{}}][in.mapping.core]
        .push_back(i);
  }
  isa::Program merged = program;
  for (const auto& [key, per_core] : loads)
    for (size_t k = 0;; ++k) {
      std::vector<size_t> members;
      for (const auto& [core, list] : per_core)
        if (k < list.size()) members.push_back(list[k]);
      if (members.empty()) break;
      if (members.size() < 2) continue;
      ++out.groups;
      out.members += int(members.size());
      for (size_t i : members) merged.instructions[i] = member_of(program.instructions[i], out.groups, int64_t(members.size()));
    }
  if (out.groups == 0) return out;
  const isa::CheckReport report = isa::check_program(merged, 1);
  if (!report.ok()) {
    out.refused = report.diagnostics.front().message;
    out.groups = out.members = 0;
    return out;
  }
  program = std::move(merged);
  return out;
}

}  // namespace cct::assembler
