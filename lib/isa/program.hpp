// In-memory form of ISA programs: one fixed-size Instruction per line.
//
// An Instruction holds its opcode, the mapping (where the instruction comes
// from in the schedule), its Prev_Insts / Next_Insts queue lists and every
// parameter of its opcode in fixed storage laid out by the table in isa.hpp,
// so reading, simulating and writing never allocate per instruction. Numbers
// remember whether they were written as integers or floats, which is all that
// is needed to write the legacy syntax back byte for byte.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "isa/isa.hpp"

namespace cct::isa {

// A short list stored inline with a fixed capacity.
template <class T, int Capacity>
class InlineList {
 public:
  InlineList() = default;
  InlineList(std::initializer_list<T> xs) { assign(xs.begin(), xs.end()); }

  static constexpr int capacity() { return Capacity; }
  int size() const { return n_; }
  bool empty() const { return n_ == 0; }
  const T* begin() const { return v_; }
  const T* end() const { return v_ + n_; }
  const T& operator[](int i) const { return v_[i]; }
  std::span<const T> span() const { return {v_, static_cast<size_t>(n_)}; }

  void clear() { n_ = 0; }
  // Returns false (and changes nothing) when the list is full.
  bool push_back(T x) {
    if (n_ >= Capacity) return false;
    v_[n_++] = x;
    return true;
  }
  template <class It>
  bool assign(It first, It last) {
    clear();
    for (; first != last; ++first)
      if (!push_back(static_cast<T>(*first))) return false;
    return true;
  }
  bool contains(T x) const {
    for (int i = 0; i < n_; ++i)
      if (v_[i] == x) return true;
    return false;
  }
  bool operator==(const InlineList& o) const {
    if (n_ != o.n_) return false;
    for (int i = 0; i < n_; ++i)
      if (!(v_[i] == o.v_[i])) return false;
    return true;
  }

 private:
  uint8_t n_ = 0;
  T v_[Capacity]{};
};

using QueueList = InlineList<Queue, kMaxQueueList>;

inline constexpr int kMaxMappingList = 6;  // entries of clyr / c_flyr
using LayerList = InlineList<int32_t, kMaxMappingList>;

// The first dictionary of a line: which scheduled layer, workload and tile the
// instruction belongs to, and (multi-core programs) which core runs it.
struct Mapping {
  int32_t slyr = 0;    // layer index in the Frontend IR (0-based, layer order)
  LayerList clyr;      // data movements: the layers the data is for; else empty
  int32_t s_flyr = 0;  // group index of slyr (inferred: fused-layer group)
  LayerList c_flyr;    // group indices of clyr
  int32_t wkl = 0;     // Scheduler IR workload id
  int32_t tile = 0;    // tile index within the workload; -1 = whole layer
  int32_t core = 0;    // core that executes the instruction
  bool core_written = false;  // write "core" even when it is 0 (set when read from a file that had it)

  // Equality of meaning: whether "core" is written does not matter.
  bool operator==(const Mapping& o) const {
    return slyr == o.slyr && clyr == o.clyr && s_flyr == o.s_flyr && c_flyr == o.c_flyr && wkl == o.wkl &&
           tile == o.tile && core == o.core;
  }
};

class Instruction {
 public:
  // An instruction of `op` with every parameter zero, every list of the right
  // length filled with zeros, enums at their first member and no queue tokens.
  explicit Instruction(Opcode op = Opcode::ct_st);

  Opcode op() const { return op_; }
  const OpcodeInfo& info() const { return opcode_info(op_); }
  std::string_view mnemonic() const { return info().mnemonic; }
  Queue queue() const { return info().queue; }
  bool is_config() const { return info().is_config; }

  Mapping mapping;
  QueueList prev;  // Prev_Insts: one token to pop from each X->queue() counter before starting
  QueueList next;  // Next_Insts: one token to push to each queue()->Y counter when done

  // True when this opcode has parameter p.
  bool has(Param p) const { return param_index(op_, p) >= 0; }

  // Scalar access. get() serves Int, Bool (0/1), Enum (the numeric value) and
  // Number (the value truncated toward zero; see number()). Asking for a
  // parameter the opcode does not have throws Error(kExitInternal).
  int64_t get(Param p) const {
    int i = param_index(op_, p);
    if (i >= 0 && info().params[i].kind == ParamKind::Int) return raw_int(i);  // the common case, inline
    return get_other(p);
  }
  double number(Param p) const;       // Int and Number parameters
  bool is_float(Param p) const;       // Number parameter written as a float
  template <class E>
  E get_enum(Param p) const {
    return static_cast<E>(get(p));
  }
  // IntList / EnumList elements.
  std::span<const int32_t> list(Param p) const;

  // Setters (for the assembler and tests). set() serves Int, Bool, Enum and
  // Number (as an integer); set_float() writes a Number as a float. Values
  // out of range for the parameter throw Error(kExitInternal).
  void set(Param p, int64_t value);
  void set_float(Param p, double value);
  template <class E>
  void set_enum(Param p, E value) {
    set(p, static_cast<int64_t>(value));
  }
  void set_list(Param p, std::span<const int32_t> values);
  void set_list(Param p, std::initializer_list<int32_t> values) {
    set_list(p, std::span<const int32_t>(values.begin(), values.size()));
  }

  bool operator==(const Instruction& o) const;

  // Raw access by parameter position (i indexes info().params); used by the
  // readers and writers, which walk the parameter list in order. raw_int and
  // raw_double read the two cells of an Int or Number; a Bool or Enum has one
  // cell (raw_cell, or get()).
  int64_t raw_int(int i) const {
    int64_t v;
    std::memcpy(&v, &cells_[info().params[i].cell], sizeof v);
    return v;
  }
  double raw_double(int i) const {
    double v;
    std::memcpy(&v, &cells_[info().params[i].cell], sizeof v);
    return v;
  }
  int32_t raw_cell(int i, int element = 0) const { return cells_[info().params[i].cell + element]; }
  bool raw_is_float(int i) const { return (float_mask_ >> i) & 1u; }
  void raw_set_int(int i, int64_t v);
  void raw_set_double(int i, double v);
  void raw_set_cell(int i, int element, int32_t v);

 private:
  int index_or_throw(Param p) const;
  int64_t get_other(Param p) const;

  Opcode op_;
  uint32_t float_mask_ = 0;  // bit i: parameter i is a Number written as a float
  int32_t cells_[kMaxCells]{};
};

struct Program {
  std::vector<Instruction> instructions;

  size_t size() const { return instructions.size(); }
  bool operator==(const Program&) const = default;
};

}  // namespace cct::isa
