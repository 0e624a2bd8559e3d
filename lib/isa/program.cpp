#include "isa/program.hpp"

#include <cmath>
#include <cstring>

#include "support/error.hpp"

namespace cct::isa {

namespace {

[[noreturn]] void misuse(const Instruction& inst, Param p, std::string_view what) {
  throw Error(kExitInternal, std::string(inst.mnemonic()) + ": parameter '" + std::string(param_name(p)) + "': " +
                                 std::string(what));
}

}  // namespace

Instruction::Instruction(Opcode op) : op_(op) {
  const auto& params = info().params;
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamSpec& s = params[i];
    if (s.kind == ParamKind::Enum) cells_[s.cell] = enum_members(s.enums[0]).front().value;
    if (s.kind == ParamKind::EnumList)
      for (int e = 0; e < s.length; ++e) cells_[s.cell + e] = enum_members(s.enums[e]).front().value;
  }
}

int Instruction::index_or_throw(Param p) const {
  int i = param_index(op_, p);
  if (i < 0) misuse(*this, p, "no such parameter for this opcode");
  return i;
}

void Instruction::raw_set_int(int i, int64_t v) {
  std::memcpy(&cells_[info().params[i].cell], &v, sizeof v);
  float_mask_ &= ~(1u << i);
}

void Instruction::raw_set_double(int i, double v) {
  std::memcpy(&cells_[info().params[i].cell], &v, sizeof v);
  float_mask_ |= 1u << i;
}

void Instruction::raw_set_cell(int i, int element, int32_t v) { cells_[info().params[i].cell + element] = v; }

int64_t Instruction::get_other(Param p) const {
  int i = index_or_throw(p);
  const ParamSpec& s = info().params[i];
  switch (s.kind) {
    case ParamKind::Int: return raw_int(i);
    case ParamKind::Number: {
      if (!raw_is_float(i)) return raw_int(i);
      double d = raw_double(i);
      // Saturate instead of overflowing: the value is only a convenience view.
      if (!(d > -9.2e18)) return INT64_MIN;
      if (!(d < 9.2e18)) return INT64_MAX;
      return static_cast<int64_t>(d);
    }
    case ParamKind::Bool:
    case ParamKind::Enum: return raw_cell(i);
    default: misuse(*this, p, "is a list; use list()");
  }
}

double Instruction::number(Param p) const {
  int i = index_or_throw(p);
  const ParamSpec& s = info().params[i];
  if (s.kind == ParamKind::Number && raw_is_float(i)) return raw_double(i);
  if (s.kind == ParamKind::Int || s.kind == ParamKind::Number) return static_cast<double>(raw_int(i));
  misuse(*this, p, "is not a number");
}

bool Instruction::is_float(Param p) const { return raw_is_float(index_or_throw(p)); }

std::span<const int32_t> Instruction::list(Param p) const {
  int i = index_or_throw(p);
  const ParamSpec& s = info().params[i];
  if (s.kind != ParamKind::IntList && s.kind != ParamKind::EnumList) misuse(*this, p, "is not a list");
  return {&cells_[s.cell], s.length};
}

void Instruction::set(Param p, int64_t value) {
  int i = index_or_throw(p);
  const ParamSpec& s = info().params[i];
  switch (s.kind) {
    case ParamKind::Int:
    case ParamKind::Number: raw_set_int(i, value); return;
    case ParamKind::Bool:
      if (value != 0 && value != 1) misuse(*this, p, "a boolean must be 0 or 1");
      raw_set_cell(i, 0, static_cast<int32_t>(value));
      return;
    case ParamKind::Enum:
      if (value < INT32_MIN || value > INT32_MAX || !find_enum_value(s.enums[0], static_cast<int32_t>(value)))
        misuse(*this, p, std::to_string(value) + " is not a value of " + std::string(enum_class_name(s.enums[0])));
      raw_set_cell(i, 0, static_cast<int32_t>(value));
      return;
    default: misuse(*this, p, "is a list; use set_list()");
  }
}

void Instruction::set_float(Param p, double value) {
  int i = index_or_throw(p);
  if (info().params[i].kind != ParamKind::Number) misuse(*this, p, "only number parameters can hold floats");
  if (!std::isfinite(value)) misuse(*this, p, "not a finite number");
  raw_set_double(i, value);
}

void Instruction::set_list(Param p, std::span<const int32_t> values) {
  int i = index_or_throw(p);
  const ParamSpec& s = info().params[i];
  if (s.kind != ParamKind::IntList && s.kind != ParamKind::EnumList) misuse(*this, p, "is not a list");
  if (values.size() != s.length)
    misuse(*this, p, "needs exactly " + std::to_string(s.length) + " elements, got " + std::to_string(values.size()));
  for (int e = 0; e < s.length; ++e) {
    if (s.kind == ParamKind::EnumList && !find_enum_value(s.enums[e], values[e]))
      misuse(*this, p, std::to_string(values[e]) + " is not a value of " + std::string(enum_class_name(s.enums[e])));
    raw_set_cell(i, e, values[e]);
  }
}

bool Instruction::operator==(const Instruction& o) const {
  return op_ == o.op_ && mapping == o.mapping && prev == o.prev && next == o.next && float_mask_ == o.float_mask_ &&
         std::memcmp(cells_, o.cells_, sizeof cells_) == 0;
}

}  // namespace cct::isa
