// The execution engine: queue and token semantics, DRAM and link contention,
// core-to-core transfers, and the errors a program can cause.
#include <doctest/doctest.h>

#include <iterator>
#include <map>
#include <random>

#include "arch/arch.hpp"
#include "programs.hpp"
#include "isa/check.hpp"
#include "sim/sim.hpp"
#include "support/error.hpp"
#include "testing.hpp"
#include "timing/timing.hpp"

using namespace cct;
using cct::testing::deps;
using cct::testing::line;
using cct::testing::load;
using cct::testing::parse;
using cct::testing::store;
using cct::testing::transfer;

namespace {

sim::Result run(const std::string& text, const std::string& arch = "zebu-1core") {
  arch::Architecture a = arch::load_architecture(arch);
  sim::Options o;
  o.file = "t.jsonl";
  return sim::simulate(parse(text), a, o);
}

int64_t duration(const sim::Result& r, size_t i) { return r.timing[i].end - r.timing[i].start; }

std::string error_of(const std::string& text, const std::string& arch = "zebu-1core") {
  try {
    run(text, arch);
  } catch (const Error& e) {
    CHECK(e.code() == kExitInvalidInput);
    return e.what();
  }
  FAIL("no error");
  return "";
}

}  // namespace

TEST_CASE("a queue runs in order and tokens order queues") {
  // LD loads, then VP-free chain: the store waits for the load's token.
  std::string p = load(-1, 64, 8, 8, 0, "", "\"ST\"") + store(-1, 64, 8, 8, 0, "\"LD\"", "");
  auto r = run(p);
  arch::Architecture a = arch::load_architecture("zebu-1core");
  REQUIRE(r.timing.size() == 4);
  // Configurations take config_cycles and start at 0 on their queue.
  CHECK(r.timing[0].start == 0);
  CHECK(duration(r, 0) == int64_t(a.timing.config_cycles));
  // The load starts after its queue's configuration; the store after the load ended.
  CHECK(r.timing[1].start == r.timing[0].end);
  CHECK(r.timing[3].start == r.timing[1].end);
  int64_t bytes = timing::activation_bytes(a, 1, 64, 8, 8, 1);
  CHECK(duration(r, 1) == timing::dram_transfer_cycles(a, bytes, false));
  CHECK(duration(r, 3) == timing::dram_transfer_cycles(a, bytes, true));
  CHECK(r.stats.total_cycles == r.timing[3].end);
  CHECK(r.stats.dram_read_bytes == bytes);
  CHECK(r.stats.dram_write_bytes == bytes);
  CHECK(r.stats.energy.dram > 0);
  CHECK(r.stats.energy.static_ > 0);
}

// Cycle counts near int64's end used to wrap: a trace whose instruction ends
// before it starts. The clock stops at timing::kMaxCycles with an error.
TEST_CASE("a run past the cycle limit is refused, not wrapped") {
  // Four host steps of ~2.8e18 cycles each (at zebu-1core's host rates): the
  // sum passes int64.
  std::string p;
  for (int tag = 0; tag < 4; ++tag)
    p += line("ct_hw", "\"TAG\": " + std::to_string(tag) + ", \"HOPS\": 9000000000000000000, \"HBYTES\": 9000000000000000000, " +
                           deps("", ""));
  CHECK(error_of(p).find("t.jsonl: the run passes 4611686018427387904 cycles") != std::string::npos);
  // One such step alone still fits.
  auto r = run(line("ct_hw", "\"TAG\": 0, \"HOPS\": 9000000000000000000, \"HBYTES\": 0, " + deps("", "")));
  CHECK(r.timing[0].end > r.timing[0].start);
  // Durations saturate instead of overflowing.
  CHECK(timing::add_cycles(timing::kMaxCycles, timing::kMaxCycles) == timing::kMaxCycles);
  CHECK(timing::saturate_cycles(1e300) == timing::kMaxCycles);
  CHECK(timing::saturate_cycles(-5) == 0);
}

// Issue 20: asm --check warned and zebusim ran such a program; now both refuse it.
TEST_CASE("tokens pushed but never popped are refused, as asm --check does") {
  std::string p = load(-1, 64, 8, 8, 0, "", "\"ST\", \"PE\"") + store(-1, 64, 8, 8, 0, "\"LD\"", "");
  CHECK(error_of(p) == "t.jsonl:2: core 0: 1 LD->PE token(s) pushed but never popped");
  CHECK_FALSE(isa::check_program(parse(p)).ok());
}

TEST_CASE("identical input gives identical output") {
  std::string p = load(-1, 64, 8, 8, 0, "", "\"ST\"") + store(-1, 64, 8, 8, 0, "\"LD\"", "");
  auto a = run(p), b = run(p);
  CHECK(a.timing == b.timing);
  CHECK(a.stats.total_cycles == b.stats.total_cycles);
}

TEST_CASE("a load and a store sharing the DRAM channel slow each other") {
  // Alone: one load. Together: a load and a store with no token between them.
  auto alone = run(load(-1, 256, 32, 32, 0));
  auto both = run(load(-1, 256, 32, 32, 0) + store(-1, 256, 32, 32, 1 << 20));
  int64_t t_alone = duration(alone, 1);
  int64_t t_load = duration(both, 1), t_store = duration(both, 3);
  CHECK(t_load > t_alone);
  CHECK(t_store > t_alone);
  // Fair sharing of one channel: the pair needs about twice the streaming time.
  CHECK(double(std::max(t_load, t_store)) > 1.8 * double(t_alone - 20));
}

TEST_CASE("DRAM contention across cores of chip-64tops") {
  std::string one = load(0, 256, 64, 64, 0);
  std::string eight;
  for (int c = 0; c < 8; ++c) eight += load(c, 256, 64, 64, 0);
  auto alone = run(one, "chip-64tops");
  auto all = run(eight, "chip-64tops");
  CHECK(all.stats.cores_used == 8);
  CHECK(duration(all, 1) > duration(alone, 1));
  // Every core's load is slower than the lone one.
  for (size_t i = 1; i < all.timing.size(); i += 2) CHECK(duration(all, i) > duration(alone, 1));
  CHECK(all.stats.dram_read_bytes == 8 * alone.stats.dram_read_bytes);
  CHECK(all.stats.d2d_bytes > 0);  // the DRAM is on the IO die: every load crosses a D2D link
}

TEST_CASE("a D2D crossing costs more than an on-die hop") {
  arch::Architecture a = arch::load_architecture("chip-64tops");
  REQUIRE(a.hops(0, 1) == 1);
  REQUIRE(a.d2d_crossings(0, 1) == 0);
  int far = -1;
  for (int c = 0; c < a.core_count(); ++c)
    if (a.d2d_crossings(0, c) == 1 && a.hops(0, c) <= 1) far = c;
  REQUIRE(far >= 0);
  auto near_r = run(transfer(0, 1, 7, 64, 16, 16), "chip-64tops");
  auto far_r = run(transfer(0, far, 7, 64, 16, 16), "chip-64tops");
  // Lines: so_cfg, so_mov, si_cfg, si_mov.
  int64_t near_recv = duration(near_r, 3), far_recv = duration(far_r, 3);
  CHECK(far_recv > near_recv);
  CHECK(far_recv - near_recv >= int64_t(a.d2d.latency_cycles) - int64_t(a.noc.hop_latency_cycles));
  // A transfer is a rendezvous: both ends start together; the send ends
  // when the last byte left, the receive when it arrived.
  CHECK(near_r.timing[1].start == near_r.timing[3].start);
  CHECK(near_r.timing[3].end >= near_r.timing[1].end);
  CHECK(far_r.stats.d2d_bytes == far_r.stats.transfer_bytes);
  CHECK(near_r.stats.d2d_bytes == 0);
  CHECK(far_r.stats.energy.d2d > 0);
  CHECK(near_r.stats.energy.noc > 0);
}

TEST_CASE("transfers sharing a link slow each other") {
  // Two transfers between four distinct cores run concurrently; the first is
  // slowed exactly when the two routes share a link.
  arch::Architecture a = arch::load_architecture("chip-64tops");
  const int n = a.core_count();
  std::map<std::pair<int, int>, int64_t> alone;
  auto recv_time = [&](const sim::Result& r) { return r.timing[3].end - r.timing[3].start; };
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d) alone[{s, d}] = recv_time(run(transfer(s, d, 1, 64, 32, 32), "chip-64tops"));
  int slowed = 0, unaffected = 0;
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      for (int s2 = 0; s2 < n; ++s2)
        for (int d2 = 0; d2 < n; ++d2) {
          if (s == d || s2 == d2 || s == s2 || d == d2 || s == d2 || d == s2) continue;
          auto both = run(transfer(s, d, 1, 64, 32, 32) + transfer(s2, d2, 2, 64, 32, 32), "chip-64tops");
          int64_t t = recv_time(both);
          CHECK(t >= alone[{s, d}]);
          (t > alone[{s, d}] ? slowed : unaffected) += 1;
        }
  MESSAGE(slowed << " pairs of transfers contend, " << unaffected << " do not");
  CHECK(slowed > 0);
  CHECK(unaffected > 0);
  // Transfers on different dies never share a link.
  auto apart = run(transfer(0, 1, 1, 64, 32, 32) + transfer(4, 5, 2, 64, 32, 32), "chip-64tops");
  CHECK(recv_time(apart) == alone[{0, 1}]);
}

TEST_CASE("errors name the line") {
  SUBCASE("more cores than the architecture has") {
    std::string msg = error_of(load(3, 8, 1, 1, 0));
    CHECK(msg.find("t.jsonl:1") != std::string::npos);
    CHECK(msg.find("core 3") != std::string::npos);
    CHECK(msg.find("zebu-1core") != std::string::npos);
  }
  SUBCASE("address outside L2") {
    arch::Architecture a = arch::load_architecture("zebu-1core");
    const int64_t l2 = a.core.l2_bytes;
    std::string msg = error_of(load(-1, 8, 1, 1, l2));
    CHECK(msg.find("t.jsonl:2: lda_mov: writes L2 of core 0 bytes [" + std::to_string(l2) + ", " + std::to_string(l2 + 8) +
                   "), outside the " + std::to_string(l2) + " bytes there") != std::string::npos);
    // A block that starts inside and runs past the end continues at byte 0
    // (L2 is a ring), unless it is longer than L2 and would come round onto itself.
    CHECK_NOTHROW(run(load(-1, 64, 8, 8, l2 - 64)));
    msg = error_of(load(-1, 64, 2048, 65, l2 - 64));
    CHECK(msg.find("writes L2 of core 0 bytes [" + std::to_string(l2 - 64) + ", " + std::to_string(l2 - 64 + 64 * 2048 * 65) +
                   "), outside") != std::string::npos);
  }
  SUBCASE("address outside WL0") {
    arch::Architecture a = arch::load_architecture("zebu-1core");
    std::string p = line("lw_cfg", "\"BAS\": 1, \"DF\": \"DataFmt.INT8\", \"MKC\": 0, \"MKEN\": 0, \"SWsize\": [64, 1, 1], \"DWsize\": [64, 1, 1]") +
                    line("lw_mov", "\"SS\": 1, \"XYmode\": [\"XCutMode.CUT_K\", \"YCutMode.CUT_H\"], \"SBSG\": 0, \"STaddr\": 0, \"DTaddr\": " +
                                       std::to_string(a.core.wl0_rows) + ", \"Wsize\": [64, 64, 1, 1], " + deps("", ""));
    std::string msg = error_of(p);
    CHECK(msg.find("t.jsonl:2: lw_mov: writes WL0 of core 0 bytes") != std::string::npos);
    CHECK(msg.find("outside the " + std::to_string(a.core.wl0_bytes()) + " bytes there") != std::string::npos);
  }
  SUBCASE("deadlock names the waiting instructions") {
    // The store waits for an LD token; the load never sends one.
    std::string msg = error_of(load(-1, 8, 1, 1, 0) + store(-1, 8, 1, 1, 0, "\"LD\"", ""));
    CHECK(msg.find("deadlock") != std::string::npos);
    CHECK(msg.find("t.jsonl:4") != std::string::npos);
    CHECK(msg.find("sta_mov") != std::string::npos);
    CHECK(msg.find("LD->ST") != std::string::npos);
  }
  SUBCASE("a cycle of queues deadlocks without hanging") {
    std::string p = load(-1, 8, 1, 1, 0, "\"ST\"", "\"ST\"") + store(-1, 8, 1, 1, 0, "\"LD\"", "\"LD\"");
    std::string msg = error_of(p);
    CHECK(msg.find("t.jsonl:2") != std::string::npos);
    CHECK(msg.find("t.jsonl:4") != std::string::npos);
  }
  SUBCASE("an operation before its configuration") {
    std::string p = line("lda_mov", "\"RS\": 0, \"DBSG\": 0, \"STaddr\": 0, \"DTaddr\": 0, \"Tile\": [1, 8, 1, 1], " + deps("", ""));
    std::string msg = error_of(p);
    CHECK(msg.find("t.jsonl:1") != std::string::npos);
    CHECK(msg.find("lda_cfg") != std::string::npos);
  }
  SUBCASE("a send without its receive") {
    std::string p = line("so_cfg", "\"DF\": \"DataFmt.INT8\", \"STile\": [8, 1, 1]", 0) +
                    line("so_mov", "\"DCORE\": 1, \"TAG\": 3, \"SBSG\": 0, \"STaddr\": 0, \"Tile\": [1, 8, 1, 1], " + deps("", ""), 0);
    std::string msg = error_of(p, "chip-64tops");
    CHECK(msg.find("t.jsonl:2") != std::string::npos);
    CHECK(msg.find("no matching si_mov") != std::string::npos);
  }
  SUBCASE("a transfer to the core itself") {
    std::string msg = error_of(transfer(1, 1, 3, 8, 1, 1), "chip-64tops");
    CHECK(msg.find("itself") != std::string::npos);
  }
}

TEST_CASE("corrupted programs give errors, never crashes or hangs") {
  // Seeded mutations of a reference program: one parameter cell set to an
  // extreme or random value, or one token list changed. Each run must end,
  // either with a trace or with an input error.
  auto files = cct::testing::reference_files("gemini-ir/asm");
  isa::Program base = isa::read_program(files.front());
  arch::Architecture a = arch::load_architecture("zebu-1core");
  std::mt19937_64 rng(12345);
  const int32_t extremes[] = {0, -1, 1, 2, 7, 64, 1 << 20, (1 << 20) + 1, 2147483647, -2147483647 - 1};
  int ok = 0, errors = 0;
  for (int trial = 0; trial < 300; ++trial) {
    isa::Program p = base;
    size_t i = rng() % p.size();
    isa::Instruction& inst = p.instructions[i];
    auto params = inst.info().params;
    if (rng() % 5 == 0) {
      // Drop or add a token dependency.
      isa::QueueList q;
      if (rng() % 2) q.push_back(isa::Queue(rng() % isa::kQueueCount));
      (rng() % 2 ? inst.prev : inst.next) = q;
    } else if (!params.empty()) {
      int k = int(rng() % params.size());
      int elements = params[size_t(k)].length > 0 ? params[size_t(k)].length : 1;
      int32_t v = rng() % 2 ? extremes[rng() % std::size(extremes)] : int32_t(rng() % 100000) - 100;
      auto kind = params[size_t(k)].kind;
      if (kind == isa::ParamKind::Int || kind == isa::ParamKind::IntList || kind == isa::ParamKind::Number)
        inst.raw_set_cell(k, int(rng() % uint64_t(elements)), v);
    }
    sim::Options o;
    o.file = "mutant";
    try {
      auto r = sim::simulate(p, a, o);
      CHECK(r.timing.size() == p.size());
      ++ok;
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("mutant") == 0);
      ++errors;
    }
  }
  MESSAGE(ok << " mutants ran, " << errors << " were rejected");
  CHECK(errors > 0);
}
