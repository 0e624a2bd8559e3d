#include "isa/check.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <map>

#include "isa/multicast.hpp"
#include "support/error.hpp"

namespace cct::isa {

size_t CheckReport::error_count() const {
  return static_cast<size_t>(std::count_if(diagnostics.begin(), diagnostics.end(), [](const auto& d) { return d.error; }));
}

std::string CheckReport::text(const std::string& file) const {
  std::string out;
  for (const Diagnostic& d : diagnostics)
    out += at_line(file, static_cast<long>(d.index + 1), std::string(d.error ? "error: " : "warning: ") + d.message) +
           "\n";
  return out;
}

namespace {

constexpr int kQ = kQueueCount;

class Runner {
 public:
  Runner(const Program& p, size_t max_diagnostics) : prog_(p), max_(max_diagnostics) {}

  CheckReport run() {
    build_queues();
    groups_ = group_multicast_loads(prog_, [&](size_t i, const std::string& m) { add(true, i, m); });
    check_transfer_ends();
    check_host_steps();
    execute();
    report_stuck();
    report_leftovers();
    return std::move(report_);
  }

 private:
  struct Core {
    int32_t id = 0;
    std::array<std::vector<uint32_t>, kQ> queue;  // instruction indices in program order
    std::array<size_t, kQ> head{};
    std::array<std::array<int64_t, kQ>, kQ> tokens{};  // tokens[X][Y]: pushed by X for Y, not yet popped
  };

  void add(bool error, size_t index, std::string message) {
    if (report_.diagnostics.size() < max_) report_.diagnostics.push_back({error, index, std::move(message)});
  }

  std::string describe(size_t index) const {
    const Instruction& inst = prog_.instructions[index];
    return std::string(inst.mnemonic()) + " on core " + std::to_string(inst.mapping.core);
  }

  void build_queues() {
    for (const Instruction& inst : prog_.instructions) core_index_.emplace(inst.mapping.core, 0);
    int n = 0;
    for (auto& [id, idx] : core_index_) idx = n++;
    cores_.resize(static_cast<size_t>(n));
    for (auto& [id, idx] : core_index_) cores_[static_cast<size_t>(idx)].id = id;
    for (size_t i = 0; i < prog_.instructions.size(); ++i) {
      const Instruction& inst = prog_.instructions[i];
      cores_[static_cast<size_t>(core_index_[inst.mapping.core])].queue[static_cast<int>(inst.queue())].push_back(
          static_cast<uint32_t>(i));
      // Such lists are not written (the syntax has no place for them), so they would silently vanish.
      if (!inst.info().has_deps && (!inst.prev.empty() || !inst.next.empty()))
        add(true, i, describe(i) + ": a configuration instruction carries no Prev_Insts/Next_Insts tokens");
    }
  }

  // The other end of a transfer must be a different, existing core.
  void check_transfer_ends() {
    for (size_t i = 0; i < prog_.instructions.size(); ++i) {
      const Instruction& inst = prog_.instructions[i];
      Param peer;
      if (inst.op() == Opcode::so_mov) {
        peer = Param::DCORE;
      } else if (inst.op() == Opcode::si_mov) {
        peer = Param::SCORE;
      } else {
        continue;
      }
      int64_t other = inst.get(peer);
      if (other == inst.mapping.core) {
        add(true, i, describe(i) + ": " + std::string(param_name(peer)) + " names its own core");
      } else if (other < INT32_MIN || other > INT32_MAX || !core_index_.count(static_cast<int32_t>(other))) {
        add(true, i,
            describe(i) + ": " + std::string(param_name(peer)) + " " + std::to_string(other) +
                " is a core without instructions in this program");
      }
    }
  }

  // Host steps: every TAG with a ct_hs has a ct_hw (which gives the step's
  // work), and every ct_hw of a TAG gives the same work.
  void check_host_steps() {
    std::map<int64_t, size_t> first_wait;
    for (size_t i = 0; i < prog_.instructions.size(); ++i) {
      const Instruction& inst = prog_.instructions[i];
      if (inst.op() == Opcode::ct_hs) ++host_signals_[inst.get(Param::TAG)];
      if (inst.op() != Opcode::ct_hw) continue;
      if (inst.get(Param::HOPS) < 0 || inst.get(Param::HBYTES) < 0)
        add(true, i, describe(i) + ": HOPS and HBYTES must not be negative");
      auto [it, fresh] = first_wait.try_emplace(inst.get(Param::TAG), i);
      const Instruction& f = prog_.instructions[it->second];
      if (!fresh && (f.get(Param::HOPS) != inst.get(Param::HOPS) || f.get(Param::HBYTES) != inst.get(Param::HBYTES)))
        add(true, i,
            describe(i) + ": host step " + std::to_string(inst.get(Param::TAG)) +
                " has other HOPS/HBYTES than its ct_hw at instruction " + std::to_string(it->second + 1));
    }
    for (const auto& [tag, n] : host_signals_)
      if (!first_wait.count(tag))
        for (size_t i = 0; i < prog_.instructions.size(); ++i)
          if (prog_.instructions[i].op() == Opcode::ct_hs && prog_.instructions[i].get(Param::TAG) == tag) {
            add(true, i, describe(i) + ": host step " + std::to_string(tag) + " has no ct_hw (nothing waits for it)");
            break;
          }
  }
  // A ct_hw waits for the host, which starts once every ct_hs of its TAG ran.
  bool host_step_ready(const Instruction& inst) {
    auto it = host_signals_.find(inst.get(Param::TAG));
    return it == host_signals_.end() || host_fired_[inst.get(Param::TAG)] >= it->second;
  }

  Core* core_by_id(int64_t id) {
    if (id < INT32_MIN || id > INT32_MAX) return nullptr;
    auto it = core_index_.find(static_cast<int32_t>(id));
    return it == core_index_.end() ? nullptr : &cores_[static_cast<size_t>(it->second)];
  }

  // Index of the head instruction of a queue, or -1 when the queue is done.
  int64_t head_of(const Core& c, int q) const {
    return c.head[q] < c.queue[q].size() ? static_cast<int64_t>(c.queue[q][c.head[q]]) : -1;
  }

  bool tokens_ready(const Core& c, const Instruction& inst) const {
    const int y = static_cast<int>(inst.queue());
    std::array<int, kQ> need{};
    for (Queue x : inst.prev) ++need[static_cast<int>(x)];
    for (int x = 0; x < kQ; ++x)
      if (need[x] > c.tokens[x][y]) return false;
    return true;
  }

  void fire(Core& c, size_t index) {
    const Instruction& inst = prog_.instructions[index];
    const int q = static_cast<int>(inst.queue());
    for (Queue x : inst.prev) --c.tokens[static_cast<int>(x)][q];
    for (Queue y : inst.next) {
      ++c.tokens[q][static_cast<int>(y)];
      work_.push_back({&c, static_cast<int>(y)});
    }
    ++c.head[q];
    ++fired_;
  }

  // A send and a receive that name each other (cores and tag) meet when both
  // are at the head of their queues with their tokens; they fire together.
  bool try_transfer(Core& c, int q, size_t index) {
    const Instruction& inst = prog_.instructions[index];
    const bool sending = inst.op() == Opcode::so_mov;
    Core* other = core_by_id(inst.get(sending ? Param::DCORE : Param::SCORE));
    if (!other || other == &c) return false;
    const int other_q = static_cast<int>(sending ? Queue::SI : Queue::SO);
    int64_t peer = head_of(*other, other_q);
    if (peer < 0) return false;
    const Instruction& p = prog_.instructions[static_cast<size_t>(peer)];
    const Opcode expected = sending ? Opcode::si_mov : Opcode::so_mov;
    if (p.op() != expected || p.get(sending ? Param::SCORE : Param::DCORE) != c.id ||
        p.get(Param::TAG) != inst.get(Param::TAG))
      return false;
    if (!tokens_ready(*other, p)) return false;
    auto tile = inst.list(Param::Tile);
    auto peer_tile = p.list(Param::Tile);
    if (!std::equal(tile.begin(), tile.end(), peer_tile.begin(), peer_tile.end()))
      add(true, index,
          describe(index) + ": its Tile differs from that of the matching " + std::string(p.mnemonic()) +
              " (instruction " + std::to_string(peer + 1) + ")");
    fire(c, index);
    fire(*other, static_cast<size_t>(peer));
    work_.push_back({other, other_q});
    return true;
  }

  // A multicast group fires when every member is at the head of its queue
  // with its tokens (one DRAM read for all; formats/ISA_Format.md 5b).
  bool try_group(size_t index) {
    const MulticastGroup& g = groups_.groups[size_t(groups_.group_of[index])];
    std::vector<Core*> at;
    for (uint32_t m : g.members) {
      const Instruction& inst = prog_.instructions[m];
      Core* c = core_by_id(inst.mapping.core);
      if (!c || head_of(*c, static_cast<int>(inst.queue())) != int64_t(m) || !tokens_ready(*c, inst)) return false;
      at.push_back(c);
    }
    for (size_t k = 0; k < g.members.size(); ++k) {
      fire(*at[k], g.members[k]);
      work_.push_back({at[k], static_cast<int>(prog_.instructions[g.members[k]].queue())});
    }
    return true;
  }

  void execute() {
    for (auto& c : cores_)
      for (int q = 0; q < kQ; ++q) work_.push_back({&c, q});
    while (!work_.empty()) {
      auto [c, q] = work_.front();
      work_.pop_front();
      for (;;) {
        int64_t head = head_of(*c, q);
        if (head < 0) break;
        const Instruction& inst = prog_.instructions[static_cast<size_t>(head)];
        if (!tokens_ready(*c, inst)) break;
        if (inst.op() == Opcode::so_mov || inst.op() == Opcode::si_mov) {
          if (!try_transfer(*c, q, static_cast<size_t>(head))) break;
          continue;
        }
        if (is_multicast_load(inst.op())) {
          if (!try_group(static_cast<size_t>(head))) break;
          continue;
        }
        if (inst.op() == Opcode::ct_hw && !host_step_ready(inst)) break;
        fire(*c, static_cast<size_t>(head));
        if (inst.op() == Opcode::ct_hs) {
          ++host_fired_[inst.get(Param::TAG)];
          for (auto& other : cores_) work_.push_back({&other, static_cast<int>(Queue::CT)});
        }
      }
    }
  }

  void report_stuck() {
    if (fired_ == prog_.instructions.size()) return;
    for (auto& c : cores_) {
      for (int q = 0; q < kQ; ++q) {
        int64_t head = head_of(c, q);
        if (head < 0) continue;
        const Instruction& inst = prog_.instructions[static_cast<size_t>(head)];
        std::string why;
        std::array<int, kQ> need{};
        for (Queue x : inst.prev) ++need[static_cast<int>(x)];
        for (int x = 0; x < kQ; ++x) {
          if (need[x] > c.tokens[x][q]) {
            if (!why.empty()) why += ", ";
            why += std::to_string(need[x]) + " " + std::string(queue_name(static_cast<Queue>(x))) + "->" +
                   std::string(queue_name(static_cast<Queue>(q))) + " token(s), " +
                   std::to_string(c.tokens[x][q]) + " available";
          }
        }
        if (why.empty() && inst.op() == Opcode::ct_hw)
          why = "host step " + std::to_string(inst.get(Param::TAG)) + ", some ct_hs of which never run";
        if (why.empty() && is_multicast_load(inst.op()))
          why = "the other members of its multicast group (TAG " + std::to_string(inst.get(Param::TAG)) +
                "), some of which never reach the head of their queue with their tokens";
        if (why.empty()) why = "its transfer partner, which never reaches the head of its queue with its tokens";
        size_t left = c.queue[q].size() - c.head[q];
        add(true, static_cast<size_t>(head),
            "deadlock: " + describe(static_cast<size_t>(head)) + " (queue " +
                std::string(queue_name(static_cast<Queue>(q))) + ", " + std::to_string(left) +
                " instruction(s) left) waits for " + why);
      }
    }
  }

  void report_leftovers() {
    if (fired_ != prog_.instructions.size()) return;  // leftovers are meaningless after a deadlock
    for (auto& c : cores_) {
      for (int x = 0; x < kQ; ++x) {
        for (int y = 0; y < kQ; ++y) {
          if (c.tokens[x][y] <= 0) continue;
          // Point at the last instruction of queue x, which pushed the last unused token.
          size_t last = c.queue[x].empty() ? 0 : c.queue[x].back();
          // An error: an unpopped token means some pop took a token meant for
          // a later one (FIFO counters), so an instruction may start before
          // the one it waits for. zebusim refuses such a program too.
          add(true, last,
              "core " + std::to_string(c.id) + ": " + std::to_string(c.tokens[x][y]) + " " +
                  std::string(queue_name(static_cast<Queue>(x))) + "->" +
                  std::string(queue_name(static_cast<Queue>(y))) + " token(s) pushed but never popped");
        }
      }
    }
  }

  struct Work {
    Core* core;
    int queue;
  };

  const Program& prog_;
  size_t max_;
  CheckReport report_;
  std::map<int32_t, int> core_index_;
  std::vector<Core> cores_;
  std::deque<Work> work_;
  size_t fired_ = 0;
  std::map<int64_t, int64_t> host_signals_, host_fired_;  // TAG -> ct_hs in the program / fired
  MulticastGroups groups_;
};

}  // namespace

CheckReport check_program(const Program& program, size_t max_diagnostics) {
  return Runner(program, max_diagnostics).run();
}

}  // namespace cct::isa
