// Queue tokens: which earlier instruction each instruction waits for.
//
// Dependencies come from memory (read-after-write, write-after-read, and
// write-after-write on data nobody has read yet, per byte range of L2, WL0
// and the two DRAM regions) and from three scheduling rules of the original
// tool chain: a DRAM transfer placed in a workload, and the first compute
// instruction of a workload, wait for the last compute instruction of the
// previous workload, DRAM transfers keep their program
// order among themselves (one DRAM channel), and the control queue releases
// the first loads and receives the last store and the last core-to-core send. A dependency becomes a token
// unless it is already implied: per producer queue only the latest producer
// counts, and a producer already released to the consumer's queue is dropped.
// Channel order and control tokens are always kept otherwise (except the
// channel predecessor of a store, an ordinary dependency). The Wl0 dialect
// also drops a producer the consumer knows to be complete through the tokens
// of its queue predecessor and of its own producers (for the previous
// workload's end: only through the tokens chosen for the consumer); the
// Wl1 dialect does not, and there tile weight loads (L2 -> WL0) are not
// registered as readers of L2.
#include <algorithm>
#include <array>

#include "asm/builder.hpp"

namespace cct::assembler {
namespace {

using isa::Queue;
constexpr int kQ = isa::kQueueCount;

int qi(Queue q) { return static_cast<int>(q); }

// Interval map of one address space: for every byte range, the last writer
// and the readers since that write.
class SpaceState {
 public:
  struct Segment {
    int64_t lo, hi;
    int64_t writer;  // -1: never written
    std::vector<int64_t> readers;
  };

  template <class F>
  void for_overlapping(int64_t lo, int64_t hi, F&& f) const {
    auto it = first_at_or_after(lo);
    for (; it != segs_.end() && it->lo < hi; ++it)
      if (it->hi > lo) f(*it);
  }

  // Splits segments at lo and hi, fills gaps, and calls f on every segment of [lo, hi).
  template <class F>
  void update(int64_t lo, int64_t hi, F&& f) {
    if (lo >= hi) return;
    split_at(lo);
    split_at(hi);
    std::vector<Segment> gaps;
    int64_t cur = lo;
    for (auto it = first_at_or_after(lo); it != segs_.end() && it->lo < hi; ++it) {
      if (it->lo > cur) gaps.push_back({cur, it->lo, -1, {}});
      cur = std::max(cur, it->hi);
    }
    if (cur < hi) gaps.push_back({cur, hi, -1, {}});
    for (auto& g : gaps) {
      auto pos = std::lower_bound(segs_.begin(), segs_.end(), g.lo, [](const Segment& s, int64_t v) { return s.lo < v; });
      segs_.insert(pos, std::move(g));
    }
    for (auto it = first_at_or_after(lo); it != segs_.end() && it->lo < hi; ++it) f(*it);
  }

 private:
  std::vector<Segment>::const_iterator first_at_or_after(int64_t lo) const {
    // The first segment whose hi > lo.
    auto it = std::lower_bound(segs_.begin(), segs_.end(), lo, [](const Segment& s, int64_t v) { return s.hi <= v; });
    return it;
  }
  std::vector<Segment>::iterator first_at_or_after(int64_t lo) {
    return std::lower_bound(segs_.begin(), segs_.end(), lo, [](const Segment& s, int64_t v) { return s.hi <= v; });
  }
  void split_at(int64_t x) {
    auto it = first_at_or_after(x);
    if (it != segs_.end() && it->lo < x && x < it->hi) {
      Segment right{x, it->hi, it->writer, it->readers};
      it->hi = x;
      segs_.insert(it + 1, std::move(right));
    }
  }
  std::vector<Segment> segs_;  // sorted, disjoint
};

// Compute-to-compute conflicts compare activation ranges with inclusive ends
// (a tensor ending where the next begins still orders the two); they live in
// an extra space that only compute instructions touch.
constexpr int kL2Inclusive = static_cast<int>(Space::Count);
constexpr int kSpaces = kL2Inclusive + 1;

bool is_dram_transfer(Kind k) {
  return k == Kind::LoadAct || k == Kind::LoadWeights || k == Kind::LoadWl0Dram || k == Kind::Store;
}

struct Dep {
  size_t producer;
  Token::Why why;
};

// Memory dependencies of every instruction with tokens, in program order.
std::vector<std::vector<Dep>> memory_deps(const std::vector<Built>& prog, const std::vector<size_t>& order,
                                          const TokenRules& rules) {
  std::array<SpaceState, kSpaces> spaces;
  std::vector<std::vector<Dep>> out(prog.size());
  std::vector<Range> reads, writes;
  std::vector<int> rspace, wspace;
  for (size_t j : order) {
    const Meta& m = prog[j].meta;
    auto& found = out[j];
    auto add = [&](int64_t p, Token::Why w) { found.push_back({static_cast<size_t>(p), w}); };
    auto collect = [&](int sp, const Range& r, bool is_write) {
      spaces[sp].for_overlapping(r.lo, r.hi, [&](const SpaceState::Segment& s) {
        if (!is_write) {
          if (s.writer >= 0) add(s.writer, Token::Raw);
        } else {
          if (s.writer >= 0 && s.readers.empty()) add(s.writer, Token::Waw);
          for (int64_t rd : s.readers) add(rd, Token::War);
        }
      });
    };
    const bool inclusive = m.kind == Kind::Compute;
    for (const Range& r : m.reads) {
      collect(static_cast<int>(r.space), r, false);
      if (inclusive && r.space == Space::L2) collect(kL2Inclusive, {r.space, r.lo, r.hi + 1}, false);
    }
    for (const Range& r : m.writes) {
      collect(static_cast<int>(r.space), r, true);
      if (inclusive && r.space == Space::L2) collect(kL2Inclusive, {r.space, r.lo, r.hi + 1}, true);
    }
    auto mark = [&](int sp, const Range& r, bool is_write) {
      spaces[sp].update(r.lo, r.hi, [&](SpaceState::Segment& s) {
        if (is_write) {
          s.writer = static_cast<int64_t>(j);
          s.readers.clear();
        } else {
          s.readers.push_back(static_cast<int64_t>(j));
        }
      });
    };
    for (const Range& r : m.reads) {
      if (rules.tile_weight_reads_untracked && m.kind == Kind::LoadWl0Tile && r.space == Space::L2) continue;
      mark(static_cast<int>(r.space), r, false);
      if (inclusive && r.space == Space::L2) mark(kL2Inclusive, {r.space, r.lo, r.hi + 1}, false);
    }
    for (const Range& r : m.writes) {
      mark(static_cast<int>(r.space), r, true);
      if (inclusive && r.space == Space::L2) mark(kL2Inclusive, {r.space, r.lo, r.hi + 1}, true);
    }
  }
  return out;
}

// The scheduling rules that are not about memory.
std::vector<std::vector<Dep>> rule_deps(const std::vector<Built>& prog, const std::vector<size_t>& order,
                                        const TokenRules& rules) {
  std::vector<std::vector<Dep>> out(prog.size());
  // Workloads in order of first appearance, and the last compute instruction of each.
  std::vector<int32_t> wkl_order;
  std::vector<std::pair<int32_t, size_t>> last_compute;  // (wkl, index), in wkl_order order
  auto wkl_pos = [&](int32_t w) -> int {
    for (size_t k = 0; k < wkl_order.size(); ++k)
      if (wkl_order[k] == w) return static_cast<int>(k);
    return -1;
  };
  std::vector<int64_t> last_compute_of;  // by position in wkl_order
  for (size_t j : order) {
    int32_t w = prog[j].inst.mapping.wkl;
    if (wkl_pos(w) < 0) {
      wkl_order.push_back(w);
      last_compute_of.push_back(-1);
    }
    if (prog[j].meta.kind == Kind::Compute) last_compute_of[wkl_pos(w)] = static_cast<int64_t>(j);
  }
  int64_t ct_st = -1, ct_bc_last = -1, ct_ed = -1, last_store = -1, last_send = -1;
  for (size_t j : order) {
    auto op = prog[j].inst.op();
    if (op == isa::Opcode::ct_st) ct_st = static_cast<int64_t>(j);
    if (op == isa::Opcode::ct_bc) ct_bc_last = static_cast<int64_t>(j);
    if (op == isa::Opcode::ct_ed) ct_ed = static_cast<int64_t>(j);
    if (prog[j].meta.kind == Kind::Store) last_store = static_cast<int64_t>(j);
    if (prog[j].meta.kind == Kind::Send) last_send = static_cast<int64_t>(j);
  }
  std::array<bool, kQ> seen{};
  std::vector<bool> compute_seen(wkl_order.size(), false);
  int64_t last_dram = -1;
  for (size_t j : order) {
    const Built& b = prog[j];
    Queue q = b.inst.queue();
    if (q != Queue::CT && !seen[qi(q)]) {
      seen[qi(q)] = true;
      if (rules.control_to_all) {
        if (q == Queue::LW && ct_st >= 0) out[j].push_back({static_cast<size_t>(ct_st), Token::Control});
        if ((q == Queue::LD || q == Queue::VP || q == Queue::PE) && ct_bc_last >= 0)
          out[j].push_back({static_cast<size_t>(ct_bc_last), Token::Control});
      } else if (q == Queue::LD && ct_bc_last >= 0) {
        out[j].push_back({static_cast<size_t>(ct_bc_last), Token::Control});
      }
    }
    // DRAM transfers and the first compute instruction of a workload wait for
    // the last compute instruction of the previous workload.
    bool first_compute = false;
    if (b.meta.kind == Kind::Compute) {
      int p = wkl_pos(b.inst.mapping.wkl);
      first_compute = !compute_seen[p];
      compute_seen[p] = true;
    }
    if (is_dram_transfer(b.meta.kind) || first_compute) {
      int p = wkl_pos(b.inst.mapping.wkl);
      if (p > 0 && last_compute_of[p - 1] >= 0 && static_cast<size_t>(last_compute_of[p - 1]) < j)
        out[j].push_back({static_cast<size_t>(last_compute_of[p - 1]), Token::PrevWorkload});
    }
    if (is_dram_transfer(b.meta.kind)) {
      if (last_dram >= 0) out[j].push_back({static_cast<size_t>(last_dram), Token::Channel});
      last_dram = static_cast<int64_t>(j);
    }
  }
  // The program ends when its outputs have left the core: the last store and the last send.
  if (ct_ed >= 0 && last_store >= 0) out[ct_ed].push_back({static_cast<size_t>(last_store), Token::Control});
  if (ct_ed >= 0 && last_send >= 0) out[ct_ed].push_back({static_cast<size_t>(last_send), Token::Control});
  return out;
}

bool is_forced(Token::Why w) { return w == Token::Channel || w == Token::Control; }

}  // namespace

std::vector<Token> assign_tokens(std::vector<Built>& prog, const TokenRules& rules) {
  std::vector<size_t> order;
  for (size_t j = 0; j < prog.size(); ++j) {
    if (prog[j].inst.info().has_deps) {
      order.push_back(j);
      prog[j].inst.prev.clear();
      prog[j].inst.next.clear();
    }
  }
  auto mem = memory_deps(prog, order, rules);
  auto extra = rule_deps(prog, order, rules);

  using Clock = std::array<int64_t, kQ>;  // per queue: latest instruction known complete
  Clock none;
  none.fill(-1);
  std::vector<Clock> known(prog.size(), none);
  std::array<int64_t, kQ> last_in_queue;
  last_in_queue.fill(-1);
  std::array<std::array<int64_t, kQ>, kQ> paired;  // [producer queue][consumer queue]: latest producer paired
  for (auto& row : paired) row.fill(-1);

  auto self_queue = [&](Queue q) { return rules.same_queue_tokens && (q == Queue::PE || q == Queue::VP); };

  std::vector<Token> tokens;
  for (size_t j : order) {
    Queue qj = prog[j].inst.queue();
    Clock vc = none;
    if (last_in_queue[qi(qj)] >= 0) {
      vc = known[last_in_queue[qi(qj)]];
      // In-order queues: the predecessor completed before j starts. PE and VP
      // may overlap consecutive instructions when same-queue tokens exist.
      if (!self_queue(qj)) vc[qi(qj)] = std::max(vc[qi(qj)], last_in_queue[qi(qj)]);
    }
    // Latest candidate per producer queue, separately for forced and reducible dependencies.
    std::array<int64_t, kQ> forced, other;
    std::array<Token::Why, kQ> forced_why{}, other_why{};
    forced.fill(-1);
    other.fill(-1);
    auto consider = [&](const Dep& d) {
      Queue qp = prog[d.producer].inst.queue();
      if (qp == qj && !self_queue(qj)) return;
      // A store's channel predecessor is an ordinary dependency.
      const bool f = is_forced(d.why) && !(d.why == Token::Channel && prog[j].meta.kind == Kind::Store);
      auto& slot = f ? forced : other;
      auto& why = f ? forced_why : other_why;
      if (static_cast<int64_t>(d.producer) > slot[qi(qp)]) {
        slot[qi(qp)] = static_cast<int64_t>(d.producer);
        why[qi(qp)] = d.why;
      }
    };
    for (const Dep& d : mem[j]) consider(d);
    for (const Dep& d : extra[j]) consider(d);

    std::array<int64_t, kQ> chosen;
    chosen.fill(-1);
    std::array<Token::Why, kQ> chosen_why{};
    auto take = [&](int q, int64_t i, Token::Why why) {
      paired[q][qi(qj)] = i;
      chosen[q] = i;
      chosen_why[q] = why;
      for (int k = 0; k < kQ; ++k) vc[k] = std::max(vc[k], known[i][k]);
      vc[q] = std::max(vc[q], i);
    };
    auto by_latest = [](const std::array<int64_t, kQ>& slot) {
      std::vector<int> qs;
      for (int q = 0; q < kQ; ++q)
        if (slot[q] >= 0) qs.push_back(q);
      std::sort(qs.begin(), qs.end(), [&](int a, int b) { return slot[a] > slot[b]; });
      return qs;
    };
    // A ct_hw (or ct_hs) after the ct_bc that releases the first loads takes
    // the control token's place: the control queue is in order, so waiting
    // for it covers ct_bc, and one token per queue could not carry both.
    // Only the control queue: elsewhere the reference programs' tokens stay.
    if (const int q = qi(Queue::CT); forced[q] >= 0 && other[q] > forced[q]) {
      forced[q] = other[q], forced_why[q] = other_why[q];
      other[q] = -1;
    }
    for (int q : by_latest(forced)) {
      if (paired[q][qi(qj)] >= forced[q]) continue;
      take(q, forced[q], forced_why[q]);
    }
    for (int q : by_latest(other)) {
      int64_t i = other[q];
      if ((q == qi(qj) && self_queue(qj)) || rules.pairwise_only) {
        if (paired[q][qi(qj)] >= i) continue;
      } else if (paired[q][qi(qj)] >= i) {
        continue;
      } else if (other_why[q] == Token::PrevWorkload) {
        // Only what the tokens already chosen for j make known covers the
        // previous workload's end, not what j's queue predecessor knew.
        Clock fresh = none;
        for (int p = 0; p < kQ; ++p)
          if (chosen[p] >= 0) {
            for (int r = 0; r < kQ; ++r) fresh[r] = std::max(fresh[r], known[chosen[p]][r]);
            fresh[p] = std::max(fresh[p], chosen[p]);
          }
        if (fresh[q] >= i) continue;
      } else if (vc[q] >= i) {
        continue;
      }
      if (chosen[q] >= 0) continue;
      take(q, i, other_why[q]);
    }
    for (int q = 0; q < kQ; ++q)
      if (chosen[q] >= 0) tokens.push_back({static_cast<size_t>(chosen[q]), j, chosen_why[q]});
    known[j] = vc;
    last_in_queue[qi(qj)] = static_cast<int64_t>(j);
  }

  // Prev_Insts order.
  std::vector<std::vector<const Token*>> by_consumer(prog.size()), by_producer(prog.size());
  for (const Token& t : tokens) {
    by_consumer[t.consumer].push_back(&t);
    by_producer[t.producer].push_back(&t);
  }
  static const Queue kAscRank[] = {Queue::CT, Queue::LD, Queue::LW, Queue::ST, Queue::DT,
                                   Queue::PE, Queue::VP, Queue::SI, Queue::SO};
  static const Queue kDescRank[] = {Queue::CT, Queue::PE, Queue::VP, Queue::LW, Queue::LD,
                                    Queue::ST, Queue::DT, Queue::SI, Queue::SO};
  auto rank_of = [](const Queue* table, Queue q) {
    for (int k = 0; k < kQ; ++k)
      if (table[k] == q) return k;
    return kQ;
  };
  for (size_t j : order) {
    auto& lst = by_consumer[j];
    auto qp = [&](const Token* t) { return prog[t->producer].inst.queue(); };
    auto wp = [&](const Token* t) { return prog[t->producer].inst.mapping.wkl; };
    if (!rules.descending_order) {
      std::stable_sort(lst.begin(), lst.end(), [&](const Token* a, const Token* b) {
        if (wp(a) != wp(b)) return wp(a) < wp(b);
        return rank_of(kAscRank, qp(a)) < rank_of(kAscRank, qp(b));
      });
    } else {
      // Channel, control and previous-workload tokens first, in that order.
      auto head_rank = [](const Token* t) { return t->why == Token::Channel ? 0 : t->why == Token::Control ? 1 : 2; };
      std::vector<const Token*> head, rest, weights;
      for (const Token* t : lst) (is_forced(t->why) || t->why == Token::PrevWorkload ? head : rest).push_back(t);
      std::stable_sort(head.begin(), head.end(),
                       [&](const Token* a, const Token* b) { return head_rank(a) < head_rank(b); });
      if (prog[j].inst.queue() == Queue::PE) {
        std::vector<const Token*> keep;
        for (const Token* t : rest) (qp(t) == Queue::LW ? weights : keep).push_back(t);
        rest = keep;
      }
      std::stable_sort(rest.begin(), rest.end(), [&](const Token* a, const Token* b) {
        if (wp(a) != wp(b)) return wp(a) > wp(b);
        return rank_of(kDescRank, qp(a)) < rank_of(kDescRank, qp(b));
      });
      // Weights come second for the MAC array, or right after an input brought by a DMA.
      if (!weights.empty()) {
        size_t at = std::min<size_t>(1, rest.size());
        for (size_t n = 0; n < rest.size(); ++n)
          if (rest[n]->why == Token::Raw && (qp(rest[n]) == Queue::LD || qp(rest[n]) == Queue::DT)) {
            at = n + 1;
            break;
          }
        rest.insert(rest.begin() + static_cast<std::ptrdiff_t>(at), weights.begin(), weights.end());
      }
      lst = head;
      lst.insert(lst.end(), rest.begin(), rest.end());
    }
    for (const Token* t : lst) prog[j].inst.prev.push_back(qp(t));
  }
  for (size_t i : order) {
    auto& lst = by_producer[i];
    std::sort(lst.begin(), lst.end(), [](const Token* a, const Token* b) { return a->consumer < b->consumer; });
    for (const Token* t : lst) prog[i].inst.next.push_back(prog[t->consumer].inst.queue());
  }
  return tokens;
}

}  // namespace cct::assembler
