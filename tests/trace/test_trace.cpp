#include <doctest/doctest.h>

#include <random>
#include <string>

#include "isa/line_schema.hpp"
#include "isa/program_io.hpp"
#include "support/error.hpp"
#include "testing.hpp"
#include "trace/trace.hpp"

using namespace cct;
using namespace cct::trace;

namespace {

std::string base_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

std::string error_of(const std::string& text) {
  try {
    parse_trace(text, "t.trace", true);
  } catch (const Error& e) {
    CHECK(e.code() == kExitInvalidInput);
    return e.what();
  }
  return "";
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  size_t pos = s.find(from);
  REQUIRE_MESSAGE(pos != std::string::npos, from);
  return s.replace(pos, from.size(), to);
}

const std::string kLine1 =
    "[ct_st, {'slyr': 0, 'clyr': [], 's_flyr': 0, 'c_flyr': [], 'wkl': 0, 'tile': -1}, {'inst_idx': 1, 'time': [0, "
    "33]}, {'Prev_Insts': [], 'Next_Insts': ['LW']}]\n";
const std::string kLine2 =
    "[ct_bc, {'slyr': 0, 'clyr': [], 's_flyr': 0, 'c_flyr': [], 'wkl': 0, 'tile': -1}, {'inst_idx': 2, 'time': [33, "
    "65]}, {'BCS': 0, 'BufCut': [0, 8191, 0, 0, 0, 0, 0, 0], 'Prev_Insts': [], 'Next_Insts': []}]\n";

}  // namespace

TEST_CASE("every reference trace round-trips byte for byte in both syntaxes") {
  for (const std::string& path : testing::reference_files("gemini-ir/trace")) {
    CAPTURE(path);
    std::string text = testing::read_file(path);
    Syntax syntax = Syntax::JsonLines;
    Trace tr = parse_trace(text, base_name(path), true, &syntax);
    CHECK(syntax == Syntax::Legacy);
    REQUIRE(tr.size() > 0);
    CHECK(format_trace(tr, Syntax::Legacy) == text);
    std::string jsonl = format_trace(tr, Syntax::JsonLines);
    Trace back = parse_trace(jsonl, base_name(path) + ".jsonl", true, &syntax);
    CHECK(syntax == Syntax::JsonLines);
    CHECK(back == tr);
    CHECK(format_trace(back, Syntax::JsonLines) == jsonl);
    CHECK(format_trace(back, Syntax::Legacy) == text);
    // inst_idx is the 1-based line number in the reference traces.
    for (size_t i = 0; i < tr.size(); ++i) CHECK(tr.timing[i].inst_idx == static_cast<int64_t>(i + 1));
    CHECK(tr.total_cycles() > 1000000);
  }
}

TEST_CASE("a reference trace carries exactly the program of its asm file") {
  std::string ref = testing::reference_dir() + "/gemini-ir";
  Trace tr = read_trace(ref + "/trace/int8_resnet34.sim_quantized_b1_c1_bw16_sim.txt");
  isa::Program prog = isa::read_program(ref + "/asm/int8_resnet34.sim_quanti_b1_c1_bw16_asm.txt");
  CHECK(tr.program == prog);
  CHECK(tr.timing[0].start == 0);
  CHECK(tr.timing[0].end == 33);
  CHECK(tr.timing[6].duration() == 23549 - 161);  // line 7: lda_mov, time [161, 23549]
}

TEST_CASE("optional timing fields round-trip and are written only when set") {
  Trace tr = parse_trace(kLine1 + kLine2, "t");
  tr.timing[1].set_issue(30);
  tr.timing[1].set_energy(1234.5);
  tr.timing[1].set_bytes(4096);
  tr.timing[1].set_ops(0);
  tr.program.instructions[1].mapping.core = 3;
  for (Syntax s : {Syntax::Legacy, Syntax::JsonLines}) {
    std::string text = format_trace(tr, s);
    CHECK(text.find(s == Syntax::Legacy ? "{'inst_idx': 1, 'time': [0, 33]}" : "{\"inst_idx\": 1, \"time\": [0, 33]}") !=
          std::string::npos);
    CHECK(text.find(s == Syntax::Legacy
                        ? "{'inst_idx': 2, 'time': [33, 65], 'issue': 30, 'energy': 1234.5, 'bytes': 4096, 'ops': 0}"
                        : "{\"inst_idx\": 2, \"time\": [33, 65], \"issue\": 30, \"energy\": 1234.5, \"bytes\": 4096, "
                          "\"ops\": 0}") != std::string::npos);
    Trace back = parse_trace(text, "t", true);
    CHECK(back == tr);
    CHECK(format_trace(back, s) == text);
  }
}

TEST_CASE("malformed timing dictionaries") {
  CHECK(error_of(kLine1 + kLine2) == "");
  CHECK(error_of(replace(kLine1, "'inst_idx': 1, ", "")).find("t.trace:1: ct_st: timing: missing key 'inst_idx'") ==
        0);
  CHECK(error_of(replace(kLine1, ", 'time': [0, 33]", "")).find("timing: missing key 'time'") != std::string::npos);
  CHECK(error_of(replace(kLine1, "[0, 33]", "[40, 33]")).find("[40, 33] ends before it starts") != std::string::npos);
  CHECK(error_of(replace(kLine1, "[0, 33]", "[0, 33, 5]")).find("expected 2 integers, got more") !=
        std::string::npos);
  CHECK(error_of(replace(kLine1, "[0, 33]", "[0]")).find("expected 2 integers, got 1") != std::string::npos);
  CHECK(error_of(replace(kLine1, "[0, 33]", "[-1, 33]")).find("cannot be negative") != std::string::npos);
  CHECK(error_of(kLine2 + kLine1).find("t.trace:2: ct_st: timing key 'inst_idx': inst_idx 1 does not follow 2") ==
        0);
  CHECK(error_of(replace(kLine1, "'inst_idx': 1", "'inst_idx': 0")).find("does not follow 0") != std::string::npos);
  CHECK(error_of(replace(kLine1, "'time'", "'tim'")).find("unknown timing key 'tim'") != std::string::npos);
  CHECK(error_of(replace(kLine1, "'time': [0, 33]", "'time': [0, 33], 'time': [0, 33]"))
            .find("duplicate timing key 'time'") != std::string::npos);
  CHECK(error_of(replace(kLine1, "[0, 33]}", "[5, 33], 'issue': 6}")).find("issue cycle 6 is after the start cycle 5") !=
        std::string::npos);
  CHECK(error_of(replace(kLine1, "[0, 33]}", "[0, 33], 'energy': -1.0}")).find("energy cannot be negative") !=
        std::string::npos);
  CHECK(error_of(replace(kLine1, "[0, 33]", "[0.0, 33]")).find("expected an integer, got 0.0") != std::string::npos);
  // A program line is not a trace line.
  CHECK(error_of(replace(kLine1, "{'inst_idx': 1, 'time': [0, 33]}, ", ""))
            .find("'Prev_Insts' is a parameter: a trace line needs the timing dictionary") != std::string::npos);
  CHECK(error_of("").find("t.trace: no instructions") == 0);
  CHECK(error_of(kLine1.substr(0, 100)).find("t.trace:1: ct_st: ") == 0);
}

TEST_CASE("the trace schema checks the timing dictionary") {
  Trace tr = parse_trace(kLine1, "t");
  std::string line = format_trace(tr, Syntax::JsonLines);
  line.pop_back();
  isa::LineSchemaValidator v("trace");
  CHECK_NOTHROW(v.validate(line, isa::Opcode::ct_st, "t.jsonl", 1));
  try {
    v.validate(replace(line, "\"time\": [0, 33]", "\"time\": [0, 33], \"power\": 1"), isa::Opcode::ct_st, "t.jsonl",
               1);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("t.jsonl:1: /2/power: ") == 0);
  }
  CHECK_THROWS_AS(v.validate(replace(line, "\"inst_idx\": 1", "\"inst_idx\": 0"), isa::Opcode::ct_st, "t.jsonl", 1),
                  Error);
}

TEST_CASE("schemas/trace.schema.json is the schema generated from the tables") {
  std::string generated = trace_schema_text();
  std::string on_disk = testing::read_file(testing::source_dir() + "/schemas/trace.schema.json");
  if (on_disk != generated) {
    std::string out = testing::temp_dir("trace_schema") + "/trace.schema.json";
    testing::write_file(out, generated);
    FAIL("schemas/trace.schema.json is out of date; the generated schema is in " << out);
  }
}

TEST_CASE("write_trace writes what read_trace reads") {
  Trace tr = read_trace(testing::reference_dir() + "/gemini-ir/trace/int8_resnet50.sim_quantized_b4_c1_bw16_sim.txt");
  std::string dir = testing::temp_dir("trace_write");
  write_trace(dir + "/t.jsonl.zst", tr);
  CHECK(read_trace(dir + "/t.jsonl.zst") == tr);
  write_trace(dir + "/t.txt", tr, Syntax::Legacy);
  CHECK(testing::read_file(dir + "/t.txt") ==
        testing::read_file(testing::reference_dir() + "/gemini-ir/trace/int8_resnet50.sim_quantized_b4_c1_bw16_sim.txt"));
  // A broken trace (end before start) is refused and nothing is written.
  tr.timing[3].end = tr.timing[3].start - 1;
  CHECK_THROWS_AS(write_trace(dir + "/bad.jsonl", tr), Error);
  CHECK(testing::read_file(dir + "/bad.jsonl").empty());
}

TEST_CASE("mutated reference trace lines never crash the reader") {
  std::vector<std::string> lines;
  for (const std::string& path : testing::reference_files("gemini-ir/trace")) {
    std::string text = testing::read_file(path);
    std::string jsonl = format_trace(parse_trace(text, path), Syntax::JsonLines);
    for (const std::string* t : {&text, &jsonl}) {
      size_t pos = 0;
      for (int i = 0; i < 200 && pos < t->size(); ++i) {
        size_t nl = t->find('\n', pos);
        lines.push_back(t->substr(pos, nl - pos));
        pos = nl + 1;
      }
    }
  }
  std::mt19937_64 rng(7);
  int accepted = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string s = lines[rng() % lines.size()];
    for (int e = 0; e < 2; ++e) {
      size_t pos = rng() % (s.size() + 1);
      switch (rng() % 4) {
        case 0: s.erase(std::min(pos, s.size()), 1 + rng() % 5); break;
        case 1: s.insert(pos, 1, "[]{},:'\"0-9. xT"[rng() % 15]); break;
        case 2: s.resize(pos); break;
        default: s.insert(pos, std::string(1 + rng() % 12, static_cast<char>('0' + rng() % 10))); break;
      }
    }
    try {
      Trace tr = parse_trace(s + "\n", "fuzz", true);
      ++accepted;
      CHECK(parse_trace(format_trace(tr, Syntax::JsonLines), "again", true) == tr);
    } catch (const Error& e) {
      CHECK(e.code() == kExitInvalidInput);
    }
  }
  MESSAGE("trace fuzz: " << accepted << " of 3000 mutated lines accepted");
}

TEST_CASE("reference traces obey the execution rules; broken timings are found") {
  for (const std::string& path : testing::reference_files("gemini-ir/trace")) {
    CAPTURE(path);
    Trace tr = read_trace(path);
    isa::CheckReport r = check_trace(tr);
    CHECK_MESSAGE(r.diagnostics.empty(), r.text(path));
  }
  Trace tr = read_trace(testing::reference_dir() + "/gemini-ir/trace/int8_resnet34.sim_quantized_b1_c1_bw16_sim.txt");
  // Line 7 (lda_mov, [161, 23549]) pops the CT->LD token pushed by line 5 (ct_bc, ends at 161).
  Trace early = tr;
  early.timing[6].start = 100;
  std::string text = check_trace(early).text("t");
  CHECK(text.find("t:7: error: lda_mov on core 0 starts at 100, before the CT->LD token it pops was pushed (ct_bc, "
                  "instruction 5, ended at 161)") != std::string::npos);
  // Two instructions of one queue may not overlap.
  Trace overlap = tr;
  overlap.timing[3].start = 70;  // ct_bc [95, 126] moved before the previous ct_bc ended (95)
  CHECK(check_trace(overlap).text("t").find("t:4: error: ct_bc on core 0 starts at 70, before the previous "
                                            "instruction of queue CT (instruction 3) ended at 95") != std::string::npos);
}

TEST_CASE("a UTF-8 byte-order mark before the first trace line is skipped") {
  Syntax syntax;
  Trace t = parse_trace("\xEF\xBB\xBF" + kLine1 + kLine2, "t.trace", true, &syntax);
  CHECK(t.timing.size() == 2);
  CHECK(format_trace(t, syntax) == kLine1 + kLine2);
}
