#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "isa/program_io.hpp"
#include "support/error.hpp"
#include "support/io.hpp"
#include "testing.hpp"

using namespace cct::isa;

namespace {
std::string base_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }
}  // namespace

TEST_CASE("every reference program round-trips byte for byte in both syntaxes") {
  for (const std::string& path : cct::testing::reference_files("gemini-ir/asm")) {
    CAPTURE(path);
    std::string text = cct::testing::read_file(path);
    Syntax syntax = Syntax::JsonLines;
    Program prog = parse_program(text, base_name(path), true, &syntax);
    CHECK(syntax == Syntax::Legacy);
    CHECK(prog.size() == static_cast<size_t>(std::count(text.begin(), text.end(), '\n')));
    // legacy -> legacy is the identity.
    CHECK(format_program(prog, Syntax::Legacy) == text);
    // legacy -> JSON Lines -> legacy is the identity, and JSON Lines round-trips too.
    std::string jsonl = format_program(prog, Syntax::JsonLines);
    Syntax again = Syntax::Legacy;
    Program from_jsonl = parse_program(jsonl, base_name(path) + ".jsonl", true, &again);
    CHECK(again == Syntax::JsonLines);
    CHECK(from_jsonl == prog);
    CHECK(format_program(from_jsonl, Syntax::JsonLines) == jsonl);
    CHECK(format_program(from_jsonl, Syntax::Legacy) == text);
  }
}

TEST_CASE("a reference line reads into the expected fields") {
  std::string path = cct::testing::reference_dir() + "/gemini-ir/asm/int8_resnet34.sim_quanti_b1_c1_bw16_asm.txt";
  Program prog = read_program(path);
  REQUIRE(prog.size() > 20);
  // Line 1: [ct_st, {... 'tile': -1}, {'Prev_Insts': [], 'Next_Insts': ['LW']}]
  const Instruction& first = prog.instructions[0];
  CHECK(first.op() == Opcode::ct_st);
  CHECK(first.mapping.tile == -1);
  CHECK(first.prev.empty());
  REQUIRE(first.next.size() == 1);
  CHECK(first.next[0] == Queue::LW);
  // Find the first pe_conv and the first vp_cfg_qp, whose values are known from the file.
  const Instruction* conv = nullptr;
  const Instruction* qp = nullptr;
  for (const auto& inst : prog.instructions) {
    if (!conv && inst.op() == Opcode::pe_conv) conv = &inst;
    if (!qp && inst.op() == Opcode::vp_cfg_qp) qp = &inst;
  }
  REQUIRE(conv);
  REQUIRE(qp);
  CHECK(conv->mapping.slyr == 1);
  CHECK(conv->get(Param::SPHI) == -3);
  CHECK(conv->get(Param::STaddr) == -5400);
  CHECK(conv->get(Param::DTaddr) == 401408);
  CHECK(conv->prev.size() == 3);
  CHECK(qp->get_enum<Float2Fixed>(Param::QCS) == Float2Fixed::ROUND);
  CHECK(qp->is_float(Param::QB));
  CHECK(qp->number(Param::QB) == -14.0);
  CHECK(qp->number(Param::QK) == 53.59502410888672);
}

TEST_CASE("multi-core programs carry the core in the mapping") {
  Program prog;
  Instruction send(Opcode::so_mov);
  send.mapping.core = 0;
  send.set(Param::DCORE, 5);
  send.set(Param::TAG, 17);
  send.set(Param::STaddr, 4096);
  send.set_list(Param::Tile, {1, 64, 28, 28});
  send.prev = {Queue::PE};
  Instruction recv(Opcode::si_mov);
  recv.mapping.core = 5;
  recv.set(Param::SCORE, 0);
  recv.set(Param::TAG, 17);
  recv.set(Param::DTaddr, 0);
  recv.set_list(Param::Tile, {1, 64, 28, 28});
  recv.next = {Queue::PE};
  prog.instructions = {send, recv};
  std::string legacy = format_program(prog, Syntax::Legacy);
  // Core 0 written implicitly stays implicit; other cores are written.
  CHECK(legacy.find("'tile': 0}, {'DCORE': 5") != std::string::npos);
  CHECK(legacy.find("'tile': 0, 'core': 5}") != std::string::npos);
  for (Syntax s : {Syntax::Legacy, Syntax::JsonLines}) {
    std::string text = format_program(prog, s);
    Program back = parse_program(text, "mc", true);
    CHECK(back.instructions[1].mapping.core == 5);
    CHECK(format_program(back, s) == text);
  }
  // An explicit "core": 0 is kept as written.
  std::string explicit_zero =
      "[\"ct_st\", {\"slyr\": 0, \"clyr\": [], \"s_flyr\": 0, \"c_flyr\": [], \"wkl\": 0, \"tile\": -1, \"core\": 0}, "
      "{\"Prev_Insts\": [], \"Next_Insts\": []}]\n";
  CHECK(format_program(parse_program(explicit_zero, "z"), Syntax::JsonLines) == explicit_zero);
}

TEST_CASE("keys in another order and extra spaces are read; the writer canonicalises") {
  std::string messy =
      "[ lda_cfg ,{'tile': -1, 'wkl': 0, 'slyr': 0, 'clyr': [1,0], 's_flyr': 0, 'c_flyr': [0]},"
      "{'DTile': [3, 224, 224], 'SME': 1, 'RS': 0, 'BAS': 0, 'DF': <DataFmt.FP16: 3>, 'STile': [3,224,224]} ]\r\n";
  Program prog = parse_program(messy, "messy.asm");
  CHECK(format_program(prog, Syntax::Legacy) ==
        "[lda_cfg, {'slyr': 0, 'clyr': [1, 0], 's_flyr': 0, 'c_flyr': [0], 'wkl': 0, 'tile': -1}, {'SME': 1, 'RS': 0, "
        "'BAS': 0, 'DF': <DataFmt.FP16: 3>, 'STile': [3, 224, 224], 'DTile': [3, 224, 224]}]\n");
}

TEST_CASE("write_program writes atomically, compressed when asked, and reads back") {
  std::string path = cct::testing::reference_dir() + "/gemini-ir/asm/int8_resnet50.sim_quanti_b1_c1_bw16_asm.txt";
  Program prog = read_program(path);
  std::string dir = cct::testing::temp_dir("isa_write");
  write_program(dir + "/p.jsonl.zst", prog, Syntax::JsonLines);
  CHECK(cct::has_zstd_magic(cct::testing::read_file(dir + "/p.jsonl.zst")));
  CHECK(read_program(dir + "/p.jsonl.zst") == prog);
  write_program(dir + "/p.asm", prog, Syntax::Legacy);
  CHECK(cct::testing::read_file(dir + "/p.asm") == cct::testing::read_file(path));
  // Writing is deterministic.
  write_program(dir + "/q.jsonl", prog, Syntax::JsonLines);
  write_program(dir + "/r.jsonl", prog, Syntax::JsonLines);
  CHECK(cct::testing::read_file(dir + "/q.jsonl") == cct::testing::read_file(dir + "/r.jsonl"));
}
