// Small TFLite models for tests, written with the builders flatc generates
// from our reader schema (lib/frontend/tflite.fbs): float32 tensors, every
// constant in a buffer of its own, builtin operators with their options.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tflite_generated.h"

namespace cct::testing {

class TfliteBuilder {
 public:
  using Offset = flatbuffers::Offset<void>;

  TfliteBuilder() { buffers_.push_back(tfl::CreateBuffer(fbb_)); }  // buffer 0: empty, by convention

  // A computed float32 tensor; returns its index.
  int tensor(const std::string& name, const std::vector<int32_t>& shape) { return add(name, shape, tfl::TensorType::FLOAT32, 0); }
  // A float32 constant.
  int constant(const std::string& name, const std::vector<int32_t>& shape, const std::vector<float>& values) {
    return add(name, shape, tfl::TensorType::FLOAT32, data(values.data(), values.size() * 4));
  }
  // An int32 constant (shapes, permutations, axes, paddings).
  int ints(const std::string& name, const std::vector<int32_t>& shape, const std::vector<int32_t>& values) {
    return add(name, shape, tfl::TensorType::INT32, data(values.data(), values.size() * 4));
  }
  // Seeded values in [-0.5, 0.5).
  static std::vector<float> values(size_t n, uint32_t seed) {
    std::vector<float> v(n);
    for (auto& x : v) {
      seed = seed * 1664525u + 1013904223u;
      x = static_cast<float>(seed >> 8) / 16777216.0f - 0.5f;
    }
    return v;
  }

  flatbuffers::FlatBufferBuilder& fbb() { return fbb_; }

  // An operator with builtin code `code`; options are made with fbb() and the tfl::Create* functions.
  void op(int32_t code, const std::vector<int32_t>& inputs, const std::vector<int32_t>& outputs,
          tfl::BuiltinOptions type = tfl::BuiltinOptions::NONE, Offset options = 0) {
    uint32_t index = 0;
    while (index < codes_.size() && codes_[index] != code) ++index;
    if (index == codes_.size()) codes_.push_back(code);
    ops_.push_back(tfl::CreateOperatorDirect(fbb_, index, &inputs, &outputs, type, options));
  }

  std::string bytes(const std::vector<int32_t>& inputs, const std::vector<int32_t>& outputs) {
    std::vector<flatbuffers::Offset<tfl::OperatorCode>> codes;
    for (int32_t c : codes_) codes.push_back(tfl::CreateOperatorCode(fbb_, static_cast<int8_t>(c < 127 ? c : 127), 0, 1, c));
    std::vector<flatbuffers::Offset<tfl::SubGraph>> sgs = {
        tfl::CreateSubGraphDirect(fbb_, &tensors_, &inputs, &outputs, &ops_, "main")};
    auto model = tfl::CreateModelDirect(fbb_, 3, &codes, &sgs, "test", &buffers_);
    tfl::FinishModelBuffer(fbb_, model);
    return std::string(reinterpret_cast<const char*>(fbb_.GetBufferPointer()), fbb_.GetSize());
  }

 private:
  uint32_t data(const void* p, size_t n) {
    std::vector<uint8_t> bytes(n);
    std::memcpy(bytes.data(), p, n);
    buffers_.push_back(tfl::CreateBufferDirect(fbb_, &bytes));
    return static_cast<uint32_t>(buffers_.size() - 1);
  }
  int add(const std::string& name, const std::vector<int32_t>& shape, tfl::TensorType type, uint32_t buffer) {
    tensors_.push_back(tfl::CreateTensorDirect(fbb_, &shape, type, buffer, name.c_str()));
    return static_cast<int>(tensors_.size() - 1);
  }

  flatbuffers::FlatBufferBuilder fbb_;
  std::vector<flatbuffers::Offset<tfl::Tensor>> tensors_;
  std::vector<flatbuffers::Offset<tfl::Operator>> ops_;
  std::vector<flatbuffers::Offset<tfl::Buffer>> buffers_;
  std::vector<int32_t> codes_;
};

}  // namespace cct::testing
