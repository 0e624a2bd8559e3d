#include "support/json_parse.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_set>
#include <vector>

#include "support/error.hpp"

namespace cct {

std::string printable_excerpt(std::string_view s, size_t max_len, bool escape_quotes) {
  static const char hex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < s.size() && i < max_len; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && !(escape_quotes && (c == '"' || c == '\\'))) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (s.size() > max_len) out += "...";
  return out;
}

std::optional<double> json_double(std::string_view token) {
  double d = 0;
  auto r = std::from_chars(token.data(), token.data() + token.size(), d);
  if (r.ec == std::errc() && r.ptr == token.data() + token.size() && std::isfinite(d)) return d;
  if (r.ec != std::errc::result_out_of_range) return std::nullopt;
  // Too large or too small for a double (the value is not zero): tell which
  // by the decimal exponent of the first significant digit.
  auto digit = [&](size_t k) { return k < token.size() && token[k] >= '0' && token[k] <= '9'; };
  size_t i = token[0] == '-' ? 1 : 0;
  const size_t int_begin = i;
  while (digit(i)) ++i;
  size_t first = int_begin;
  while (first < i && token[first] == '0') ++first;
  const bool in_integer_part = first < i;
  long long magnitude = static_cast<long long>(i - first) - 1;
  if (i < token.size() && token[i] == '.') {
    const size_t frac_begin = ++i;
    while (digit(i)) ++i;
    if (!in_integer_part) {
      size_t f = frac_begin;
      while (f < i && token[f] == '0') ++f;
      magnitude = -static_cast<long long>(f - frac_begin) - 1;
    }
  }
  long long exp10 = 0;
  bool neg = false;
  if (i < token.size()) {  // 'e' or 'E'
    ++i;
    if (i < token.size() && (token[i] == '+' || token[i] == '-')) neg = token[i++] == '-';
    for (; digit(i); ++i)
      if (exp10 < 1000000000) exp10 = exp10 * 10 + (token[i] - '0');  // saturates: only sign and size matter
  }
  if (magnitude + (neg ? -exp10 : exp10) > 0) return std::nullopt;
  return token[0] == '-' ? -0.0 : 0.0;  // underflow: the correctly rounded value is zero
}

std::string_view skip_utf8_bom(std::string_view text) {
  if (text.size() >= 3 && static_cast<unsigned char>(text[0]) == 0xEF && static_cast<unsigned char>(text[1]) == 0xBB &&
      static_cast<unsigned char>(text[2]) == 0xBF)
    text.remove_prefix(3);
  return text;
}

namespace {

// Objects with more keys than this look duplicates up in a hash set; smaller
// ones (nearly all) compare against their few earlier keys.
constexpr size_t kLinearKeys = 16;

struct Frame {
  bool object = false;
  size_t count = 0;       // members or elements so far
  size_t keys_begin = 0;  // first key of this object in State::keys
  std::unique_ptr<std::unordered_set<std::string>> big;  // all keys, once count > kLinearKeys
};

struct KeyRef {
  size_t offset;  // into State::key_bytes
  size_t size;
};

std::string printable(std::string_view s, size_t max_len = 40) { return printable_excerpt(s, max_len, true); }

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The length of the well-formed UTF-8 sequence at text[at] (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF), 0 if there is none.
// A string with a broken sequence is refused: JSON text is UTF-8, and
// RapidJSON's schema patterns decode a lead byte's continuation bytes
// without looking for the string's end.
size_t utf8_sequence(std::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return at + i < text.size() ? static_cast<unsigned char>(text[at + i]) : 0u; };
  const unsigned c = byte(0);
  if (c < 0x80) return 1;
  size_t n;
  unsigned lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  else return 0;
  if (byte(1) < lo || byte(1) > hi) return 0;
  for (size_t i = 2; i < n; ++i)
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  return n;
}

}  // namespace

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

struct JsonParser::State {
  std::vector<Frame> stack;
  std::string str;  // the string being read, unescaped
  std::vector<KeyRef> keys;
  std::string key_bytes;

  std::string_view text;
  const std::string* file = nullptr;
  size_t pos = 0;
  long first_line = 1;

  [[noreturn]] void fail_at(size_t offset, std::string_view what) const {
    long line = first_line;
    size_t line_start = 0;
    for (size_t i = 0; i < offset && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    throw_input_error(
        at_line(*file, line, "column " + std::to_string(offset - line_start + 1) + ": invalid JSON: " + std::string(what)));
  }
  [[noreturn]] void fail(std::string_view what) const { fail_at(pos, what); }

  std::string describe_here() const {
    if (pos >= text.size()) return "the end of the input";
    unsigned char c = static_cast<unsigned char>(text[pos]);
    if (c == 0) return "a NUL byte";
    if (c >= 0x20 && c < 0x7f) {
      std::string quoted = "'";
      quoted += static_cast<char>(c);
      return quoted += '\'';
    }
    return "the byte \\x" + printable(text.substr(pos, 1)).substr(2);
  }

  void skip_ws() {
    while (pos < text.size()) {
      char c = text[pos];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
      ++pos;
    }
  }

  // Reads the string starting at the opening quote into `str`.
  void read_string() {
    const size_t open = pos++;
    str.clear();
    for (;;) {
      size_t run = pos;
      while (run < text.size()) {
        unsigned char c = static_cast<unsigned char>(text[run]);
        if (c == '"' || c == '\\' || c < 0x20) break;
        if (c < 0x80) {
          ++run;
          continue;
        }
        const size_t n = utf8_sequence(text, run);
        if (n == 0) fail_at(run, "invalid UTF-8 byte \\x" + printable(text.substr(run, 1)).substr(2) + " in a string (JSON text must be UTF-8)");
        run += n;
      }
      str.append(text.data() + pos, run - pos);
      pos = run;
      if (pos >= text.size()) fail_at(open, "string not closed before the end of the input");
      unsigned char c = static_cast<unsigned char>(text[pos]);
      if (c == '"') {
        ++pos;
        return;
      }
      if (c == 0) fail("NUL byte inside a string (write it as \\u0000)");
      if (c == '\n' || c == '\r') fail("line break inside a string (a quotation mark is missing, or write \\n)");
      if (c < 0x20) fail("control character \\x" + printable(text.substr(pos, 1)).substr(2) + " inside a string (escape it as \\u00XX)");
      // A backslash.
      if (pos + 1 >= text.size()) fail("string not closed before the end of the input");
      char e = text[pos + 1];
      switch (e) {
        case '"': str += '"'; break;
        case '\\': str += '\\'; break;
        case '/': str += '/'; break;
        case 'b': str += '\b'; break;
        case 'f': str += '\f'; break;
        case 'n': str += '\n'; break;
        case 'r': str += '\r'; break;
        case 't': str += '\t'; break;
        case 'u': {
          uint32_t cp = read_hex4(pos + 2);
          size_t next = pos + 6;
          if (cp >= 0xDC00 && cp <= 0xDFFF) fail("unpaired UTF-16 surrogate \\u" + std::string(text.substr(pos + 2, 4)));
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (next + 1 >= text.size() || text[next] != '\\' || text[next + 1] != 'u')
              fail("unpaired UTF-16 surrogate \\u" + std::string(text.substr(pos + 2, 4)));
            uint32_t lo = read_hex4(next + 2);
            if (lo < 0xDC00 || lo > 0xDFFF) fail("unpaired UTF-16 surrogate \\u" + std::string(text.substr(pos + 2, 4)));
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            next += 6;
          }
          append_utf8(str, cp);
          pos = next;
          continue;
        }
        default:
          ++pos;
          fail("invalid escape \\" + printable(text.substr(pos, 1)) + " in a string");
      }
      pos += 2;
    }
  }

  uint32_t read_hex4(size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) {
      int d = at + i < text.size() ? hex_digit(text[at + i]) : -1;
      if (d < 0) fail_at(at + i < text.size() ? at + i : text.size(), "\\u must be followed by four hex digits");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    return v;
  }

  // Reads a number at pos and sends it: integers (no fraction, no exponent)
  // as int64, the others as the correctly rounded double.
  bool read_number(JsonEvents& ev) {
    const size_t start = pos;
    size_t q = pos;
    auto digit = [&](size_t i) { return i < text.size() && text[i] >= '0' && text[i] <= '9'; };
    if (text[q] == '-') ++q;
    if (!digit(q)) fail_at(q, "expected a digit after '-'");
    if (text[q] == '0') {
      ++q;
      if (digit(q)) fail_at(q, "leading zeros are not allowed in numbers");
    } else {
      while (digit(q)) ++q;
    }
    bool is_float = false;
    if (q < text.size() && text[q] == '.') {
      is_float = true;
      ++q;
      if (!digit(q)) fail_at(q, "expected a digit after '.'");
      while (digit(q)) ++q;
    }
    if (q < text.size() && (text[q] == 'e' || text[q] == 'E')) {
      is_float = true;
      ++q;
      if (q < text.size() && (text[q] == '+' || text[q] == '-')) ++q;
      if (!digit(q)) fail_at(q, "expected a digit in the exponent");
      while (digit(q)) ++q;
    }
    pos = q;
    std::string_view token = text.substr(start, q - start);
    if (!is_float) {
      int64_t i = 0;
      auto r = std::from_chars(token.data(), token.data() + token.size(), i);
      if (r.ec != std::errc() || r.ptr != token.data() + token.size())
        fail_at(start, "integer " + printable(token) + " is out of range (64-bit signed)");
      return ev.int_value(i);
    }
    std::optional<double> d = json_double(token);
    if (!d) fail_at(start, "number " + printable(token) + " is out of range (beyond 1.8e308)");
    return ev.double_value(*d);
  }

  bool literal(std::string_view word) {
    if (text.substr(pos, word.size()) != word) return false;
    pos += word.size();
    return true;
  }

  void check_key(size_t at) {
    Frame& f = stack.back();
    if (f.big) {
      if (!f.big->insert(str).second) fail_at(at, "duplicate key \"" + printable(str, 80) + "\"");
      return;
    }
    for (size_t k = f.keys_begin; k < keys.size(); ++k) {
      const KeyRef& r = keys[k];
      if (r.size == str.size() && std::memcmp(key_bytes.data() + r.offset, str.data(), r.size) == 0)
        fail_at(at, "duplicate key \"" + printable(str, 80) + "\"");
    }
    if (keys.size() - f.keys_begin < kLinearKeys) {
      keys.push_back({key_bytes.size(), str.size()});
      key_bytes += str;
      return;
    }
    f.big = std::make_unique<std::unordered_set<std::string>>();
    for (size_t k = f.keys_begin; k < keys.size(); ++k)
      f.big->emplace(key_bytes.data() + keys[k].offset, keys[k].size);
    f.big->insert(str);
    key_bytes.resize(keys[f.keys_begin].offset);
    keys.resize(f.keys_begin);
  }

  // A key and its ':' (pos at the key's opening quote, or where one should be).
  bool read_key(JsonEvents& ev) {
    skip_ws();
    if (pos >= text.size() || text[pos] != '"')
      fail("expected a key in double quotes, found " + describe_here());
    size_t at = pos;
    read_string();
    check_key(at);
    if (!ev.key(str.c_str(), str.size())) return false;
    skip_ws();
    if (pos >= text.size() || text[pos] != ':') fail("expected ':' after a key, found " + describe_here());
    ++pos;
    return true;
  }

  void push(bool object) {
    if (stack.size() >= kMaxJsonDepth)
      fail("arrays and objects nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    Frame& f = stack.emplace_back();
    f.object = object;
    f.keys_begin = keys.size();
  }

  void pop() {
    Frame& f = stack.back();
    if (f.object && f.keys_begin < keys.size()) {
      key_bytes.resize(keys[f.keys_begin].offset);
      keys.resize(f.keys_begin);
    }
    stack.pop_back();
  }

  bool run(JsonEvents& ev) {
    for (;;) {
      // A value.
      skip_ws();
      if (pos >= text.size()) fail("expected a value, found the end of the input");
      char c = text[pos];
      bool ok = true;
      bool done_value = true;  // false: a container was opened, its first value comes next
      switch (c) {
        case '{':
          push(true);
          ++pos;
          if (!ev.start_object()) return false;
          skip_ws();
          if (pos < text.size() && text[pos] == '}') {
            ++pos;
            pop();
            ok = ev.end_object(0);
          } else {
            if (!read_key(ev)) return false;
            done_value = false;
          }
          break;
        case '[':
          push(false);
          ++pos;
          if (!ev.start_array()) return false;
          skip_ws();
          if (pos < text.size() && text[pos] == ']') {
            ++pos;
            pop();
            ok = ev.end_array(0);
          } else {
            done_value = false;
          }
          break;
        case '"':
          read_string();
          ok = ev.string_value(str.c_str(), str.size());
          break;
        case 't':
        case 'f':
        case 'n':
          if (literal("true")) ok = ev.bool_value(true);
          else if (literal("false")) ok = ev.bool_value(false);
          else if (literal("null")) ok = ev.null_value();
          else fail("invalid value (expected true, false or null)");
          break;
        default:
          if (c == '-' || (c >= '0' && c <= '9')) {
            ok = read_number(ev);
          } else {
            fail("expected a value, found " + describe_here());
          }
      }
      if (!ok) return false;
      if (!done_value) continue;
      // After a value: close containers or move to the next element.
      for (;;) {
        skip_ws();
        if (stack.empty()) {
          if (pos < text.size()) fail("expected the end of the input after the JSON value, found " + describe_here());
          return true;
        }
        Frame& f = stack.back();
        ++f.count;
        if (pos < text.size() && text[pos] == ',') {
          ++pos;
          if (f.object && !read_key(ev)) return false;
          break;
        }
        if (f.object && pos < text.size() && text[pos] == '}') {
          ++pos;
          size_t n = f.count;
          pop();
          if (!ev.end_object(n)) return false;
          continue;
        }
        if (!f.object && pos < text.size() && text[pos] == ']') {
          ++pos;
          size_t n = f.count;
          pop();
          if (!ev.end_array(n)) return false;
          continue;
        }
        fail(std::string(f.object ? "expected ',' or '}' after an object member, found "
                                  : "expected ',' or ']' after an array element, found ") +
             describe_here());
      }
    }
  }
};

JsonParser::JsonParser() : s_(std::make_unique<State>()) {}
JsonParser::~JsonParser() = default;

bool JsonParser::parse(std::string_view text, const std::string& file, JsonEvents& events, long first_line) {
  State& s = *s_;
  // RapidJSON sizes strings and containers with 32 bits.
  if (text.size() > std::numeric_limits<rapidjson::SizeType>::max())
    throw_input_error(at_line(file, 0, "JSON text larger than 4 GiB"));
  s.text = skip_utf8_bom(text);
  s.file = &file;
  s.pos = 0;
  s.first_line = first_line;
  s.stack.clear();
  s.keys.clear();
  s.key_bytes.clear();
  return s.run(events);
}

bool parse_json_events(std::string_view text, const std::string& file, JsonEvents& events) {
  JsonParser p;
  return p.parse(text, file, events);
}

}  // namespace cct
