#include "interp/tensor.hpp"

#include "support/error.hpp"

namespace cct::interp {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Unknown: return "unknown";
    case DType::F32: return "float32";
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
    case DType::F64: return "float64";
    case DType::I8: return "int8";
    case DType::U8: return "uint8";
    case DType::I16: return "int16";
    case DType::U16: return "uint16";
    case DType::I32: return "int32";
    case DType::U32: return "uint32";
    case DType::I64: return "int64";
    case DType::U64: return "uint64";
    case DType::Bool: return "bool";
    case DType::String: return "string";
  }
  return "unknown";
}

bool is_floating(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64; }

bool is_integral(DType t) {
  switch (t) {
    case DType::I8: case DType::U8: case DType::I16: case DType::U16: case DType::I32:
    case DType::U32: case DType::I64: case DType::U64: case DType::Bool:
      return true;
    default:
      return false;
  }
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t k = 0; k < s.size(); ++k) {
    if (k) out += ", ";
    out += std::to_string(s[k]);
  }
  return out + "]";
}

Tensor Tensor::floats(Shape shape, std::vector<float> data) {
  Tensor t;
  t.dtype = DType::F32;
  t.shape = std::move(shape);
  if (data.empty()) data.assign(static_cast<size_t>(shape_numel(t.shape)), 0.0f);
  t.f = std::move(data);
  return t;
}

Tensor Tensor::ints(Shape shape, std::vector<int64_t> data, DType type) {
  Tensor t;
  t.dtype = type;
  t.shape = std::move(shape);
  if (data.empty()) data.assign(static_cast<size_t>(shape_numel(t.shape)), 0);
  t.i = std::move(data);
  return t;
}

std::vector<int64_t> Tensor::to_ints() const {
  if (!is_float()) return i;
  std::vector<int64_t> out(f.size());
  for (size_t k = 0; k < f.size(); ++k) out[k] = static_cast<int64_t>(f[k]);
  return out;
}

int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view what) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw_input_error(std::string(what) + ": axis " + std::to_string(axis) + " out of range for rank " +
                      std::to_string(rank));
  return a;
}

}  // namespace cct::interp
