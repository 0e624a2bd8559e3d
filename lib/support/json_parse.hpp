// The one JSON parser every reader goes through (DOM, schema validation while
// parsing, JSON Lines validation). It replaces RapidJSON 1.1.0's reader, which
// recurses once per nesting level (200,000 levels overflow the stack),
// converts some valid numbers wrongly (0e308, 1.8e308, 581e308; undefined
// behaviour in diyfp.h for extreme exponents), accepts a byte-order mark only
// on some of its paths and reports a NUL byte as a missing quotation mark.
//
// This parser is iterative and bounds the nesting depth, converts numbers
// with std::from_chars (correctly rounded; out of range is an error), refuses
// integers outside int64 and duplicate object keys, skips a leading UTF-8
// byte-order mark, and words every error as
//   file:line: column N: invalid JSON: what
// It feeds RapidJSON handlers (Document, SchemaValidator) through the same
// SAX events RapidJSON's reader would send.
#pragma once

#include <rapidjson/rapidjson.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace cct {

// Deepest nesting of arrays and objects accepted. Our formats nest fewer than
// 10 levels; the bound keeps recursive code downstream (DOM conversion,
// validation, writers) within a small, fixed stack.
inline constexpr size_t kMaxJsonDepth = 256;

// What the parser reads, in document order. Strings are NUL-terminated
// (RapidJSON's regex matching relies on it) and valid only during the call.
// Returning false stops the parse (JsonParser::parse then returns false).
class JsonEvents {
 public:
  virtual ~JsonEvents() = default;
  virtual bool null_value() = 0;
  virtual bool bool_value(bool b) = 0;
  virtual bool int_value(int64_t i) = 0;
  virtual bool double_value(double d) = 0;
  virtual bool string_value(const char* s, size_t n) = 0;
  virtual bool start_object() = 0;
  virtual bool key(const char* s, size_t n) = 0;
  virtual bool end_object(size_t members) = 0;
  virtual bool start_array() = 0;
  virtual bool end_array(size_t elements) = 0;
};

// Forwards the events to a RapidJSON SAX handler.
template <class H>
class RapidEvents final : public JsonEvents {
 public:
  explicit RapidEvents(H& h) : h_(h) {}
  bool null_value() override { return h_.Null(); }
  bool bool_value(bool b) override { return h_.Bool(b); }
  bool int_value(int64_t i) override { return h_.Int64(i); }
  bool double_value(double d) override { return h_.Double(d); }
  bool string_value(const char* s, size_t n) override { return h_.String(s, static_cast<rapidjson::SizeType>(n), true); }
  bool start_object() override { return h_.StartObject(); }
  bool key(const char* s, size_t n) override { return h_.Key(s, static_cast<rapidjson::SizeType>(n), true); }
  bool end_object(size_t n) override { return h_.EndObject(static_cast<rapidjson::SizeType>(n)); }
  bool start_array() override { return h_.StartArray(); }
  bool end_array(size_t n) override { return h_.EndArray(static_cast<rapidjson::SizeType>(n)); }

 private:
  H& h_;
};

// A parser with reusable buffers (one per thread; parse() is not reentrant).
class JsonParser {
 public:
  JsonParser();
  ~JsonParser();
  // Parses `text` (one JSON value, optionally after a UTF-8 byte-order mark)
  // sending its events. Malformed text throws Error(kExitInvalidInput) naming
  // file:line and column (`first_line` is the line number of the text's first
  // line, for one line of a JSON Lines file). Returns false when a handler
  // stopped the parse.
  bool parse(std::string_view text, const std::string& file, JsonEvents& events, long first_line = 1);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// One-shot convenience over a fresh JsonParser.
bool parse_json_events(std::string_view text, const std::string& file, JsonEvents& events);

// The value of a JSON number token with a fraction or an exponent (grammar
// already checked), correctly rounded; nullopt when it is beyond the range of
// a double. Below the smallest subnormal it is (signed) zero, the correctly
// rounded value. Shared with the ISA line reader.
std::optional<double> json_double(std::string_view token);

// A piece of input quoted in a message: printable ASCII as is, anything else
// as \xNN (with escape_quotes, the quote and backslash too, as in JSON
// strings); cut to max_len bytes, "..." after. Shared with the ISA line reader.
std::string printable_excerpt(std::string_view s, size_t max_len, bool escape_quotes);

// Whether `s` is well-formed UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF). JSON text must be; the JSON reader
// refuses strings that are not, and writers check names they take from
// other formats with this.
bool valid_utf8(std::string_view s);

// The text without a leading UTF-8 byte-order mark (which RFC 8259 lets
// parsers ignore; editors on Windows write one).
std::string_view skip_utf8_bom(std::string_view text);

}  // namespace cct
