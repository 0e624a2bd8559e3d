#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "isa/line_schema.hpp"
#include "isa/program_io.hpp"
#include "support/error.hpp"
#include "testing.hpp"

using namespace cct::isa;

namespace {

// The message of the error parsing `text` raises, or "" when it parses.
std::string error_of(const std::string& text, bool validate = true) {
  try {
    parse_program(text, "prog.asm", validate);
  } catch (const cct::Error& e) {
    CHECK(e.code() == cct::kExitInvalidInput);
    return e.what();
  }
  return "";
}

const std::string kMap = "{'slyr': 1, 'clyr': [], 's_flyr': 0, 'c_flyr': [], 'wkl': 1, 'tile': 0}";
const std::string kConv = "[pe_conv, " + kMap +
                          ", {'PS': 0, 'SPHI': -3, 'SPWI': -3, 'SBSG': 0, 'DBSG': 0, 'STaddr': -5400, 'SWaddr': 0, "
                          "'DTaddr': 401408, 'Prev_Insts': ['CT', 'VP', 'LW'], 'Next_Insts': ['VP', 'LW']}]\n";
const std::string kFm = "[pe_cfg_fm, " + kMap +
                        ", {'IF': <DataSign.SIGNED: 1>, 'OF': <DataSign.SIGNED: 1>, 'SF': <DataFmt.INT8: 1>, 'WF': "
                        "<DataFmt.INT8: 1>, 'DF': <DataFmt.INT8: 1>, 'PADV': -14.0, 'STile': [3, 224, 224], 'DTile': "
                        "[64, 112, 112]}]\n";

std::string replace(std::string s, const std::string& from, const std::string& to) {
  size_t pos = s.find(from);
  REQUIRE_MESSAGE(pos != std::string::npos, from);
  return s.replace(pos, from.size(), to);
}

}  // namespace

TEST_CASE("the well-formed samples parse") {
  CHECK(error_of(kConv + kFm) == "");
}

TEST_CASE("unknown mnemonic names the line") {
  std::string text = kConv + kFm + replace(kConv, "pe_conv", "pe_cnv");
  CHECK(error_of(text).find("prog.asm:3: unknown mnemonic 'pe_cnv'") == 0);
}

TEST_CASE("missing, unknown and duplicate keys") {
  CHECK(error_of(replace(kConv, "'SWaddr': 0, ", "")).find("prog.asm:1: pe_conv: missing parameter 'SWaddr'") == 0);
  CHECK(error_of(replace(kConv, "'PS': 0", "'PS': 0, 'XX': 1")).find("pe_conv: unknown parameter 'XX'") !=
        std::string::npos);
  CHECK(error_of(replace(kConv, "'PS': 0", "'PS': 0, 'PS': 0")).find("duplicate parameter 'PS'") !=
        std::string::npos);
  CHECK(error_of(replace(kConv, ", 'tile': 0", "")).find("mapping: missing key 'tile'") != std::string::npos);
  CHECK(error_of(replace(kConv, "'tile': 0", "'tile': 0, 'tiles': 1")).find("unknown mapping key 'tiles'") !=
        std::string::npos);
  // A parameter of another opcode is unknown here.
  CHECK(error_of(replace(kConv, "'PS': 0", "'DF': <DataFmt.INT8: 1>")).find("unknown parameter 'DF'") !=
        std::string::npos);
}

TEST_CASE("wrong value kinds") {
  CHECK(error_of(replace(kConv, "'STaddr': -5400", "'STaddr': 'abc'"))
            .find("pe_conv: parameter 'STaddr': expected a number, found ''abc''") != std::string::npos);
  CHECK(error_of(replace(kConv, "'STaddr': -5400", "'STaddr': 1.5")).find("expected an integer, got 1.5") !=
        std::string::npos);
  CHECK(error_of(replace(kFm, "'STile': [3, 224, 224]", "'STile': 3")).find("'[' opening a list of integers") !=
        std::string::npos);
  CHECK(error_of(replace(kFm, "'STile': [3, 224, 224]", "'STile': [3, 224]")).find("expected 3 elements, got 2") !=
        std::string::npos);
  CHECK(error_of(replace(kFm, "'STile': [3, 224, 224]", "'STile': [3, 224, 224, 1]"))
            .find("expected 3 elements, got more") != std::string::npos);
  CHECK(error_of(replace(kFm, "'PADV': -14.0", "'PADV': True")).find("'PADV': expected a number") !=
        std::string::npos);
  CHECK(error_of(replace(kConv, "['CT', 'VP', 'LW']", "['CT', 'XX']")).find("'XX' is not a queue") !=
        std::string::npos);
  CHECK(error_of(replace(kConv, "['CT', 'VP', 'LW']", "'CT'")).find("'[' opening a list of queue names") !=
        std::string::npos);
  CHECK(error_of(replace(kConv, "'slyr': 1", "'slyr': [1]")).find("mapping key 'slyr': expected a number") !=
        std::string::npos);
}

TEST_CASE("bad enums") {
  CHECK(error_of(replace(kFm, "'DF': <DataFmt.INT8: 1>", "'DF': <DataFmt.INT9: 9>"))
            .find("prog.asm:1: pe_cfg_fm: parameter 'DF': DataFmt.INT9 is not a DataFmt (members: INT8, FP16)") == 0);
  CHECK(error_of(replace(kFm, "'DF': <DataFmt.INT8: 1>", "'DF': <ActMode.RELU: 1>"))
            .find("expected a DataFmt, got ActMode.RELU") != std::string::npos);
  CHECK(error_of(replace(kFm, "'DF': <DataFmt.INT8: 1>", "'DF': <DataFmt.INT8: 2>"))
            .find("DataFmt.INT8 has the value 1, not 2") != std::string::npos);
  CHECK(error_of(replace(kFm, "'DF': <DataFmt.INT8: 1>", "'DF': 1")).find("expected an enum like <DataFmt.INT8: 1>") !=
        std::string::npos);
  std::string jsonl = format_program(parse_program(kFm, "x"), Syntax::JsonLines);
  CHECK(error_of(replace(jsonl, "\"DF\": \"DataFmt.INT8\"", "\"DF\": \"DataFmt.INT9\""))
            .find("DataFmt.INT9 is not a DataFmt") != std::string::npos);
  CHECK(error_of(replace(jsonl, "\"DF\": \"DataFmt.INT8\"", "\"DF\": \"INT8\""))
            .find("malformed enum \"INT8\": expected \"Class.NAME\"") != std::string::npos);
}

TEST_CASE("truncated lines, garbage and empty input") {
  for (size_t cut : {1ul, 5ul, 9ul, 40ul, 100ul, kConv.size() - 3}) {
    CAPTURE(cut);
    std::string err = error_of(kConv.substr(0, cut) + "\n");
    CHECK(err.find("prog.asm:1: ") == 0);
  }
  CHECK(error_of(kConv.substr(0, 60)).find("expected a key in single quotes, found end of line (column 61)") !=
        std::string::npos);
  CHECK(error_of(kConv.substr(0, 10)).find("expected '{' opening the mapping, found end of line") !=
        std::string::npos);
  CHECK(error_of(kConv.substr(0, 86)).find("line ends inside a quoted name") != std::string::npos);
  CHECK(error_of(std::string("\x00\xff\xfe garbage\n", 13)).find("prog.asm:1: not an instruction line") == 0);
  CHECK(error_of("[pe_conv\x01\x02]\n").find("prog.asm:1: ") == 0);
  CHECK(error_of("").find("prog.asm: no instructions") == 0);
  CHECK(error_of("\n  \n\n").find("prog.asm: no instructions") == 0);
  CHECK(error_of(replace(kConv, "]\n", "] trailing\n")).find("unexpected text after the instruction") !=
        std::string::npos);
}

TEST_CASE("huge numbers and deep nesting are errors, not crashes") {
  CHECK(error_of(replace(kConv, "-5400", "99999999999999999999999")).find("is out of range") != std::string::npos);
  CHECK(error_of(replace(kConv, "-5400", "-9223372036854775809")).find("is out of range") != std::string::npos);
  CHECK(error_of(replace(kConv, "-5400", "-9223372036854775808")) == "");  // INT64_MIN fits
  CHECK(error_of(replace(kFm, "-14.0", "1e999")).find("is out of range") != std::string::npos);
  CHECK(error_of(replace(kFm, "[3, 224, 224]", "[3, 224, 2147483648]")).find("32-bit") != std::string::npos);
  CHECK(error_of(replace(kConv, "'slyr': 1", "'slyr': 4294967296")).find("32-bit") != std::string::npos);
  std::string deep(100000, '[');
  CHECK(error_of(replace(kConv, "-5400", deep)).find("expected a number") != std::string::npos);
  std::string long_name(100000, 'a');
  CHECK(error_of("[" + long_name + ", {}, {}]\n").find("unknown mnemonic") != std::string::npos);
}

TEST_CASE("syntax is detected per file and must not change") {
  std::string jsonl = format_program(parse_program(kConv, "x"), Syntax::JsonLines);
  CHECK(error_of(jsonl) == "");
  CHECK(error_of(kConv + jsonl).find("prog.asm:2: line is in jsonl syntax but the file started in legacy syntax") ==
        0);
  // Python literals are not JSON, and JSON literals are not Python.
  CHECK(error_of(replace(jsonl, "\"PS\"", "'PS'")).find("expected a key in double quotes") != std::string::npos);
  std::string gms = "[vp_cfg_gms, " + kMap +
                    ", {'USED': False, 'SEGE': 0, 'SEGN': 0, 'MG0S': <MG0S.DEFAULT: 0>, 'SG1M': <SG1M.DEFAULT: 0>, "
                    "'MG0VS': 0, 'SG1VS': 0, 'SG1V': 0, 'MG0V': 0.020408162847161293}]\n";
  CHECK(error_of(gms) == "");
  CHECK(error_of(replace(gms, "False", "false")).find("expected True or False") != std::string::npos);
  std::string gms_json = format_program(parse_program(gms, "x"), Syntax::JsonLines);
  CHECK(gms_json.find("\"USED\": false") != std::string::npos);
  CHECK(error_of(replace(gms_json, "false", "False")).find("expected true or false") != std::string::npos);
  CHECK(error_of(replace(gms, "'USED': False", "'USED': 0")).find("expected True or False") != std::string::npos);
}

TEST_CASE("a trace line is not a program line") {
  std::string line = replace(kConv, kMap + ", ", kMap + ", {'inst_idx': 1, 'time': [0, 5]}, ");
  CHECK(error_of(line).find("this is a trace line") != std::string::npos);
}

TEST_CASE("the schema pass reports a JSON pointer") {
  LineSchemaValidator v("isa");
  std::string good = format_program(parse_program(kConv, "x"), Syntax::JsonLines);
  good.pop_back();
  CHECK_NOTHROW(v.validate(good, Opcode::pe_conv, "p.jsonl", 4));
  std::string bad = replace(good, "\"tile\": 0", "\"tile\": 0, \"core\": -1");
  try {
    v.validate(bad, Opcode::pe_conv, "p.jsonl", 4);
    FAIL("no error");
  } catch (const cct::Error& e) {
    std::string msg = e.what();
    CHECK(msg.find("p.jsonl:4: /1/core: ") == 0);
    CHECK(msg.find("minimum") != std::string::npos);
  }
  // Validated against the whole schema when the mnemonic is unknown.
  CHECK_THROWS_AS(v.validate(replace(good, "pe_conv", "pe_cnv"), std::nullopt, "p.jsonl", 5), cct::Error);
  CHECK_NOTHROW(v.validate(good, std::nullopt, "p.jsonl", 6));
  // A line of the wrong mnemonic's shape fails the narrowed schema.
  CHECK_THROWS_AS(v.validate(good, Opcode::pe_cfg_fm, "p.jsonl", 7), cct::Error);
}

TEST_CASE("the schema pass over many lines reports the first failing line") {
  std::string line = format_program(parse_program(kConv, "x"), Syntax::JsonLines);
  line.pop_back();
  std::string bad = replace(line, "\"tile\": 0", "\"tile\": 0, \"core\": -1");
  const size_t n = 40000;  // enough for several threads
  std::vector<std::string> texts(n, line);
  texts[31000] = bad;
  texts[15000] = bad;
  std::vector<SchemaLine> lines;
  for (size_t i = 0; i < n; ++i) lines.push_back({texts[i], Opcode::pe_conv, static_cast<long>(i + 1)});
  try {
    validate_lines("isa", lines, "big.jsonl");
    FAIL("no error");
  } catch (const cct::Error& e) {
    CHECK(std::string(e.what()).find("big.jsonl:15001: /1/core") == 0);
  }
  texts[15000] = line;
  texts[31000] = line;
  // The views into the two reassigned strings have the old, longer size.
  lines[15000].text = texts[15000];
  lines[31000].text = texts[31000];
  CHECK_NOTHROW(validate_lines("isa", lines, "big.jsonl"));
}

TEST_CASE("an error late in a large JSON Lines file stops the schema workers cleanly") {
  std::string line = format_program(parse_program(kConv, "x"), Syntax::JsonLines);
  std::string text;
  for (int i = 0; i < 30000; ++i) text += line;
  CHECK(parse_program(text, "big.jsonl", true).size() == 30000);
  std::string bad = replace(line, "\"PS\": 0", "\"PS\": 0.5");
  text.replace(25000 * line.size(), line.size(), bad);
  CHECK(error_of(text).find("prog.asm:25001: pe_conv: parameter 'PS': expected an integer, got 0.5") == 0);
}

TEST_CASE("a UTF-8 byte-order mark before the first line is skipped, as by every JSON reader") {
  const std::string bom = "\xEF\xBB\xBF";
  std::string jsonl = format_program(parse_program(kConv + kFm, "x"), Syntax::JsonLines);
  for (const std::string& text : {kConv + kFm, jsonl}) {
    Syntax syntax;
    Program p = parse_program(bom + text, "prog.asm", true, &syntax);
    CHECK(p.instructions.size() == 2);
    CHECK(format_program(p, syntax) == text);
  }
  // Anywhere else it is not an instruction line.
  CHECK(error_of(kConv + bom + kFm).find("prog.asm:2: not an instruction line") == 0);
}

TEST_CASE("NUL bytes and control characters in quoted names are named as such") {
  using namespace std::string_literals;
  CHECK(error_of(replace(kConv, "'slyr'", "'sl\0yr'"s)).find("prog.asm:1: pe_conv: NUL byte inside a quoted name") == 0);
  CHECK(error_of(replace(kConv, "'slyr'", "'sl\x01yr'")).find("control character \\x01 inside a quoted name") !=
        std::string::npos);
  // In JSON Lines the schema pass's parser names them too.
  std::string jsonl = format_program(parse_program(kConv, "x"), Syntax::JsonLines);
  jsonl.pop_back();
  LineSchemaValidator v("isa");
  try {
    v.validate(replace(jsonl, "\"slyr\"", "\"sl\0yr\""s), Opcode::pe_conv, "p.jsonl", 7);
    FAIL("no error");
  } catch (const cct::Error& e) {
    INFO(std::string(e.what()));
    CHECK(std::string(e.what()).find("p.jsonl:7: column 17: invalid JSON: NUL byte inside a string") == 0);
  }
}

TEST_CASE("floats are read like the JSON readers read them: below the range as zero, beyond it refused") {
  CHECK(error_of(replace(kFm, "'PADV': -14.0", "'PADV': 1e-400")) == "");
  CHECK(error_of(replace(kFm, "'PADV': -14.0", "'PADV': 0e999")) == "");
  CHECK(error_of(replace(kFm, "'PADV': -14.0", "'PADV': 1.8e308")).find("number 1.8e308 is out of range") !=
        std::string::npos);
}
