// A small ordered JSON value, the in-memory form every format reader and
// writer goes through.
//
// Objects keep their insertion order (writers decide the key order, so output
// is stable); integers and floating-point numbers stay distinct (a value read
// as 6.0 is written back as 6.0, and 6 as 6).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace cct {

class Json {
 public:
  using Array = std::vector<Json>;
  using Member = std::pair<std::string, Json>;
  using Object = std::vector<Member>;
  enum class Type : uint8_t { Null, Bool, Int, Double, String, Array, Object };

  Json() = default;
  Json(std::nullptr_t) {}
  Json(bool b) : v_(b) {}
  Json(int i) : v_(static_cast<int64_t>(i)) {}
  Json(long i) : v_(static_cast<int64_t>(i)) {}
  Json(long long i) : v_(static_cast<int64_t>(i)) {}
  Json(unsigned i) : v_(static_cast<int64_t>(i)) {}
  Json(unsigned long i) : v_(static_cast<int64_t>(i)) {}
  Json(unsigned long long i) : v_(static_cast<int64_t>(i)) {}
  Json(double d) : v_(d) {}
  Json(const char* s) : v_(std::string(s)) {}
  Json(std::string s) : v_(std::move(s)) {}
  Json(std::string_view s) : v_(std::string(s)) {}
  Json(Array a) : v_(std::move(a)) {}
  Json(Object o) : v_(std::move(o)) {}
  template <class T>
  Json(const std::vector<T>& xs) : v_(Array(xs.begin(), xs.end())) {}

  static Json array() { return Json(Array{}); }
  static Json object() { return Json(Object{}); }
  static Json array(std::initializer_list<Json> xs) { return Json(Array(xs)); }

  Type type() const { return static_cast<Type>(v_.index()); }
  bool is_null() const { return type() == Type::Null; }
  bool is_bool() const { return type() == Type::Bool; }
  bool is_int() const { return type() == Type::Int; }
  bool is_double() const { return type() == Type::Double; }
  bool is_number() const { return is_int() || is_double(); }
  bool is_string() const { return type() == Type::String; }
  bool is_array() const { return type() == Type::Array; }
  bool is_object() const { return type() == Type::Object; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  // Integers convert; doubles as they are.
  double as_double() const { return is_int() ? static_cast<double>(as_int()) : std::get<double>(v_); }
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const Array& as_array() const { return std::get<Array>(v_); }
  Array& as_array() { return std::get<Array>(v_); }
  const Object& as_object() const { return std::get<Object>(v_); }
  Object& as_object() { return std::get<Object>(v_); }

  // Object access. find() returns nullptr when absent.
  const Json* find(std::string_view key) const;
  Json* find(std::string_view key);
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  // Appends (or replaces) a member, keeping first-insertion order. Returns *this for chaining.
  Json& set(std::string_view key, Json value);
  // Appends to an array.
  Json& push(Json value);
  size_t size() const;

  bool operator==(const Json& o) const { return v_ == o.v_; }

 private:
  std::variant<std::nullptr_t, bool, int64_t, double, std::string, Array, Object> v_;
};

// Parses JSON text. `file` names the source in errors ("file:line:col: ...").
// Throws Error(kExitInvalidInput) on malformed text.
Json parse_json(std::string_view text, const std::string& file);

// Parses and validates against the named embedded schema (e.g. "sir" for
// schemas/sir.schema.json) before conversion. Pass an empty schema to skip.
Json parse_json_validated(std::string_view text, const std::string& file, std::string_view schema);

struct JsonStyle {
  int indent = 2;        // spaces per level
  int width = 100;       // containers that fit in this many columns go on one line
  int max_inline_keys = 6;  // objects with more members are always expanded
};

// Writes a value as diff-friendly text: keys in stored order, floats in
// shortest round-trip form, small scalar containers on one line.
std::string format_json(const Json& value, const JsonStyle& style = {});
void append_json(std::string& out, const Json& value, const JsonStyle& style = {}, int level = 0);
// Writes a value on one line with no spaces (JSON Lines).
void append_json_compact(std::string& out, const Json& value);
// Quotes and escapes a string for JSON.
void append_json_string(std::string& out, std::string_view s);

}  // namespace cct
