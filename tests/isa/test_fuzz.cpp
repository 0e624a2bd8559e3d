// Random mutations of reference lines (fixed seed): the reader must either
// accept a line or reject it with an input error, never crash or hang; what
// it accepts must pass the schema and survive a write/read round trip.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "isa/line_schema.hpp"
#include "isa/program_io.hpp"
#include "support/error.hpp"
#include "testing.hpp"

using namespace cct::isa;

namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    out.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng_() % n); }

  std::string mutate(std::string s) {
    static const std::string interesting = "[]{},:'\"<>.-+0123456789eE TrueFalsnul\\\x01\x7f\xff";
    int edits = 1 + static_cast<int>(below(3));
    for (int e = 0; e < edits; ++e) {
      size_t pos = below(s.size() + 1);
      switch (below(7)) {
        case 0:  // delete a range
          if (!s.empty()) s.erase(std::min(pos, s.size() - 1), 1 + below(8));
          break;
        case 1:  // insert an interesting byte
          s.insert(pos, 1, interesting[below(interesting.size())]);
          break;
        case 2:  // overwrite with any byte
          if (!s.empty()) s[std::min(pos, s.size() - 1)] = static_cast<char>(below(256));
          break;
        case 3:  // truncate
          s.resize(pos);
          break;
        case 4: {  // duplicate a segment
          size_t len = below(30);
          if (pos < s.size()) s.insert(pos, s.substr(pos, len));
          break;
        }
        case 5:  // digits: make numbers long or odd
          s.insert(pos, std::string(1 + below(25), static_cast<char>('0' + below(10))));
          break;
        default:  // nesting
          s.insert(pos, std::string(1 + below(50), below(2) ? '[' : '{'));
          break;
      }
    }
    return s;
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace

TEST_CASE("mutated reference lines never crash the reader") {
  std::vector<std::string> legacy_lines, jsonl_lines;
  for (const std::string& path : cct::testing::reference_files("gemini-ir/asm")) {
    std::string text = cct::testing::read_file(path);
    for (auto& l : split_lines(text)) legacy_lines.push_back(l);
    std::string jsonl = format_program(parse_program(text, path), Syntax::JsonLines);
    for (auto& l : split_lines(jsonl)) jsonl_lines.push_back(l);
  }
  REQUIRE(!legacy_lines.empty());
  Mutator m(20240611);
  LineSchemaValidator schema("isa");
  int accepted = 0, rejected = 0;
  const int rounds = 6000;
  for (int i = 0; i < rounds; ++i) {
    bool json = i % 2 == 1;
    const auto& pool = json ? jsonl_lines : legacy_lines;
    std::string line = m.mutate(pool[m.below(pool.size())]);
    try {
      Syntax syntax;
      Program p = parse_program(line + "\n", "fuzz", false, &syntax);
      ++accepted;
      // Whatever the reader accepts is valid for the schema and round-trips.
      std::string jl = format_program(p, Syntax::JsonLines);
      jl.pop_back();
      CHECK_NOTHROW(schema.validate(jl, p.instructions[0].op(), "fuzz", i));
      if (syntax == Syntax::JsonLines) CHECK_NOTHROW(schema.validate(line, p.instructions[0].op(), "fuzz", i));
      CHECK(parse_program(format_program(p, syntax), "again", true) == p);
    } catch (const cct::Error& e) {
      ++rejected;
      CHECK(e.code() == cct::kExitInvalidInput);
      CHECK(std::string(e.what()).find("fuzz") == 0);
    }
  }
  MESSAGE("fuzz: " << accepted << " accepted, " << rejected << " rejected");
  CHECK(rejected > rounds / 2);
  CHECK(accepted > 0);
}
