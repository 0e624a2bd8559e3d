// The rules the original compiler's programs at batch 16 and 64 need
// (formats/ISA_Format.md): YCutMode.CUT_N, pooling windows that start in the
// padding before their tensor, and L2 as a ring that a block may run around.
// Each is checked the three ways a program is: asm --check (the footprint
// planner and the token check), zebusim's timing run and the functional run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../sim/programs.hpp"
#include "../testing/testing.hpp"
#include "footprint/footprint.hpp"
#include "func/machine.hpp"
#include "func_test_util.hpp"
#include "isa/check.hpp"
#include "isa/program_io.hpp"
#include "sim/sim.hpp"
#include "support/error.hpp"

using namespace cct;
using cct::testing::deps;
using cct::testing::line;
using func_test::arch_named;

namespace {

// asm --check's two passes and the timing run; throws what they throw.
void check_and_time(const isa::Program& p, const arch::Architecture& a) {
  auto report = isa::check_program(p, 0);
  REQUIRE(report.ok());
  footprint::Options o;
  o.file = "t.jsonl";
  footprint::check_program(a, p, o);
  sim::Options so;
  so.file = "t.jsonl";
  sim::simulate(p, a, so);
}

// Runs a program of moves and VP operations on the functional machine in
// program order (one instruction at a time: nothing overlaps to order).
std::unique_ptr<func::Machine> run_machine(const arch::Architecture& a, const isa::Program& p, std::vector<uint8_t> dram) {
  auto m = std::make_unique<func::Machine>(a, p, "t.jsonl", std::vector<uint8_t>(64, 0), std::move(dram));
  m->plan();
  for (size_t i = 0; i < p.size(); ++i) m->start(i), m->finish(i);
  return m;
}
const uint8_t* dram_of(const func::Machine& m) { return m.memory(footprint::Space::DramActivations, 0); }

std::string chw(int c, int h, int w) { return std::to_string(c) + ", " + std::to_string(h) + ", " + std::to_string(w); }

std::string lda(int n, int c, int h, int w, long src, long dst, const std::string& next) {
  return line("lda_cfg", "\"SME\": 1, \"RS\": 0, \"BAS\": 0, \"DF\": \"DataFmt.INT8\", \"STile\": [" + chw(c, h, w) +
                             "], \"DTile\": [" + chw(c, h, w) + "]") +
         line("lda_mov", "\"RS\": 0, \"DBSG\": 0, \"STaddr\": " + std::to_string(src) + ", \"DTaddr\": " + std::to_string(dst) +
                             ", \"Tile\": [" + std::to_string(n) + ", " + chw(c, h, w) + "], " + deps("\"CT\"", next));
}
std::string sta(int n, int c, int h, int w, long src, long dst, const std::string& prev) {
  return line("sta_cfg", "\"SME\": 1, \"RS\": 0, \"BAS\": 0, \"DF\": \"DataFmt.INT8\", \"STile\": [" + chw(c, h, w) +
                             "], \"DTile\": [" + chw(c, h, w) + "]") +
         line("sta_mov", "\"RS\": 0, \"SBSG\": 0, \"STaddr\": " + std::to_string(src) + ", \"DTaddr\": " + std::to_string(dst) +
                             ", \"Tile\": [" + std::to_string(n) + ", " + chw(c, h, w) + "], " + deps(prev, "\"CT\""));
}
const std::string kStart = line("ct_st", deps("", "\"LD\""));
const std::string kEnd = line("ct_ed", deps("\"ST\"", ""));

}  // namespace

TEST_CASE("YCutMode.CUT_N (2) is read in both syntaxes and changes neither the data nor the time of a program") {
  const auto& a = arch_named("zebu-1core");
  // The legacy value is the hardware's: 2, the gap between CUT_H and CUT_K.
  const auto* m = isa::find_enum_member(isa::EnumClass::YCutMode, "CUT_N");
  REQUIRE(m);
  CHECK(m->value == 2);
  CHECK(static_cast<int32_t>(isa::YCutMode::CUT_N) == 2);

  // The tiny ResNet at batch 4 with every Y cut made CUT_N: the same cycles,
  // the same outputs, every layer matching its golden.
  const auto& c = func_test::tiny(4);
  auto b = func_test::build(c, func_test::single_core(c.graph, "zebu-1core"), a, testing::temp_dir("func_cut_n"));
  isa::Program p = b.program;
  int changed = 0;
  for (auto& in : p.instructions)
    if (in.has(isa::Param::XYmode)) {
      auto xy = in.list(isa::Param::XYmode);
      in.set_list(isa::Param::XYmode, {xy[0], static_cast<int32_t>(isa::YCutMode::CUT_N)});
      ++changed;
    }
  REQUIRE(changed > 0);
  // Both syntaxes carry it: JSON Lines "YCutMode.CUT_N", legacy <YCutMode.CUT_N: 2>.
  for (auto syntax : {isa::Syntax::JsonLines, isa::Syntax::Legacy}) {
    std::string text = isa::format_program(p, syntax);
    CHECK(text.find(syntax == isa::Syntax::Legacy ? "<YCutMode.CUT_N: 2>" : "\"YCutMode.CUT_N\"") != std::string::npos);
    isa::Program back = isa::parse_program(text, "t.asm", true);
    CHECK(isa::format_program(back, syntax) == text);
  }
  check_and_time(p, a);
  auto t = func_test::retime(p, a);
  REQUIRE(t.size() == b.timing.size());
  for (size_t i = 0; i < t.size(); ++i) {
    CHECK(t[i].start == b.timing[i].start);
    CHECK(t[i].end == b.timing[i].end);
  }
  func::Result r = func_test::run(c, b, p, t, a, true);
  auto want = func_test::interpret(c);
  REQUIRE(r.outputs.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK(func_test::same_bits(r.outputs[i].tensor, want[i]));
}

TEST_CASE("a max pool whose window starts in the padding before its tensor at L2 byte 0 runs bit for bit") {
  const auto& a = arch_named("zebu-1core");
  // [8, 6, 6] INT8 at L2 0 (8-byte pixels, 48-byte rows); 3x3/2 max pool,
  // padding 1: the window origin, box row -1 and column -1, is byte -56.
  const int C = 8, H = 6, W = 6, OH = 3, OW = 3;
  const long origin = -(W * 8 + 8);
  auto program = [&](long staddr) {
    return kStart + lda(1, C, H, W, 0, 0, "\"VP\"") +
           line("vp_cfg_fm", "\"IF\": \"DataSign.SIGNED\", \"OF\": \"DataSign.SIGNED\", \"IDF\": \"DataFmt.INT8\", "
                             "\"ODF\": \"DataFmt.INT8\", \"VF32\": 0, \"STile\": [" + chw(C, H, W) + "], \"DTile\": [" +
                             chw(C, OH, OW) + "]") +
           line("vp_cfg_tp", "\"STRIDE\": [2, 2], \"KERNEL\": [3, 3], \"Tile\": [" + chw(C, OH, OW) +
                             "], \"T1F\": 0, \"T0F\": 7, \"PADV_AREA\": -32768") +
           line("vp_cfg_qp", "\"QCS\": \"Float2Fixed.ROUND\", \"QSMD\": \"QSMD.DEFAULT\", \"QB\": 0.0, \"QK\": 1.0") +
           line("vp_pool", "\"IQEN\": 0, \"QEN\": 3, \"SHMD\": 0, \"GPMD\": 4, \"CMPD\": \"CMPD.DEFAULT\", \"TREED\": "
                           "\"TREED.DEFAULT\", \"ACCD\": \"ACCD.DEFAULT\", \"SWRS\": \"SWRS.DEFAULT\", \"LUT\": 17, \"IPH\": -1, "
                           "\"IPW\": -1, \"SBSG\": 0, \"DBSG\": 0, \"STaddr\": " + std::to_string(staddr) +
                           ", \"DTaddr\": 4096, " + deps("\"LD\"", "\"ST\"")) +
           sta(1, C, OH, OW, 4096, 1024, "\"VP\"") + kEnd;
  };
  isa::Program p = testing::parse(program(origin));
  check_and_time(p, a);
  std::vector<uint8_t> dram(2048, 0);
  for (int k = 0; k < C * H * W; ++k) dram[size_t(k)] = uint8_t(int8_t((k * 37) % 251 - 125));
  auto m = run_machine(a, p, dram);
  const uint8_t* out = dram_of(*m);
  // The pool of the DRAM tensor (NHWC), padding not counted.
  for (int oh = 0; oh < OH; ++oh)
    for (int ow = 0; ow < OW; ++ow)
      for (int ch = 0; ch < C; ++ch) {
        int best = -129;
        for (int r = 2 * oh - 1; r <= 2 * oh + 1; ++r)
          for (int q = 2 * ow - 1; q <= 2 * ow + 1; ++q)
            if (r >= 0 && r < H && q >= 0 && q < W) best = std::max(best, int(int8_t(dram[size_t((r * W + q) * C + ch)])));
        CHECK(int(int8_t(out[size_t(1024 + (oh * OW + ow) * C + ch)])) == best);
      }
  // One row further up the window's first inside row would be L2 byte -48: refused, naming the line.
  isa::Program bad = testing::parse(program(origin - W * 8));
  footprint::Options o;
  o.file = "t.jsonl";
  CHECK_THROWS_WITH(footprint::check_program(a, bad, o), doctest::Contains("t.jsonl:7: vp_pool: reads L2 of core 0 bytes [-48,"));
}

TEST_CASE("L2 is a ring: a batch tile running past the end of L2 continues at byte 0") {
  const auto& a = arch_named("zebu-1core");
  const long l2 = a.core.l2_bytes;
  // Two samples of [64, 4, 4] (1024 bytes each) from 1536 bytes before the end: 512 bytes wrap.
  const int N = 2, C = 64, H = 4, W = 4;
  const long bytes = long(N) * C * H * W, at = l2 - 1536;
  auto program = [&](long dst) {
    return kStart + lda(N, C, H, W, 0, dst, "\"ST\"") + sta(N, C, H, W, dst, bytes, "\"LD\"") + kEnd;
  };
  isa::Program p = testing::parse(program(at));
  check_and_time(p, a);
  std::vector<uint8_t> dram(size_t(2 * bytes), 0);
  for (long k = 0; k < bytes; ++k) dram[size_t(k)] = uint8_t((k * 13 + 5) % 256);
  auto m = run_machine(a, p, dram);
  // The store reads back what the load wrote, around the ring.
  CHECK(std::memcmp(dram_of(*m) + bytes, dram.data(), size_t(bytes)) == 0);
  const uint8_t* mem = m->memory(footprint::Space::L2, 0);
  CHECK(std::memcmp(mem + at, dram.data(), 1536) == 0);
  CHECK(std::memcmp(mem, dram.data() + 1536, 512) == 0);

  // The case: [8, 2048, 7, 7] from byte 7,733,248 ends at 8,536,064, 147,456 bytes round.
  isa::Program b64 = testing::parse(kStart + lda(8, 2048, 7, 7, 0, 0, "\"ST\"") +
                                    sta(8, 2048, 7, 7, 7733248, 0, "\"LD\"") + kEnd);
  footprint::Options o;
  o.file = "t.jsonl";
  footprint::check_program(a, b64, o);
  // A block longer than the ring (it would overwrite itself) and one starting past the end are refused.
  const long past = l2;
  for (long dst : {past, l2 - 16})
    for (int n : {dst == past ? 1 : 8193}) {
      CAPTURE(dst);
      isa::Program q = testing::parse(kStart + lda(n, 64, 4, 4, 0, dst, "\"ST\"") + sta(1, 64, 4, 4, 0, 0, "\"LD\"") + kEnd);
      CHECK_THROWS_WITH(footprint::check_program(a, q, o), doctest::Contains("t.jsonl:3: lda_mov: writes L2 of core 0 bytes"));
    }
}
