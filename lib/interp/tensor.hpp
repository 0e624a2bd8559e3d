// Tensors of the float reference interpreter.
//
// The interpreter computes in two element types: float32 for activations and
// weights (whatever floating type the model declares) and int64 for shapes,
// indices and booleans. `dtype` keeps the model's declared type so importers
// and tests can tell a float16 initializer from a float32 one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cct::interp {

enum class DType : uint8_t { Unknown, F32, F16, BF16, F64, I8, U8, I16, U16, I32, U32, I64, U64, Bool, String };

std::string_view dtype_name(DType t);  // "float32", "int64", ...
bool is_floating(DType t);             // stored in Tensor::f
bool is_integral(DType t);             // integers and bool: stored in Tensor::i

using Shape = std::vector<int64_t>;

// Number of elements of a shape (1 for a scalar).
int64_t shape_numel(const Shape& s);
// "[1, 3, 224, 224]"
std::string shape_str(const Shape& s);

struct Tensor {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<float> f;    // data when is_floating(dtype)
  std::vector<int64_t> i;  // data when is_integral(dtype)

  int64_t numel() const { return shape_numel(shape); }
  bool is_float() const { return is_floating(dtype); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }

  static Tensor floats(Shape shape, std::vector<float> data = {});  // zero-filled when data is empty
  static Tensor ints(Shape shape, std::vector<int64_t> data = {}, DType t = DType::I64);
  static Tensor scalar_float(float v) { return floats({}, {v}); }
  static Tensor scalar_int(int64_t v) { return ints({}, {v}); }

  // Element k as double / int64, whichever storage the tensor uses.
  double at_double(int64_t k) const { return is_float() ? f[k] : static_cast<double>(i[k]); }
  int64_t at_int(int64_t k) const { return is_float() ? static_cast<int64_t>(f[k]) : i[k]; }
  // All elements as int64 (a shape or an index list).
  std::vector<int64_t> to_ints() const;
};

// Normalises a possibly negative axis for a tensor of `rank` dimensions;
// throws an input error naming `what` when it is out of range.
int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view what);

}  // namespace cct::interp
