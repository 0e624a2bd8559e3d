// asm against the reference programs of the original tool chain.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "asm/asm.hpp"
#include "fir/fir.hpp"
#include "isa/program_io.hpp"
#include "sir/sir.hpp"
#include "support/error.hpp"
#include "testing.hpp"

namespace {

using namespace cct;

struct RefPair {
  const char* net;
  const char* batch;
  double min_match;  // measured in-order match (isa_compare.py figure, which this LCS never undercuts)
};

// Measured with ../shared/tools/isa_compare.py asm on the output of this assembler.
const RefPair kPairs[] = {
    {"int8_resnet34", "b1", 0.979},
    {"int8_resnet34", "b4", 0.971},
    {"int8_resnet50", "b1", 0.970},
    {"int8_resnet50", "b4", 0.949},
};

std::string sir_path(const RefPair& p) {
  return testing::reference_dir() + "/gemini-ir/scheduler/" + p.net + ".sim_quantized_" + p.batch +
         "_c1_bw16_stschedule.json";
}
std::string fir_path(const RefPair& p) {
  return testing::reference_dir() + "/gemini-ir/frontend/" + p.net + ".sim_quantized_" + p.batch + ".json";
}
std::string asm_path(const RefPair& p) {
  return testing::reference_dir() + "/gemini-ir/asm/" + p.net + ".sim_quanti_" + p.batch + "_c1_bw16_asm.txt";
}

isa::Program assemble_pair(const RefPair& p) {
  auto sched = sir::read_sir(sir_path(p));
  auto graph = fir::read_fir(fir_path(p));
  auto arch = arch::load_architecture("zebu-1core");
  assembler::Options o;
  o.sir_file = sir_path(p);
  o.tile_order = assembler::detect_tile_order(testing::read_file(sir_path(p)));  // as the tool reads it
  return assembler::assemble(sched, graph, arch, o);
}

// Equality as isa_compare.py sees it: everything but syntax; 0 and 0.0 are equal.
bool same(const isa::Instruction& a, const isa::Instruction& b) {
  if (a.op() != b.op() || !(a.mapping == b.mapping) || !(a.prev == b.prev) || !(a.next == b.next)) return false;
  const auto& ps = a.info().params;
  for (size_t i = 0; i < ps.size(); ++i) {
    const auto& s = ps[i];
    int ii = static_cast<int>(i);
    switch (s.kind) {
      case isa::ParamKind::Number: {
        double x = a.raw_is_float(ii) ? a.raw_double(ii) : double(a.raw_int(ii));
        double y = b.raw_is_float(ii) ? b.raw_double(ii) : double(b.raw_int(ii));
        if (x != y) return false;
        break;
      }
      case isa::ParamKind::IntList:
      case isa::ParamKind::EnumList:
        for (int e = 0; e < s.length; ++e)
          if (a.raw_cell(ii, e) != b.raw_cell(ii, e)) return false;
        break;
      case isa::ParamKind::QueueList: break;  // Prev/Next compared above
      default:
        if (a.get(s.id) != b.get(s.id)) return false;
    }
  }
  return true;
}

// Longest common subsequence of the two instruction streams, over the reference length.
double in_order_match(const isa::Program& ours, const isa::Program& ref) {
  const auto& A = ours.instructions;
  const auto& B = ref.instructions;
  std::vector<int> prev(B.size() + 1, 0), cur(B.size() + 1, 0);
  for (size_t i = 1; i <= A.size(); ++i) {
    for (size_t j = 1; j <= B.size(); ++j)
      cur[j] = same(A[i - 1], B[j - 1]) ? prev[j - 1] + 1 : std::max(prev[j], cur[j - 1]);
    std::swap(prev, cur);
  }
  return B.empty() ? 1.0 : double(prev[B.size()]) / double(B.size());
}

}  // namespace

TEST_CASE("asm reproduces the reference programs in order") {
  for (const auto& p : kPairs) {
    std::string net = p.net, batch = p.batch;
    CAPTURE(net);
    CAPTURE(batch);
    isa::Program ours = assemble_pair(p);
    isa::Program ref = isa::read_program(asm_path(p));
    double m = in_order_match(ours, ref);
    MESSAGE(net << " " << batch << ": " << m * 100 << "% of the reference reproduced in order");
    CHECK(ours.size() == ref.size());
    CHECK(m >= p.min_match);
  }
}

TEST_CASE("asm output is deterministic and valid") {
  const auto& p = kPairs[3];
  std::string a = isa::format_program(assemble_pair(p));
  std::string b = isa::format_program(assemble_pair(p));
  CHECK(a == b);
  // Valid against the ISA schema: reading it back runs the per-line checks.
  isa::Program back = isa::parse_program(a, "ours.jsonl", true);
  CHECK(isa::format_program(back) == a);
}

TEST_CASE("asm --check accepts every reference program and every program we write") {
  auto arch = arch::load_architecture("zebu-1core");
  for (const auto& p : kPairs) {
    std::string net = p.net, batch = p.batch;
    CAPTURE(net);
    CAPTURE(batch);
    auto ref_report = assembler::check(isa::read_program(asm_path(p)), arch);
    CHECK_MESSAGE(ref_report.ok(), ref_report.text("ref"));
    auto our_report = assembler::check(assemble_pair(p), arch);
    CHECK_MESSAGE(our_report.ok(), our_report.text("ours"));
  }
}

TEST_CASE("asm --check catches a moved token") {
  auto arch = arch::load_architecture("zebu-1core");
  isa::Program prog = isa::read_program(asm_path(kPairs[0]));
  // Move the LW->PE token of the first weight load to a later weight load.
  size_t first = 0, later = 0;
  for (size_t i = 0; i < prog.size(); ++i) {
    const auto& in = prog.instructions[i];
    if (in.op() == isa::Opcode::lw_mov && in.next.contains(isa::Queue::PE)) {
      if (!first) first = i;
      else if (!later) later = i;
    }
  }
  REQUIRE(first > 0);
  REQUIRE(later > first);
  isa::QueueList none;
  prog.instructions[first].next = none;
  prog.instructions[later].next.push_back(isa::Queue::PE);
  auto rep = assembler::check(prog, arch);
  CHECK_FALSE(rep.ok());
  std::string text = rep.text("moved");
  CHECK(text.find("pops the LW->PE token pushed at line " + std::to_string(later + 1)) != std::string::npos);
}

TEST_CASE("asm --check reports addresses outside the architecture") {
  auto arch = arch::load_architecture("zebu-1core");
  isa::Program prog = isa::read_program(asm_path(kPairs[0]));
  size_t at = 0;
  for (; at < prog.size(); ++at)
    if (prog.instructions[at].op() == isa::Opcode::lda_mov) {
      prog.instructions[at].set(isa::Param::DTaddr, arch.core.l2_bytes + 16);  // inside, it would wrap (L2 is a ring)
      break;
    }
  REQUIRE(at < prog.size());
  // An input error naming the line, as the functional model's.
  try {
    assembler::check(prog, arch, "x.asm");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == kExitInvalidInput);
    std::string want = "x.asm:" + std::to_string(at + 1) + ": lda_mov: writes L2 of core 0 bytes [" +
                       std::to_string(arch.core.l2_bytes + 16) + ", ";
    CHECK_MESSAGE(std::string(e.what()).rfind(want, 0) == 0, e.what());
    CHECK(std::string(e.what()).find("outside the " + std::to_string(arch.core.l2_bytes) + " bytes there") != std::string::npos);
  }
}

TEST_CASE("the asm tool: JSON Lines by default, --legacy, --check") {
  const auto& p = kPairs[0];
  std::string dir = testing::temp_dir("asm_tool");
  auto r = testing::run_tool("asm", sir_path(p) + " --fir " + fir_path(p) + " --arch zebu-1core -o " + dir + "/p.jsonl");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  auto r2 = testing::run_tool("asm", sir_path(p) + " --fir " + fir_path(p) + " --arch zebu-1core --legacy -o " + dir +
                                         "/p.txt");
  REQUIRE_MESSAGE(r2.exit_code == 0, r2.err);
  CHECK(isa::read_program(dir + "/p.jsonl") == isa::read_program(dir + "/p.txt"));
  CHECK(testing::read_file(dir + "/p.txt").rfind("[ct_st, ", 0) == 0);
  auto c = testing::run_tool("asm", "--check " + dir + "/p.jsonl --arch zebu-1core");
  CHECK_MESSAGE(c.exit_code == 0, c.err);
  auto h = testing::run_tool("asm", "--help");
  CHECK(h.exit_code == 0);
  auto u = testing::run_tool("asm", sir_path(p) + " --arch zebu-1core");
  CHECK(u.exit_code == 2);  // --fir missing
}

// Two cores (tests/asm/data/two_core.sir.json: the first two workloads of the
// ResNet-34 b1 schedule, the second moved to core 1, its ofmap sent to DRAM):
// core 0 quantizes the input and sends it to core 1, which convolves and stores.
TEST_CASE("asm: a two-core schedule gives per-core streams joined by so_mov/si_mov") {
  std::string sir_file = testing::source_dir() + "/tests/asm/data/two_core.sir.json";
  auto sched = sir::read_sir(sir_file);
  auto graph = fir::read_fir(fir_path(kPairs[0]));
  auto arch = arch::load_architecture("chip-64tops");
  assembler::Options o;
  o.sir_file = sir_file;
  isa::Program prog = assembler::assemble(sched, graph, arch, o);
  const isa::Instruction* so = nullptr;
  const isa::Instruction* si = nullptr;
  const isa::Instruction* end0 = nullptr;
  int cores_seen[2] = {0, 0};
  for (const auto& in : prog.instructions) {
    REQUIRE(in.mapping.core_written);
    REQUIRE((in.mapping.core == 0 || in.mapping.core == 1));
    cores_seen[in.mapping.core]++;
    if (in.op() == isa::Opcode::so_mov) so = &in;
    if (in.op() == isa::Opcode::si_mov) si = &in;
    if (in.op() == isa::Opcode::ct_ed && in.mapping.core == 0) end0 = &in;
  }
  CHECK(cores_seen[0] > 0);
  CHECK(cores_seen[1] > 0);
  REQUIRE(so != nullptr);
  REQUIRE(si != nullptr);
  CHECK(so->mapping.core == 0);
  CHECK(so->get(isa::Param::DCORE) == 1);
  CHECK(si->mapping.core == 1);
  CHECK(si->get(isa::Param::SCORE) == 0);
  CHECK(so->get(isa::Param::TAG) == si->get(isa::Param::TAG));
  // The sender waits for the VP that wrote the block; the receiver releases the PE.
  CHECK(so->prev.contains(isa::Queue::VP));
  CHECK(si->next.contains(isa::Queue::PE));
  // Core 0 ends when its send has left.
  REQUIRE(end0 != nullptr);
  CHECK(end0->prev.contains(isa::Queue::SO));
  // Tokens balance per core, sends match receives, no deadlock.
  auto rep = assembler::check(prog, arch);
  CHECK_MESSAGE(rep.ok(), rep.text("two-core"));
  // A single-core architecture has no core 1.
  CHECK_THROWS(assembler::assemble(sched, graph, arch::load_architecture("zebu-1core"), o));
}

TEST_CASE("asm --multicast: only on an architecture whose NoC multicasts; the program then checks and runs") {
  const std::string sir_file = testing::source_dir() + "/tests/asm/data/two_core.sir.json";
  const std::string dir = testing::temp_dir("asm_multicast");
  auto ok = testing::run_tool("asm", sir_file + " --fir " + fir_path(kPairs[0]) + " --arch chip-64tops --multicast -o " + dir + "/p.asm");
  CHECK_MESSAGE(ok.exit_code == 0, ok.err);
  CHECK(ok.err.find("multicast loads replace") != std::string::npos);
  auto checked = testing::run_tool("asm", "--check " + dir + "/p.asm --arch chip-64tops");
  CHECK_MESSAGE(checked.exit_code == 0, checked.err);
  // The same chip without multicast: a usage error naming the key.
  arch::Architecture plain = arch::load_architecture("chip-64tops");
  plain.noc.multicast = false;
  testing::write_file(dir + "/plain.json", arch::format_architecture(plain));
  auto refused = testing::run_tool("asm", sir_file + " --fir " + fir_path(kPairs[0]) + " --arch " + dir +
                                              "/plain.json --multicast -o " + dir + "/q.asm");
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("noc.multicast") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/q.asm"));
}
