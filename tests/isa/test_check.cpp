#include <doctest/doctest.h>

#include <string>

#include "isa/check.hpp"
#include "isa/program_io.hpp"
#include "testing.hpp"

using namespace cct::isa;

namespace {

Instruction make(Opcode op, int32_t core, std::initializer_list<Queue> prev, std::initializer_list<Queue> next) {
  Instruction inst(op);
  inst.mapping.core = core;
  inst.prev = QueueList(prev);
  inst.next = QueueList(next);
  return inst;
}

Instruction transfer(Opcode op, int32_t core, int32_t peer, int32_t tag, std::initializer_list<Queue> prev,
                     std::initializer_list<Queue> next) {
  Instruction inst = make(op, core, prev, next);
  inst.set(op == Opcode::so_mov ? Param::DCORE : Param::SCORE, peer);
  inst.set(Param::TAG, tag);
  inst.set_list(Param::Tile, {1, 64, 8, 8});
  return inst;
}

}  // namespace

TEST_CASE("every reference program runs to completion with balanced tokens") {
  for (const std::string& path : cct::testing::reference_files("gemini-ir/asm")) {
    CAPTURE(path);
    Program prog = read_program(path);
    CheckReport r = check_program(prog);
    CHECK_MESSAGE(r.diagnostics.empty(), r.text(path));
  }
}

TEST_CASE("a missing token is a deadlock, an extra one a warning") {
  Program prog = read_program(cct::testing::reference_dir() + "/gemini-ir/asm/int8_resnet34.sim_quanti_b1_c1_bw16_asm.txt");
  // Instruction 1 (ct_st) pushes the only CT->LW token; without it the first lw_mov waits forever.
  Program starved = prog;
  starved.instructions[0].next.clear();
  CheckReport r = check_program(starved);
  REQUIRE_FALSE(r.ok());
  std::string text = r.text("p.asm");
  CHECK(text.find("error: deadlock: lw_mov on core 0 (queue LW") != std::string::npos);
  CHECK(text.find("waits for 1 CT->LW token(s), 0 available") != std::string::npos);

  Program extra = prog;
  extra.instructions[0].next.push_back(Queue::PE);
  r = check_program(extra);
  CHECK_FALSE(r.ok());  // issue 20: was a warning, and zebusim ran the program
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.text("p.asm").find("error: core 0: 1 CT->PE token(s) pushed but never popped") != std::string::npos);
}

TEST_CASE("sends and receives pair up across cores") {
  // Core 0: PE computes, SO sends to core 1; core 1: SI receives, PE consumes.
  Program prog;
  prog.instructions = {
      make(Opcode::pe_conv, 0, {}, {Queue::SO}),
      transfer(Opcode::so_mov, 0, 1, 7, {Queue::PE}, {}),
      transfer(Opcode::si_mov, 1, 0, 7, {}, {Queue::PE}),
      make(Opcode::pe_conv, 1, {Queue::SI}, {}),
  };
  CHECK(check_program(prog).diagnostics.empty());

  SUBCASE("a wrong tag never meets its partner") {
    prog.instructions[2].set(Param::TAG, 8);
    CheckReport r = check_program(prog);
    CHECK_FALSE(r.ok());
    CHECK(r.text("mc").find("deadlock: so_mov on core 0 (queue SO, 1 instruction(s) left) waits for its transfer partner") !=
          std::string::npos);
  }
  SUBCASE("tiles must agree") {
    prog.instructions[2].set_list(Param::Tile, {1, 64, 8, 4});
    CHECK(check_program(prog).text("mc").find("its Tile differs") != std::string::npos);
  }
  SUBCASE("a core cannot send to itself or to a core without instructions") {
    prog.instructions[1].set(Param::DCORE, 0);
    CHECK(check_program(prog).text("mc").find("DCORE names its own core") != std::string::npos);
    prog.instructions[1].set(Param::DCORE, 9);
    CHECK(check_program(prog).text("mc").find("DCORE 9 is a core without instructions") != std::string::npos);
  }
  SUBCASE("configuration instructions take no tokens") {
    prog.instructions.insert(prog.instructions.begin(), make(Opcode::pe_cfg_dq, 0, {}, {Queue::PE}));
    CHECK(check_program(prog).text("mc").find("mc:1: error: pe_cfg_dq on core 0: a configuration instruction carries no "
                                              "Prev_Insts/Next_Insts tokens") != std::string::npos);
  }
  SUBCASE("the order of cores in the file does not matter") {
    std::swap(prog.instructions[0], prog.instructions[3]);
    std::swap(prog.instructions[1], prog.instructions[2]);
    CHECK(check_program(prog).diagnostics.empty());
  }
}
