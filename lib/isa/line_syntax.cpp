#include "isa/line_syntax.hpp"

#include <charconv>
#include <cmath>
#include <cstring>

#include "support/error.hpp"
#include "support/json_parse.hpp"
#include "support/pyfloat.hpp"

namespace cct::isa {

namespace {

bool is_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A piece of input in a message.
std::string printable(std::string_view s, size_t max_len = 24) { return printable_excerpt(s, max_len, false); }

std::string member_list(EnumClass c) {
  std::string s;
  for (const auto& m : enum_members(c)) {
    if (!s.empty()) s += ", ";
    s += m.name;
  }
  return s;
}

std::string queue_list_text() {
  std::string s;
  for (int q = 0; q < kQueueCount; ++q) {
    if (q) s += ", ";
    s += queue_name(static_cast<Queue>(q));
  }
  return s;
}

}  // namespace

namespace detail {
void fail_line(const std::string& file, long line_no, std::string_view what) {
  throw_input_error(at_line(file, line_no, what));
}
}  // namespace detail

std::string_view syntax_name(Syntax s) { return s == Syntax::Legacy ? "legacy" : "jsonl"; }

Syntax syntax_from_name(std::string_view name) {
  if (name == "legacy") return Syntax::Legacy;
  if (name == "jsonl" || name == "json") return Syntax::JsonLines;
  throw_usage_error("unknown syntax '" + std::string(name) + "' (expected 'legacy' or 'jsonl')");
}

std::optional<Syntax> detect_line_syntax(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i >= line.size() || line[i] != '[') return std::nullopt;
  ++i;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i >= line.size()) return std::nullopt;
  if (line[i] == '"') return Syntax::JsonLines;
  if (is_ident(line[i])) return Syntax::Legacy;
  return std::nullopt;
}

size_t count_lines(std::string_view text) {
  size_t n = 0;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    const void* hit = std::memchr(p, '\n', static_cast<size_t>(end - p));
    if (!hit) break;
    ++n;
    p = static_cast<const char*>(hit) + 1;
  }
  return n;
}

// --- LineReader: errors ---------------------------------------------------------

std::string LineReader::describe_here() const {
  if (p_ >= end_) return "end of line";
  const char* q = p_;
  while (q < end_ && q - p_ < 24 && *q != ',' && *q != ']' && *q != '}') ++q;
  if (q == p_) ++q;
  return "'" + printable(std::string_view(p_, static_cast<size_t>(q - p_))) + "'";
}

void LineReader::fail(std::string_view what) const {
  std::string msg;
  if (!context_.empty()) {
    msg += context_;
    msg += ": ";
  }
  msg += what;
  msg += " (column " + std::to_string(p_ - begin_ + 1) + ")";
  throw_input_error(at_line(file_, line_no_, msg));
}

void LineReader::fail_value(std::string_view what) const {
  std::string msg;
  if (!key_.empty()) {
    if (!key_kind_.empty()) {
      msg += key_kind_;
      msg += ' ';
    }
    msg += "'" + printable(key_) + "': ";
  }
  msg += what;
  fail(msg);
}

void LineReader::expect_failed(const char* what) const {
  fail("expected " + std::string(what) + ", found " + describe_here());
}

// --- LineReader: tokens ---------------------------------------------------------

std::string_view LineReader::read_quoted(std::string_view what) {
  skip_ws();
  char quote = syntax_ == Syntax::Legacy ? '\'' : '"';
  if (p_ >= end_ || *p_ != quote)
    fail("expected " + std::string(what) + (syntax_ == Syntax::Legacy ? " in single quotes" : " in double quotes") +
         ", found " + describe_here());
  const char* start = ++p_;
  const char* q = start;
  const char* const end = end_;
  while (q < end && *q != quote && *q != '\\' && static_cast<unsigned char>(*q) >= 0x20) ++q;
  p_ = q;
  if (q < end && *q == '\\') fail("escape sequences are not allowed in names");
  if (q < end && *q == '\0') fail("NUL byte inside a quoted name");
  if (q < end && static_cast<unsigned char>(*q) < 0x20)
    fail("control character \\x" + printable(std::string_view(q, 1)).substr(2) + " inside a quoted name");
  if (q >= end) fail("line ends inside a quoted name");
  std::string_view s(start, static_cast<size_t>(p_ - start));
  ++p_;
  return s;
}

std::string_view LineReader::read_key() { return read_quoted("a key"); }

NumberToken LineReader::scan_number() {
  skip_ws();
  const char* start = p_;
  const char* q = p_;
  bool negative = false;
  if (q < end_ && *q == '-') {
    negative = true;
    ++q;
  }
  const char* digits = q;
  uint64_t acc = 0;
  bool overflow = false;
  while (q < end_ && is_digit(*q)) {
    unsigned d = static_cast<unsigned>(*q - '0');
    if (acc > (UINT64_MAX - d) / 10) {
      overflow = true;
    } else {
      acc = acc * 10 + d;
    }
    ++q;
  }
  if (q == digits) fail_value("expected a number, found " + describe_here());
  if (q - digits > 1 && *digits == '0') fail_value("leading zeros are not allowed in numbers");
  bool is_float = false;
  if (q < end_ && *q == '.') {
    is_float = true;
    ++q;
    const char* frac = q;
    while (q < end_ && is_digit(*q)) ++q;
    if (q == frac) {
      p_ = q;
      fail_value("expected digits after '.'");
    }
  }
  if (q < end_ && (*q == 'e' || *q == 'E')) {
    is_float = true;
    ++q;
    if (q < end_ && (*q == '+' || *q == '-')) ++q;
    const char* exp = q;
    while (q < end_ && is_digit(*q)) ++q;
    if (q == exp) {
      p_ = q;
      fail_value("expected digits in the exponent");
    }
  }
  tok_begin_ = start;
  tok_end_ = q;
  NumberToken n;
  if (is_float) {
    // The JSON readers' conversion: correctly rounded, underflow to zero.
    std::optional<double> d = json_double(token());
    if (!d) fail_value("number " + printable(token()) + " is out of range");
    n.f = *d;
    n.is_float = true;
  } else {
    constexpr uint64_t kMaxPositive = static_cast<uint64_t>(INT64_MAX);
    if (overflow || acc > kMaxPositive + (negative ? 1 : 0))
      fail_value("integer " + printable(token()) + " is out of range (64-bit signed)");
    n.i = negative ? static_cast<int64_t>(0 - acc) : static_cast<int64_t>(acc);
  }
  p_ = q;
  return n;
}

int64_t LineReader::read_int() {
  NumberToken n = scan_number();
  if (n.is_float) {
    p_ = tok_begin_;
    fail_value("expected an integer, got " + printable(token()));
  }
  return n.i;
}

int32_t LineReader::read_int32() {
  int64_t v = read_int();
  if (v < INT32_MIN || v > INT32_MAX) {
    p_ = tok_begin_;
    fail_value("integer " + std::to_string(v) + " is out of range (32-bit signed)");
  }
  return static_cast<int32_t>(v);
}

NumberToken LineReader::read_number() { return scan_number(); }

bool LineReader::read_bool() {
  skip_ws();
  auto word = [&](std::string_view w) {
    if (static_cast<size_t>(end_ - p_) >= w.size() && std::string_view(p_, w.size()) == w &&
        (p_ + w.size() == end_ || !is_ident(p_[w.size()]))) {
      p_ += w.size();
      return true;
    }
    return false;
  };
  bool legacy = syntax_ == Syntax::Legacy;
  if (word(legacy ? "True" : "true")) return true;
  if (word(legacy ? "False" : "false")) return false;
  fail_value(std::string("expected ") + (legacy ? "True or False" : "true or false") + ", found " + describe_here());
}

int32_t LineReader::read_enum(EnumClass c) {
  skip_ws();
  const char* start = p_;
  std::string_view cls, name;
  bool legacy = syntax_ == Syntax::Legacy;
  int64_t written_value = 0;
  if (legacy) {
    // <Class.NAME: value>
    if (p_ >= end_ || *p_ != '<')
      fail_value("expected an enum like <" + std::string(enum_class_name(c)) + "." +
                 std::string(enum_members(c).front().name) + ": " + std::to_string(enum_members(c).front().value) +
                 ">, found " + describe_here());
    ++p_;
    const char* s = p_;
    while (p_ < end_ && is_ident(*p_)) ++p_;
    cls = std::string_view(s, static_cast<size_t>(p_ - s));
    if (p_ >= end_ || *p_ != '.') fail_value("malformed enum: expected '.' after the class name");
    ++p_;
    s = p_;
    while (p_ < end_ && is_ident(*p_)) ++p_;
    name = std::string_view(s, static_cast<size_t>(p_ - s));
    expect(':', "':' in the enum");
    written_value = read_int();
    expect('>', "'>' closing the enum");
  } else {
    std::string_view q;
    if (p_ >= end_ || *p_ != '"')
      fail_value("expected an enum string like \"" + std::string(enum_class_name(c)) + "." +
                 std::string(enum_members(c).front().name) + "\", found " + describe_here());
    q = read_quoted("an enum");
    size_t dot = q.find('.');
    if (dot == std::string_view::npos) {
      p_ = start;
      fail_value("malformed enum \"" + printable(q) + "\": expected \"Class.NAME\"");
    }
    cls = q.substr(0, dot);
    name = q.substr(dot + 1);
  }
  auto full = [&] { return printable(cls) + "." + printable(name); };
  if (cls != enum_class_name(c)) {
    p_ = start;
    fail_value("expected a " + std::string(enum_class_name(c)) + ", got " + full());
  }
  const EnumMember* m = find_enum_member(c, name);
  if (!m) {
    p_ = start;
    fail_value(full() + " is not a " + std::string(enum_class_name(c)) + " (members: " + member_list(c) + ")");
  }
  if (legacy && written_value != m->value) {
    p_ = start;
    fail_value(full() + " has the value " + std::to_string(m->value) + ", not " + std::to_string(written_value));
  }
  return m->value;
}

void LineReader::read_queue_list(QueueList& out) {
  out.clear();
  expect('[', "'[' opening a list of queue names");
  if (at(']')) {
    ++p_;
    return;
  }
  for (;;) {
    const char* start = (skip_ws(), p_);
    std::string_view name = read_quoted("a queue name");
    std::optional<Queue> q = find_queue(name);
    if (!q) {
      p_ = start;
      fail_value("'" + printable(name) + "' is not a queue (" + queue_list_text() + ")");
    }
    if (!out.push_back(*q)) {
      p_ = start;
      fail_value("more than " + std::to_string(kMaxQueueList) + " queue names");
    }
    skip_ws();
    if (p_ < end_ && *p_ == ',') {
      ++p_;
      continue;
    }
    expect(']', "',' or ']' in the list of queue names");
    return;
  }
}

void LineReader::read_layer_list(LayerList& out) {
  out.clear();
  expect('[', "'[' opening a list of integers");
  if (at(']')) {
    ++p_;
    return;
  }
  for (;;) {
    const char* start = (skip_ws(), p_);
    int32_t v = read_int32();
    if (!out.push_back(v)) {
      p_ = start;
      fail_value("more than " + std::to_string(kMaxMappingList) + " entries");
    }
    skip_ws();
    if (p_ < end_ && *p_ == ',') {
      ++p_;
      continue;
    }
    expect(']', "',' or ']' in the list");
    return;
  }
}

void LineReader::read_int_array(int64_t* out, int n) {
  expect('[', "'[' opening a list of integers");
  for (int i = 0; i < n; ++i) {
    if (i) {
      skip_ws();
      if (p_ < end_ && *p_ == ']') fail_value("expected " + std::to_string(n) + " integers, got " + std::to_string(i));
      expect(',', "',' between list elements");
    }
    out[i] = read_int();
  }
  skip_ws();
  if (p_ < end_ && *p_ == ',') fail_value("expected " + std::to_string(n) + " integers, got more");
  expect(']', "']' closing the list");
}

// --- LineReader: instruction pieces ----------------------------------------------

void LineReader::open_line() { expect('[', "'[' at the start of an instruction"); }

Opcode LineReader::mnemonic() {
  skip_ws();
  std::string_view mn;
  const char* start = p_;
  if (syntax_ == Syntax::Legacy) {
    while (p_ < end_ && is_ident(*p_)) ++p_;
    mn = std::string_view(start, static_cast<size_t>(p_ - start));
    if (mn.empty()) fail("expected a mnemonic, found " + describe_here());
  } else {
    mn = read_quoted("a mnemonic");
  }
  std::optional<Opcode> op = find_opcode(mn);
  if (!op) {
    p_ = start;
    fail("unknown mnemonic '" + printable(mn, 40) + "'");
  }
  context_ = opcode_info(*op).mnemonic;
  return *op;
}

void LineReader::separator() {
  skip_ws();
  if (p_ >= end_) fail("line ends early: expected ','");
  expect(',', "','");
}

void LineReader::close_line() {
  expect(']', "']' closing the instruction");
  skip_ws();
  if (p_ < end_) fail("unexpected text after the instruction: " + describe_here());
}

void LineReader::mapping(Mapping& m) {
  enum : unsigned { kSlyr = 1, kClyr = 2, kSFlyr = 4, kCFlyr = 8, kWkl = 16, kTile = 32, kCore = 64 };
  unsigned seen = 0;
  key_kind_ = "mapping key";
  m.core_written = false;
  m.core = 0;
  read_object("the mapping", [&](std::string_view key) {
    unsigned bit = 0;
    if (key == "slyr") {
      bit = kSlyr;
      m.slyr = read_int32();
    } else if (key == "clyr") {
      bit = kClyr;
      read_layer_list(m.clyr);
    } else if (key == "s_flyr") {
      bit = kSFlyr;
      m.s_flyr = read_int32();
    } else if (key == "c_flyr") {
      bit = kCFlyr;
      read_layer_list(m.c_flyr);
    } else if (key == "wkl") {
      bit = kWkl;
      m.wkl = read_int32();
    } else if (key == "tile") {
      bit = kTile;
      m.tile = read_int32();
    } else if (key == "core") {
      bit = kCore;
      const char* start = p_;
      m.core = read_int32();
      if (m.core < 0) {
        p_ = start;
        skip_ws();
        fail_value("a core id cannot be negative");
      }
      m.core_written = true;
    } else {
      fail("unknown mapping key '" + printable(key) + "' (expected slyr, clyr, s_flyr, c_flyr, wkl, tile, core)");
    }
    if (seen & bit) fail("duplicate mapping key '" + std::string(key) + "'");
    seen |= bit;
  });
  static constexpr std::pair<unsigned, const char*> kRequired[] = {
      {kSlyr, "slyr"}, {kClyr, "clyr"}, {kSFlyr, "s_flyr"}, {kCFlyr, "c_flyr"}, {kWkl, "wkl"}, {kTile, "tile"}};
  key_kind_ = {};
  for (const auto& [bit, name] : kRequired)
    if (!(seen & bit)) fail(std::string("mapping: missing key '") + name + "'");
}

void LineReader::read_value(Instruction& inst, int index) {
  const ParamSpec& s = inst.info().params[index];
  switch (s.kind) {
    case ParamKind::Int: inst.raw_set_int(index, read_int()); return;
    case ParamKind::Number: {
      NumberToken n = read_number();
      if (n.is_float) {
        inst.raw_set_double(index, n.f);
      } else {
        inst.raw_set_int(index, n.i);
      }
      return;
    }
    case ParamKind::Bool: inst.raw_set_cell(index, 0, read_bool() ? 1 : 0); return;
    case ParamKind::Enum: inst.raw_set_cell(index, 0, read_enum(s.enums[0])); return;
    case ParamKind::IntList:
    case ParamKind::EnumList: {
      expect('[', s.kind == ParamKind::IntList ? "'[' opening a list of integers" : "'[' opening a list of enums");
      for (int e = 0; e < s.length; ++e) {
        if (e) {
          skip_ws();
          if (p_ < end_ && *p_ == ']')
            fail_value("expected " + std::to_string(s.length) + " elements, got " + std::to_string(e));
          expect(',', "',' between list elements");
        } else if (at(']')) {
          fail_value("expected " + std::to_string(s.length) + " elements, got 0");
        }
        int32_t v = s.kind == ParamKind::IntList ? read_int32() : read_enum(s.enums[e]);
        inst.raw_set_cell(index, e, v);
      }
      skip_ws();
      if (p_ < end_ && *p_ == ',') fail_value("expected " + std::to_string(s.length) + " elements, got more");
      expect(']', "']' closing the list");
      return;
    }
    case ParamKind::QueueList: read_queue_list(s.id == Param::Prev_Insts ? inst.prev : inst.next); return;
  }
}

void LineReader::params(Instruction& inst) {
  const auto& specs = inst.info().params;
  const int count = static_cast<int>(specs.size());
  uint32_t seen = 0;
  int expected = 0;  // keys usually come in table order: try that first
  inst.prev.clear();
  inst.next.clear();
  key_kind_ = "parameter";
  read_object("the parameters", [&](std::string_view key) {
    int index = -1;
    if (expected < count && param_name(specs[expected].id) == key) {
      index = expected;
    } else {
      for (int i = 0; i < count; ++i)
        if (param_name(specs[i].id) == key) {
          index = i;
          break;
        }
    }
    if (index < 0) {
      if (key == "inst_idx" || key == "time")
        fail("unexpected '" + std::string(key) + "': this is a trace line, not a program line");
      fail("unknown parameter '" + printable(key, 40) + "'");
    }
    if (seen & (1u << index)) fail("duplicate parameter '" + std::string(key) + "'");
    seen |= 1u << index;
    read_value(inst, index);
    expected = index + 1;
  });
  key_kind_ = {};
  if (seen != (count == 32 ? ~0u : (1u << count) - 1u)) {
    for (int i = 0; i < count; ++i)
      if (!(seen & (1u << i))) fail("missing parameter '" + std::string(param_name(specs[i].id)) + "'");
  }
}

// --- Writers ----------------------------------------------------------------

void append_int(std::string& out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, static_cast<size_t>(r.ptr - buf));
}

void append_float(std::string& out, double v) { append_python_float(out, v); }

void append_key(std::string& out, std::string_view name, Syntax s) {
  char q = s == Syntax::Legacy ? '\'' : '"';
  out += q;
  out += name;
  out += q;
  out += ": ";
}

namespace {

template <class List>
void append_int_list(std::string& out, const List& xs) {
  out += '[';
  bool first = true;
  for (auto x : xs) {
    if (!first) out += ", ";
    first = false;
    append_int(out, x);
  }
  out += ']';
}

void append_enum(std::string& out, EnumClass c, int32_t value, Syntax s) {
  const EnumMember* m = find_enum_value(c, value);
  if (!m)
    throw Error(kExitInternal, "cannot write " + std::to_string(value) + " as a " + std::string(enum_class_name(c)));
  if (s == Syntax::Legacy) {
    out += '<';
    out += enum_class_name(c);
    out += '.';
    out += m->name;
    out += ": ";
    append_int(out, m->value);
    out += '>';
  } else {
    out += '"';
    out += enum_class_name(c);
    out += '.';
    out += m->name;
    out += '"';
  }
}

void append_queue_list(std::string& out, const QueueList& qs, Syntax s) {
  char q = s == Syntax::Legacy ? '\'' : '"';
  out += '[';
  for (int i = 0; i < qs.size(); ++i) {
    if (i) out += ", ";
    out += q;
    out += queue_name(qs[i]);
    out += q;
  }
  out += ']';
}

}  // namespace

void append_mapping(std::string& out, const Mapping& m, Syntax s) {
  out += '{';
  append_key(out, "slyr", s);
  append_int(out, m.slyr);
  out += ", ";
  append_key(out, "clyr", s);
  append_int_list(out, m.clyr);
  out += ", ";
  append_key(out, "s_flyr", s);
  append_int(out, m.s_flyr);
  out += ", ";
  append_key(out, "c_flyr", s);
  append_int_list(out, m.c_flyr);
  out += ", ";
  append_key(out, "wkl", s);
  append_int(out, m.wkl);
  out += ", ";
  append_key(out, "tile", s);
  append_int(out, m.tile);
  if (m.core_written || m.core != 0) {
    out += ", ";
    append_key(out, "core", s);
    append_int(out, m.core);
  }
  out += '}';
}

void append_params(std::string& out, const Instruction& inst, Syntax s) {
  const auto& specs = inst.info().params;
  out += '{';
  for (size_t i = 0; i < specs.size(); ++i) {
    const ParamSpec& spec = specs[i];
    int idx = static_cast<int>(i);
    if (i) out += ", ";
    append_key(out, param_name(spec.id), s);
    switch (spec.kind) {
      case ParamKind::Int: append_int(out, inst.raw_int(idx)); break;
      case ParamKind::Number:
        if (inst.raw_is_float(idx)) {
          append_float(out, inst.raw_double(idx));
        } else {
          append_int(out, inst.raw_int(idx));
        }
        break;
      case ParamKind::Bool:
        out += inst.raw_cell(idx) ? (s == Syntax::Legacy ? "True" : "true") : (s == Syntax::Legacy ? "False" : "false");
        break;
      case ParamKind::Enum: append_enum(out, spec.enums[0], inst.raw_cell(idx), s); break;
      case ParamKind::IntList:
        out += '[';
        for (int e = 0; e < spec.length; ++e) {
          if (e) out += ", ";
          append_int(out, inst.raw_cell(idx, e));
        }
        out += ']';
        break;
      case ParamKind::EnumList:
        out += '[';
        for (int e = 0; e < spec.length; ++e) {
          if (e) out += ", ";
          append_enum(out, spec.enums[e], inst.raw_cell(idx, e), s);
        }
        out += ']';
        break;
      case ParamKind::QueueList:
        append_queue_list(out, spec.id == Param::Prev_Insts ? inst.prev : inst.next, s);
        break;
    }
  }
  out += '}';
}

void append_line_start(std::string& out, Opcode op, Syntax s) {
  out += '[';
  if (s == Syntax::JsonLines) out += '"';
  out += mnemonic(op);
  if (s == Syntax::JsonLines) out += '"';
  out += ", ";
}

void append_instruction(std::string& out, const Instruction& inst, Syntax s) {
  append_line_start(out, inst.op(), s);
  append_mapping(out, inst.mapping, s);
  out += ", ";
  append_params(out, inst, s);
  out += "]\n";
}

}  // namespace cct::isa
