#include <doctest/doctest.h>

#include <set>
#include <string>

#include "isa/isa.hpp"
#include "isa/program.hpp"
#include "isa/schema_gen.hpp"
#include "support/error.hpp"
#include "testing.hpp"

using namespace cct::isa;

TEST_CASE("every opcode sits in the queue its prefix names") {
  std::set<std::string_view> seen;
  for (const auto& info : all_opcodes()) {
    CHECK(seen.insert(info.mnemonic).second);
    std::string_view mn = info.mnemonic;
    std::string_view prefix = mn.substr(0, mn.find('_'));
    std::string_view expected = prefix == "lda" || prefix == "ldw" ? "LD" : prefix == "sta" ? "ST" : prefix;
    std::string upper;
    for (char c : expected) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    CHECK_MESSAGE(queue_name(info.queue) == upper, mn);
    CHECK(info.is_config == (mn.find("_cfg") != std::string_view::npos));
    // Configuration instructions carry no queue tokens; every other instruction does.
    CHECK_MESSAGE(info.has_deps == !info.is_config, mn);
    CHECK(find_opcode(mn) == info.op);
  }
  CHECK(seen.size() == static_cast<size_t>(kOpcodeCount));
  CHECK_FALSE(find_opcode("pe_cnv").has_value());
}

TEST_CASE("parameter lookup agrees with the parameter lists") {
  for (const auto& info : all_opcodes()) {
    for (int p = 0; p < kParamCount; ++p) {
      int idx = param_index(info.op, static_cast<Param>(p));
      if (idx >= 0) {
        REQUIRE(idx < static_cast<int>(info.params.size()));
        CHECK(info.params[idx].id == static_cast<Param>(p));
      } else {
        for (const auto& s : info.params) CHECK(s.id != static_cast<Param>(p));
      }
    }
  }
  CHECK(param_index(Opcode::pe_conv, Param::SWaddr) == 6);
  CHECK(param_index(Opcode::pe_conv, Param::DF) == -1);
  CHECK(param_name(Param::PADV_AREA) == "PADV_AREA");
  CHECK(find_param("Prev_Insts") == Param::Prev_Insts);
}

TEST_CASE("enumerations carry the hardware encodings") {
  CHECK(find_enum_member(EnumClass::DataFmt, "INT8")->value == 1);
  CHECK(find_enum_member(EnumClass::DataFmt, "FP16")->value == 3);
  CHECK(find_enum_member(EnumClass::DataFmt, "INT16") == nullptr);  // never seen: not guessed
  CHECK(find_enum_member(EnumClass::Float2Fixed, "CEIL")->value == 0);
  CHECK(find_enum_member(EnumClass::Float2Fixed, "ROUND")->value == 2);
  CHECK(find_enum_member(EnumClass::YCutMode, "CUT_W")->value == 0);
  CHECK(find_enum_member(EnumClass::YCutMode, "CUT_H")->value == 1);
  CHECK(find_enum_member(EnumClass::YCutMode, "CUT_K")->value == 3);
  CHECK(find_enum_member(EnumClass::YCutMode, "CUT_N")->value == 2);  // the batch axis (programs at batch 16 and 64)
  CHECK(find_enum_member(EnumClass::YCutMode, "CUT_C")->value == 4);
  CHECK(find_enum_value(EnumClass::ActMode, 1)->name == "RELU");
  CHECK(find_enum_class("CMPS") == EnumClass::CMPS);
  CHECK(enum_class_of<DataFmt>() == EnumClass::DataFmt);
}

TEST_CASE("instructions store every parameter in place") {
  Instruction inst(Opcode::pe_cfg_pm);
  CHECK(inst.queue() == Queue::PE);
  CHECK(inst.is_config());
  CHECK(inst.get_enum<ActMode>(Param::ACTMD) == ActMode::DISABLE);  // first member by default
  inst.set_enum(Param::ACTMD, ActMode::RELU);
  inst.set_float(Param::QK, 47.47843584877144);
  inst.set(Param::QB, -128);
  inst.set_list(Param::STRIDE, {2, 2});
  inst.set_list(Param::XYmode, {static_cast<int32_t>(XCutMode::CUT_K), static_cast<int32_t>(YCutMode::CUT_H)});
  CHECK(inst.get(Param::ACTMD) == 1);
  CHECK(inst.is_float(Param::QK));
  CHECK_FALSE(inst.is_float(Param::QB));
  CHECK(inst.number(Param::QK) == 47.47843584877144);
  CHECK(inst.get(Param::QK) == 47);
  CHECK(inst.number(Param::QB) == -128.0);
  CHECK(inst.list(Param::STRIDE).size() == 2);
  CHECK(inst.list(Param::XYmode)[1] == 1);
  CHECK_FALSE(inst.has(Param::STaddr));
  CHECK_THROWS_AS(inst.get(Param::STaddr), cct::Error);
  CHECK_THROWS_AS(inst.set(Param::ACTMD, 7), cct::Error);         // not an ActMode
  CHECK_THROWS_AS(inst.set_list(Param::STRIDE, {1, 2, 3}), cct::Error);
  CHECK_THROWS_AS(inst.set_float(Param::ADDEN, 1.5), cct::Error);  // integers hold no floats
  CHECK_THROWS_AS(inst.set_list(Param::XYmode, {0, 0}), cct::Error);  // 0 is not an XCutMode

  Instruction mov(Opcode::pe_conv);
  mov.set(Param::STaddr, -5400);
  mov.set(Param::DTaddr, int64_t{1} << 40);  // addresses are 64-bit
  mov.prev = {Queue::CT, Queue::VP, Queue::LW};
  mov.next.push_back(Queue::VP);
  CHECK(mov.get(Param::STaddr) == -5400);
  CHECK(mov.get(Param::DTaddr) == int64_t{1} << 40);
  CHECK(mov.prev.size() == 3);
  CHECK(mov.prev.contains(Queue::LW));
  CHECK_FALSE(mov.is_config());
  Instruction copy = mov;
  CHECK(copy == mov);
  copy.set(Param::SWaddr, 1);
  CHECK_FALSE(copy == mov);
}

TEST_CASE("schemas/isa.schema.json is the schema generated from the table") {
  std::string generated = isa_schema_text();
  std::string path = cct::testing::source_dir() + "/schemas/isa.schema.json";
  std::string on_disk = cct::testing::read_file(path);
  if (on_disk != generated) {
    std::string out = cct::testing::temp_dir("isa_schema") + "/isa.schema.json";
    cct::testing::write_file(out, generated);
    FAIL("schemas/isa.schema.json is out of date with lib/isa/isa.cpp; the generated schema is in " << out
         << " (copy it over the file)");
  }
}
