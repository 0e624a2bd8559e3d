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

// The physical range of a constant: lo (or above it, when lo_open) to hi.
// Generous, but bounded on both sides: every cycle count the timing model
// derives from them (bytes / bandwidth, fixed costs summed over a program)
// then stays far inside int64 and exact enough in double, so an absurd file
// is refused here instead of overflowing or stalling a model.
struct Range {
  double lo = 0;
  bool lo_open = false;
  double hi = 0;
};

inline constexpr double kTiB = 1099511627776.0;                // 2^40 bytes
inline constexpr Range kCycles{0, false, 1e9};                  // a fixed cost or latency
inline constexpr Range kRate{1e-3, false, 1e6};                 // bytes or operations per cycle
inline constexpr Range kIntRate{1, false, 1e6};                // an integer bytes per cycle
inline constexpr Range kRows{1, false, 4294967296.0};           // rows of a buffer (2^32)
inline constexpr Range kBytes{0, false, kTiB};                  // a size or pitch that may be 0
inline constexpr Range kSize{1, false, kTiB};                   // a memory's size
inline constexpr Range kPeSide{1, false, 65536};                // PE array rows or columns
inline constexpr Range kAlign{1, false, 4096};                  // an alignment (L2 channel padding)
inline constexpr Range kPerChannel{0, false, 65536};            // bytes stored per output channel
inline constexpr Range kGiBps{1e-3, false, 1e6};                // a DRAM channel's bandwidth
inline constexpr Range kEnergyPj{0, false, 1e6};                // energy of one operation, byte or bit
inline constexpr Range kPowerMw{0, false, 1e9};                 // static power
inline constexpr Range kFraction{0, true, 1};                   // (0, 1]
inline constexpr Range kShare{0, false, 1};                     // [0, 1]
inline constexpr Range kClockGhz{1e-3, false, 1e3};             // clock_ghz
inline constexpr Range kFlag{0, false, 1};                      // a capability: false or true

// A capability the hardware has or lacks (JSON true/false). Flags are the
// one kind of key that may be left out: they were added after the format's
// first files, and leaving one out means the hardware lacks it, which is
// what those files described.

template <class S>
struct Constant {
  std::string_view key;
  std::variant<int64_t S::*, double S::*, bool S::*> member;
  Range range;
  std::string_view unit;  // for messages and docs, e.g. "bytes", "cycles"
};

template <class S>
using ConstantTable = std::span<const Constant<S>>;

std::string range_text(Range r);  // "in [0, 1e9]"
std::string number_text(double v);  // short text of a bound or a value: "0.001", "65536", "1e9"
bool in_range(double v, Range r);

// Whether a key may be left out (flags; see kFlag).
template <class S>
bool is_optional(const Constant<S>& k) {
  return std::holds_alternative<bool S::*>(k.member);
}

// The value of a constant as a number (a flag as 0 or 1).
template <class S>
double constant_value(const S& s, const Constant<S>& k) {
  if (auto p = std::get_if<int64_t S::*>(&k.member)) return double(s.*(*p));
  if (auto p = std::get_if<bool S::*>(&k.member)) return s.*(*p) ? 1.0 : 0.0;
  return s.*std::get<double S::*>(k.member);
}

// Reads every constant of `table` from the object at `c` (all required but
// flags, which default to false) and rejects keys that are neither in the
// table nor in `other_keys`.
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
    if (auto p = std::get_if<bool S::*>(&k.member)) {
      out.*(*p) = c.has(k.key) && c.at(k.key).as_bool();
      continue;
    }
    JsonCursor v = c.at(k.key);
    double value;
    if (auto p = std::get_if<int64_t S::*>(&k.member)) {
      out.*(*p) = v.as_int();
      value = double(out.*(*p));
    } else {
      value = out.*std::get<double S::*>(k.member) = v.as_double();
    }
    if (!in_range(value, k.range))
      v.fail(std::string(k.key) + " must be " + range_text(k.range) + " (" + std::string(k.unit) + ")");
  }
}

// Checks the ranges of constants built in code (no JSON source): errors name
// `pointer_prefix`/key.
template <class S>
void check_constants(const S& s, ConstantTable<S> table, const std::string& file, const std::string& pointer_prefix) {
  for (const auto& k : table) {
    const double value = constant_value(s, k);
    if (!in_range(value, k.range)) {
      std::string pointer = pointer_prefix;
      append_pointer_token(pointer, k.key);
      throw_input_error(at_pointer(file, pointer, std::string(k.key) + " must be " + range_text(k.range) +
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
    else if (auto b = std::get_if<bool S::*>(&k.member))
      obj.set(k.key, Json(s.*(*b)));
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
