// asm --check: static verification of a program against an architecture.
#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <utility>

#include "asm/asm.hpp"
#include "asm/dram_layout.hpp"
#include "footprint/footprint.hpp"
#include "isa/multicast.hpp"

namespace cct::assembler {
namespace {

using isa::Instruction;
using isa::Opcode;
using isa::Param;
using isa::Queue;

class Checker {
 public:
  Checker(const isa::Program& p, size_t max) : prog_(p), max_(max) {}

  isa::CheckReport run() {
    // Deadlocks and leftover tokens: the untimed run of lib/isa.
    report_ = isa::check_program(prog_, max_);
    pair_tokens();
    for (size_t i = 0; i < prog_.size(); ++i) check_instruction(i);
    std::stable_sort(report_.diagnostics.begin(), report_.diagnostics.end(),
                     [](const isa::Diagnostic& a, const isa::Diagnostic& b) { return a.index < b.index; });
    return std::move(report_);
  }

 private:
  void add(bool error, size_t index, std::string msg) {
    if (report_.diagnostics.size() < max_) report_.diagnostics.push_back({error, index, std::move(msg)});
  }
  static std::string line_of(size_t i) { return "line " + std::to_string(i + 1); }

  // FIFO pairing of pushes and pops per core and queue pair: every pop must
  // take a token pushed earlier in the program.
  void pair_tokens() {
    constexpr int kQ = isa::kQueueCount;
    struct Fifo {
      std::vector<size_t> pushes;
      size_t popped = 0;
    };
    std::map<int32_t, std::array<std::array<Fifo, kQ>, kQ>> cores;
    // Pushes are recorded in program order, so the k-th pop takes the k-th push.
    for (size_t i = 0; i < prog_.size(); ++i) {
      const Instruction& in = prog_.instructions[i];
      auto& c = cores[in.mapping.core];
      for (Queue y : in.next) c[static_cast<int>(in.queue())][static_cast<int>(y)].pushes.push_back(i);
    }
    for (size_t i = 0; i < prog_.size(); ++i) {
      const Instruction& in = prog_.instructions[i];
      auto& c = cores[in.mapping.core];
      for (Queue x : in.prev) {
        Fifo& f = c[static_cast<int>(x)][static_cast<int>(in.queue())];
        std::string pair = std::string(isa::queue_name(x)) + "->" + std::string(isa::queue_name(in.queue()));
        if (f.popped >= f.pushes.size()) {
          std::string last = f.pushes.empty() ? "no instruction pushes one"
                                              : "the last push is at " + line_of(f.pushes.back()) + " and is taken";
          add(true, i, std::string(in.mnemonic()) + " pops a " + pair + " token without a matching push (" + last + ")");
        } else {
          size_t p = f.pushes[f.popped];
          if (p > i)
            add(true, i, std::string(in.mnemonic()) + " pops the " + pair + " token pushed at " + line_of(p) +
                             ", which comes after it");
        }
        ++f.popped;
      }
    }
  }

  // The weight-load configurations in force: SWsize names the kernel of every
  // Wsize (the footprint planner checks the rest of each instruction).
  void check_instruction(size_t i) {
    const Instruction& in = prog_.instructions[i];
    if (in.op() == Opcode::ldw_cfg || in.op() == Opcode::lw_cfg) {
      cfg_[{in.mapping.core, in.op() == Opcode::lw_cfg}] = i;
      return;
    }
    const Opcode op = isa::unicast_load_of(in.op());  // a multicast member is checked as its load
    if (op != Opcode::ldw_mov && op != Opcode::lw_mov) return;
    auto it = cfg_.find({in.mapping.core, op == Opcode::lw_mov});
    if (it == cfg_.end()) return;  // the planner refused it
    auto w = in.list(Param::Wsize);
    auto c = prog_.instructions[it->second].list(Param::SWsize);
    if (!std::equal(w.begin() + 1, w.end(), c.begin(), c.end()))
      add(true, i, std::string(in.mnemonic()) + ": Wsize does not match " +
                       std::string(prog_.instructions[it->second].mnemonic()) + " SWsize (" + line_of(it->second) + ")");
  }

  const isa::Program& prog_;
  size_t max_;
  isa::CheckReport report_;
  std::map<std::pair<int32_t, bool>, size_t> cfg_;  // (core, lw_cfg?) -> the latest ldw_cfg / lw_cfg
};

}  // namespace

isa::CheckReport check(const isa::Program& program, const arch::Architecture& arch, const std::string& file,
                       size_t max_diagnostics, const DramLayout* dram) {
  // Addresses, sizes, configurations and weight records: the footprint
  // rules of the functional model, an input error at the first problem.
  footprint::Options o;
  o.file = file;
  if (dram) o.dram_weight_bytes = dram->weight_bytes, o.dram_activation_bytes = dram->activation_bytes;
  footprint::check_program(arch, program, o);
  // Multicast loads run only where the NoC multicasts, as in zebusim.
  if (!arch.noc.multicast)
    for (size_t i = 0; i < program.size(); ++i)
      if (isa::is_multicast_load(program.instructions[i].op()))
        throw_input_error(at_line(file, long(i) + 1, isa::multicast_unsupported(program.instructions[i], arch.name)));
  return Checker(program, max_diagnostics).run();
}

}  // namespace cct::assembler
