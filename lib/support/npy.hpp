// NumPy .npy files (format version 1.0/2.0), the container of weights,
// biases, inputs and golden activations next to a Frontend IR.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cct {

enum class NpyType : uint8_t { F32, F64, F16, I8, U8, I16, I32, I64, Bool };

struct NpyArray {
  NpyType type = NpyType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // C order, little-endian

  size_t count() const;
  size_t item_size() const;
  // All elements converted to float/double/int64 (F16 decoded).
  std::vector<float> to_float() const;
  std::vector<double> to_double() const;
  std::vector<int64_t> to_int() const;

  static NpyArray from_float(const std::vector<float>& v, std::vector<int64_t> shape);
  static NpyArray from_int8(const std::vector<int8_t>& v, std::vector<int64_t> shape);
  static NpyArray from_int32(const std::vector<int32_t>& v, std::vector<int64_t> shape);
};

// Parses .npy bytes; `where` names the source in errors.
NpyArray parse_npy(const std::string& data, const std::string& where);
std::string serialize_npy(const NpyArray& a);

NpyArray read_npy(const std::string& path);
void write_npy(const std::string& path, const NpyArray& a);

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

}  // namespace cct
