// Typed, path-aware access to a parsed JSON document for format readers.
//
// Every accessor that fails throws Error(kExitInvalidInput) with the file
// name and the JSON pointer of the value, e.g.
//   model.sir.json: /0/3/tile_info/tile_num_0/ofmap_upper: expected an array of 4 integers
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/json.hpp"

namespace cct {

class JsonCursor {
 public:
  JsonCursor(const Json& value, const std::string& file, std::string pointer = "")
      : v_(&value), file_(&file), ptr_(std::move(pointer)) {}

  const Json& value() const { return *v_; }
  const std::string& pointer() const { return ptr_; }
  const std::string& file() const { return *file_; }

  // Object members. at() requires the key; find() returns nullopt when absent.
  JsonCursor at(std::string_view key) const;
  std::optional<JsonCursor> find(std::string_view key) const;
  bool has(std::string_view key) const;
  // Array elements.
  JsonCursor at(size_t index) const;
  size_t array_size() const;
  std::vector<JsonCursor> elements() const;
  // Object members in order: (key, cursor).
  std::vector<std::pair<std::string, JsonCursor>> members() const;

  int64_t as_int() const;
  // Accepts integers and integral doubles (e.g. 3.0).
  int64_t as_integral() const;
  double as_double() const;
  bool as_bool() const;
  const std::string& as_string() const;
  std::vector<int64_t> as_int_vector() const;
  // An array of exactly n integers.
  std::vector<int64_t> as_int_vector(size_t n) const;
  std::vector<double> as_double_vector() const;
  std::vector<std::string> as_string_vector() const;

  // Conveniences for optional members with defaults.
  int64_t int_or(std::string_view key, int64_t dflt) const;
  double double_or(std::string_view key, double dflt) const;
  std::string string_or(std::string_view key, std::string_view dflt) const;
  bool bool_or(std::string_view key, bool dflt) const;

  void expect_object() const;
  void expect_array() const;
  [[noreturn]] void fail(std::string_view what) const;

 private:
  const Json* v_;
  const std::string* file_;
  std::string ptr_;
};

// Appends one JSON pointer token (escaping '~' and '/').
void append_pointer_token(std::string& pointer, std::string_view token);

}  // namespace cct
