// Tables of named numeric constants: one row per JSON key, pointing at the
// struct member it fills. The reader, the writer, the range checks and the
// documentation tests all walk the same table, so a new constant is one
// struct member plus one row.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "support/error.hpp"
#include "support/json.hpp"
#include "support/json_cursor.hpp"

namespace cct::arch {

enum class Range : uint8_t {
  Positive,     // > 0
  NonNegative,  // >= 0
  Fraction,     // in (0, 1]
};

template <class S>
struct Constant {
  std::string_view key;
  std::variant<int64_t S::*, double S::*> member;
  Range range;
  std::string_view unit;  // for messages and docs, e.g. "bytes", "cycles"
};

template <class S>
using ConstantTable = std::span<const Constant<S>>;

std::string_view range_text(Range r);
bool in_range(double v, Range r);

// Reads every constant of `table` from the object at `c` (all required) and
// rejects keys that are neither in the table nor in `other_keys`.
template <class S>
void read_constants(const JsonCursor& c, S& out, ConstantTable<S> table,
                    std::initializer_list<std::string_view> other_keys = {}) {
  c.expect_object();
  for (const auto& [key, member] : c.members()) {
    bool known = false;
    for (const auto& k : table) known = known || k.key == key;
    for (auto k : other_keys) known = known || k == key;
    if (!known) member.fail("unknown key \"" + key + "\"");
  }
  for (const auto& k : table) {
    JsonCursor v = c.at(k.key);
    double value;
    if (auto p = std::get_if<int64_t S::*>(&k.member)) {
      out.*(*p) = v.as_int();
      value = double(out.*(*p));
    } else {
      value = out.*std::get<double S::*>(k.member) = v.as_double();
    }
    if (!in_range(value, k.range))
      v.fail(std::string(k.key) + " must be " + std::string(range_text(k.range)) + " (" + std::string(k.unit) + ")");
  }
}

// Checks the ranges of constants built in code (no JSON source): errors name
// `pointer_prefix`/key.
template <class S>
void check_constants(const S& s, ConstantTable<S> table, const std::string& file, const std::string& pointer_prefix) {
  for (const auto& k : table) {
    double value = 0;
    if (auto p = std::get_if<int64_t S::*>(&k.member))
      value = double(s.*(*p));
    else
      value = s.*std::get<double S::*>(k.member);
    if (!in_range(value, k.range)) {
      std::string pointer = pointer_prefix;
      append_pointer_token(pointer, k.key);
      throw_input_error(at_pointer(file, pointer, std::string(k.key) + " must be " + std::string(range_text(k.range)) +
                                                      " (" + std::string(k.unit) + ")"));
    }
  }
}

// Appends every constant of `table` to `obj`, in table order.
template <class S>
void write_constants(Json& obj, const S& s, ConstantTable<S> table) {
  for (const auto& k : table) {
    if (auto p = std::get_if<int64_t S::*>(&k.member))
      obj.set(k.key, Json(s.*(*p)));
    else
      obj.set(k.key, Json(s.*std::get<double S::*>(k.member)));
  }
}

// The keys of a table, for tests comparing it with the schema and the docs.
template <class S>
std::vector<std::string> constant_keys(ConstantTable<S> table) {
  std::vector<std::string> out;
  for (const auto& k : table) out.emplace_back(k.key);
  return out;
}

}  // namespace cct::arch
