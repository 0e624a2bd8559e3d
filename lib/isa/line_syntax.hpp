// The line machinery of ISA programs and traces: one tokenizer and one
// writer for both syntaxes of an instruction line,
//   legacy      [pe_conv, {'slyr': 1, ...}, {'PS': 0, 'DF': <DataFmt.INT8: 1>, ...}]
//   JSON Lines  ["pe_conv", {"slyr": 1, ...}, {"PS": 0, "DF": "DataFmt.INT8", ...}]
// Program and trace readers compose these pieces; nothing else parses lines.
//
// Reading is strict and table-driven: keys may come in any order, but every
// parameter of the opcode must be present exactly once with its kind, and
// errors say "file:line: mnemonic: what (column N)". Writing is canonical:
// the key order of the table and Python's spacing and float repr.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "isa/program.hpp"
#include "support/json_parse.hpp"

namespace cct::isa {

enum class Syntax : uint8_t { Legacy, JsonLines };

std::string_view syntax_name(Syntax s);  // "legacy", "jsonl"
// Accepts "legacy" and "jsonl" (also "json"); anything else is a usage error.
Syntax syntax_from_name(std::string_view name);

// The syntax of one line, judged by the first token after '[':
// a double quote means JSON Lines, a letter means legacy.
std::optional<Syntax> detect_line_syntax(std::string_view line);

// A number as written: an integer, or a float (then `f` holds it).
struct NumberToken {
  int64_t i = 0;
  double f = 0.0;
  bool is_float = false;
};

// Tokenizer over one line. Every failure throws Error(kExitInvalidInput).
class LineReader {
 public:
  LineReader(std::string_view line, Syntax syntax, const std::string& file, long line_no)
      : begin_(line.data()), p_(line.data()), end_(line.data() + line.size()), syntax_(syntax), file_(file),
        line_no_(line_no) {}

  Syntax syntax() const { return syntax_; }
  long line_no() const { return line_no_; }

  // Whole-instruction pieces, in line order.
  void open_line();                  // '['
  Opcode mnemonic();                 // bare word (legacy) or "word" (JSON); sets the message context
  void separator();                  // ','
  void mapping(Mapping& m);          // {'slyr': ..., 'core': ...}
  void params(Instruction& inst);    // every parameter of inst.op(), checked against the table
  void close_line();                 // ']' and nothing after it

  // Generic pieces for extra dictionaries (the trace's timing dictionary).
  // read_object() parses '{' key ':' value (',' key ':' value)* '}', calling
  // on_key(key) after each ':'; the callback must consume the value.
  template <class F>
  void read_object(const char* what, F&& on_key);
  int64_t read_int();
  NumberToken read_number();
  // '[' int (',' int)* ']' with exactly n elements, written to out.
  void read_int_array(int64_t* out, int n);

  // Throws "file:line: <context>what (column N)".
  [[noreturn]] void fail(std::string_view what) const;
  // Messages about the value of a key name the key.
  [[noreturn]] void fail_value(std::string_view what) const;
  // Names what the keys of the next read_object() are, for messages.
  void set_key_kind(std::string_view kind) { key_kind_ = kind; }

 private:
  void skip_ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t')) ++p_;
  }
  bool at(char c) {
    skip_ws();
    return p_ < end_ && *p_ == c;
  }
  void expect(char c, const char* what) {
    skip_ws();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return;
    }
    expect_failed(what);
  }
  [[noreturn]] void expect_failed(const char* what) const;
  std::string_view read_key();
  std::string_view read_quoted(std::string_view what);
  NumberToken scan_number();
  std::string_view token() const { return {tok_begin_, static_cast<size_t>(tok_end_ - tok_begin_)}; }
  int32_t read_int32();
  bool read_bool();
  int32_t read_enum(EnumClass c);
  void read_queue_list(QueueList& out);
  void read_layer_list(LayerList& out);
  void read_value(Instruction& inst, int index);
  std::string describe_here() const;

  const char* begin_;
  const char* p_;
  const char* end_;
  Syntax syntax_;
  const std::string& file_;
  long line_no_;
  std::string_view context_;  // mnemonic, once known
  std::string_view key_;      // key whose value is being read
  std::string_view key_kind_; // "parameter", "mapping key" or empty
  const char* tok_begin_ = nullptr;  // last number token, for messages
  const char* tok_end_ = nullptr;
};

template <class F>
void LineReader::read_object(const char* what, F&& on_key) {
  skip_ws();
  if (p_ >= end_ || *p_ != '{') fail("expected '{' opening " + std::string(what) + ", found " + describe_here());
  ++p_;
  if (at('}')) {
    ++p_;
    return;
  }
  for (;;) {
    std::string_view key = read_key();
    key_ = key;
    expect(':', "':' after a key");
    on_key(key);
    key_ = {};
    skip_ws();
    if (p_ < end_ && *p_ == ',') {
      ++p_;
      continue;
    }
    if (p_ < end_ && *p_ == '}') {
      ++p_;
      return;
    }
    fail(p_ >= end_ ? std::string("line ends inside ") + std::string(what)
                    : "expected ',' or '}' in " + std::string(what) + ", found " + describe_here());
  }
}

// Writers: canonical text in the given syntax.
void append_mapping(std::string& out, const Mapping& m, Syntax s);
void append_params(std::string& out, const Instruction& inst, Syntax s);
// "'name': " or "\"name\": "
void append_key(std::string& out, std::string_view name, Syntax s);
void append_int(std::string& out, int64_t v);
// Python repr of a float (also valid JSON for finite values).
void append_float(std::string& out, double v);
// "[mn, " or "[\"mn\", " : the opening of a line.
void append_line_start(std::string& out, Opcode op, Syntax s);
// One full instruction line, with its newline.
void append_instruction(std::string& out, const Instruction& inst, Syntax s);

// Splits text into lines and calls f(line, line_no, syntax) for each
// non-blank one. The syntax is detected on the first line and must stay the
// same; "\r\n" endings are accepted, and a UTF-8 byte-order mark before the
// first line, as in every JSON reader. Returns the syntax (nullopt: no lines).
template <class F>
std::optional<Syntax> for_each_line(std::string_view text, const std::string& file, F&& f);

// Number of '\n' in text, to size vectors before reading.
size_t count_lines(std::string_view text);

namespace detail {
[[noreturn]] void fail_line(const std::string& file, long line_no, std::string_view what);
}

template <class F>
std::optional<Syntax> for_each_line(std::string_view text, const std::string& file, F&& f) {
  std::optional<Syntax> syntax;
  long line_no = 0;
  text = skip_utf8_bom(text);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t stop = nl == std::string_view::npos ? text.size() : nl;
    std::string_view line = text.substr(pos, stop - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    std::optional<Syntax> s = detect_line_syntax(line);
    if (!s) detail::fail_line(file, line_no, "not an instruction line: expected '[' followed by a mnemonic");
    if (!syntax) {
      syntax = s;
    } else if (*s != *syntax) {
      detail::fail_line(file, line_no,
                        "line is in " + std::string(syntax_name(*s)) + " syntax but the file started in " +
                            std::string(syntax_name(*syntax)) + " syntax");
    }
    f(line, line_no, *syntax);
  }
  return syntax;
}

}  // namespace cct::isa
