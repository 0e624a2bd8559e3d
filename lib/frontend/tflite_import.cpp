#include "frontend/tflite_import.hpp"

#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "support/error.hpp"
#include "support/io.hpp"
#include "support/json_parse.hpp"
#include "support/npy.hpp"
#include "tflite_generated.h"

namespace cct::frontend {

using interp::DType;
using interp::Graph;
using interp::Node;
using interp::Shape;
using interp::Tensor;

namespace {

// Builtin operator codes used below (BuiltinOperator in the format facts).
enum Code : int32_t {
  ADD = 0, AVERAGE_POOL_2D = 1, CONCATENATION = 2, CONV_2D = 3, DEPTHWISE_CONV_2D = 4, DEQUANTIZE = 6,
  FULLY_CONNECTED = 9, LOGISTIC = 14, MAX_POOL_2D = 17, MUL = 18, RELU = 19, RELU_N1_TO_1 = 20, RELU6 = 21,
  RESHAPE = 22, SOFTMAX = 25, TANH = 28, PAD = 34, TRANSPOSE = 39, MEAN = 40, SUB = 41, DIV = 42, SQUEEZE = 43,
  PRELU = 54, PADV2 = 60, EXPAND_DIMS = 70, LEAKY_RELU = 98, ELU = 111, QUANTIZE = 114, HARD_SWISH = 117,
};

const char* code_name(int32_t c) {
  static const std::map<int32_t, const char*> names = {
      {0, "ADD"}, {1, "AVERAGE_POOL_2D"}, {2, "CONCATENATION"}, {3, "CONV_2D"}, {4, "DEPTHWISE_CONV_2D"},
      {5, "DEPTH_TO_SPACE"}, {6, "DEQUANTIZE"}, {7, "EMBEDDING_LOOKUP"}, {8, "FLOOR"}, {9, "FULLY_CONNECTED"},
      {11, "L2_NORMALIZATION"}, {12, "L2_POOL_2D"}, {13, "LOCAL_RESPONSE_NORMALIZATION"}, {14, "LOGISTIC"},
      {16, "LSTM"}, {17, "MAX_POOL_2D"}, {18, "MUL"}, {19, "RELU"}, {20, "RELU_N1_TO_1"}, {21, "RELU6"},
      {22, "RESHAPE"}, {23, "RESIZE_BILINEAR"}, {24, "RNN"}, {25, "SOFTMAX"}, {26, "SPACE_TO_DEPTH"}, {27, "SVDF"},
      {28, "TANH"}, {32, "CUSTOM"}, {34, "PAD"}, {36, "GATHER"}, {39, "TRANSPOSE"}, {40, "MEAN"}, {41, "SUB"},
      {42, "DIV"}, {43, "SQUEEZE"}, {45, "STRIDED_SLICE"}, {47, "EXP"}, {49, "SPLIT"}, {50, "LOG_SOFTMAX"},
      {53, "CAST"}, {54, "PRELU"}, {55, "MAXIMUM"}, {57, "MINIMUM"}, {60, "PADV2"}, {65, "SLICE"},
      {67, "TRANSPOSE_CONV"}, {70, "EXPAND_DIMS"}, {74, "SUM"}, {75, "SQRT"}, {76, "RSQRT"}, {83, "PACK"},
      {88, "UNPACK"}, {97, "RESIZE_NEAREST_NEIGHBOR"}, {98, "LEAKY_RELU"}, {99, "SQUARED_DIFFERENCE"},
      {100, "MIRROR_PAD"}, {102, "SPLIT_V"}, {111, "ELU"}, {114, "QUANTIZE"}, {117, "HARD_SWISH"}, {126, "BATCH_MATMUL"},
      {150, "GELU"}};
  auto it = names.find(c);
  return it == names.end() ? nullptr : it->second;
}

std::string describe_code(int32_t c) {
  const char* n = code_name(c);
  return n ? std::string(n) : "builtin operator " + std::to_string(c);
}

enum class Layout { AsIs, Nhwc };

class TfliteImporter {
 public:
  TfliteImporter(const std::string& bytes, std::string name, const ImportOptions& opts)
      : bytes_(bytes), name_(std::move(name)), opts_(opts) {}

  Graph run() {
    const auto* data = reinterpret_cast<const uint8_t*>(bytes_.data());
    if (bytes_.size() < 8 || !tfl::ModelBufferHasIdentifier(data))
      throw_input_error(name_ + ": not a TFLite file (no TFL3 identifier)");
    flatbuffers::Verifier verifier(data, bytes_.size());
    if (!tfl::VerifyModelBuffer(verifier))
      throw_input_error(name_ + ": the TFLite flatbuffer does not verify (corrupt or truncated file)");
    model_ = tfl::GetModel(data);
    if (!model_->subgraphs() || model_->subgraphs()->size() == 0) throw_input_error(name_ + ": the model has no subgraph");
    sg_ = model_->subgraphs()->Get(0);
    if (!sg_->tensors() || !sg_->operators()) throw_input_error(name_ + ": subgraph 0 has no tensors or operators");
    g_.source = name_;
    g_.opset = 13;
    size_t nt = sg_->tensors()->size();
    ours_.assign(nt, -1);
    layout_.assign(nt, Layout::AsIs);
    batched_.assign(nt, 0);
    choose_batch();
    for (int t : list(sg_->inputs())) add_input(t);
    std::vector<std::string> unsupported;
    for (uint32_t k = 0; k < sg_->operators()->size(); ++k) {
      const tfl::Operator* op = sg_->operators()->Get(k);
      int32_t code = resolve_code(op, k);
      op_index_ = static_cast<int>(k);
      if (batch_ > 0) rebatch(op, code);
      if (!convert(op, code)) unsupported.push_back("operator " + std::to_string(k) + " (" + describe_code(code) + ")");
    }
    if (!unsupported.empty()) {
      std::string msg = name_ + ": " + std::to_string(unsupported.size()) + " operator(s) are not supported:";
      for (const auto& u : unsupported) msg += "\n  " + u;
      throw Error(kExitInvalidInput, msg);
    }
    for (int t : list(sg_->outputs())) {
      if (t < 0 || static_cast<size_t>(t) >= nt || ours_[t] < 0)
        throw_input_error(name_ + ": output tensor " + std::to_string(t) + " is not computed by any operator");
      g_.outputs.push_back(asis(t));
    }
    if (g_.outputs.empty()) throw_input_error(name_ + ": subgraph 0 declares no outputs");
    relayout_inputs();
    g_.topo_sort();
    return std::move(g_);
  }

 private:
  // ---- file access ------------------------------------------------------------
  template <class V>
  static std::vector<int> list(const V* v) {
    std::vector<int> out;
    if (v)
      for (auto x : *v) out.push_back(static_cast<int>(x));
    return out;
  }

  const tfl::Tensor* tensor(int t) const {
    if (t < 0 || static_cast<size_t>(t) >= sg_->tensors()->size())
      throw_input_error(name_ + ": tensor index " + std::to_string(t) + " out of range");
    return sg_->tensors()->Get(static_cast<uint32_t>(t));
  }
  // The shape the file declares.
  Shape file_shape(int t) const {
    Shape s;
    if (auto* sh = tensor(t)->shape())
      for (int d : *sh) {
        if (d < 0) throw_input_error(name_ + ": tensor " + std::to_string(t) + " has a negative dimension");
        s.push_back(d);
      }
    return s;
  }
  // The shape at the FIR batch: a tensor carrying the batch has it as its leading axis.
  Shape tshape(int t) const {
    Shape s = file_shape(t);
    if (batch_ > 0 && batched_[static_cast<size_t>(t)]) s[0] = batch_;
    return s;
  }
  std::string tname(int t) const {
    const auto* n = tensor(t)->name();
    if (!n) return "tensor_" + std::to_string(t);
    // Names become strings of the Frontend IR's JSON, which must be UTF-8.
    if (!valid_utf8(std::string_view(n->c_str(), n->size())))
      throw_input_error(name_ + ": tensor " + std::to_string(t) + "'s name \"" +
                        printable_excerpt(std::string_view(n->c_str(), n->size()), 60, true) + "\" is not valid UTF-8");
    return n->str();
  }

  int32_t resolve_code(const tfl::Operator* op, uint32_t k) const {
    if (!model_->operator_codes() || op->opcode_index() >= model_->operator_codes()->size())
      throw_input_error(name_ + ": operator " + std::to_string(k) + " has an invalid opcode_index");
    const tfl::OperatorCode* oc = model_->operator_codes()->Get(op->opcode_index());
    int32_t code = std::max<int32_t>(oc->builtin_code(), oc->deprecated_builtin_code());
    if (code == 127) code = oc->builtin_code();
    return code;
  }

  // Raw bytes of a constant tensor, or nullptr.
  const uint8_t* buffer_of(int t, size_t& size) const {
    uint32_t b = tensor(t)->buffer();
    size = 0;
    if (!model_->buffers() || b == 0 || b >= model_->buffers()->size()) return nullptr;
    const tfl::Buffer* buf = model_->buffers()->Get(b);
    if (buf->data() && buf->data()->size() > 0) {
      size = buf->data()->size();
      return buf->data()->data();
    }
    if (buf->offset() > 1) {
      if (buf->offset() + buf->size() > bytes_.size())
        throw_input_error(name_ + ": buffer " + std::to_string(b) + " lies outside the file (truncated?)");
      size = buf->size();
      return reinterpret_cast<const uint8_t*>(bytes_.data()) + buf->offset();
    }
    return nullptr;
  }
  bool is_const(int t) const {
    size_t n;
    return buffer_of(t, n) != nullptr;
  }

  std::shared_ptr<interp::PresetQuant> preset_of(int t) const {
    const auto* q = tensor(t)->quantization();
    if (!q || !q->scale() || q->scale()->size() == 0) return nullptr;
    auto p = std::make_shared<interp::PresetQuant>();
    for (float s : *q->scale()) {
      if (!std::isfinite(s))
        throw_input_error(name_ + ": tensor '" + tname(t) + "' has a quantization scale that is not finite (" +
                          std::to_string(s) + ")");
      p->scale.push_back(s);
    }
    if (q->zero_point())
      for (int64_t z : *q->zero_point()) p->zero_point.push_back(z);
    p->zero_point.resize(p->scale.size(), 0);
    p->axis = q->quantized_dimension();
    return p;
  }

  // A constant as floats (dequantized when quantized), in the file's layout.
  Tensor constant(int t) const {
    size_t size = 0;
    const uint8_t* p = buffer_of(t, size);
    if (!p) throw_input_error(name_ + ": tensor " + std::to_string(t) + " ('" + tname(t) + "') is not a constant");
    Shape s = tshape(t);
    int64_t n = interp::shape_numel(s);
    auto type = tensor(t)->type();
    size_t isz = 0;
    switch (type) {
      case tfl::TensorType::FLOAT32: case tfl::TensorType::INT32: isz = 4; break;
      case tfl::TensorType::INT64: isz = 8; break;
      case tfl::TensorType::FLOAT16: case tfl::TensorType::INT16: isz = 2; break;
      case tfl::TensorType::INT8: case tfl::TensorType::UINT8: case tfl::TensorType::BOOL: isz = 1; break;
      default:
        throw_input_error(name_ + ": constant '" + tname(t) + "' has unsupported type " + std::to_string(static_cast<int>(type)));
    }
    if (size != static_cast<size_t>(n) * isz)
      throw_input_error(name_ + ": constant '" + tname(t) + "' holds " + std::to_string(size) + " bytes, its shape " +
                        interp::shape_str(s) + " needs " + std::to_string(static_cast<size_t>(n) * isz));
    std::vector<double> raw(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      const uint8_t* e = p + k * isz;
      switch (type) {
        case tfl::TensorType::FLOAT32: { float v; std::memcpy(&v, e, 4); raw[k] = v; break; }
        case tfl::TensorType::INT32: { int32_t v; std::memcpy(&v, e, 4); raw[k] = v; break; }
        case tfl::TensorType::INT64: { int64_t v; std::memcpy(&v, e, 8); raw[k] = static_cast<double>(v); break; }
        case tfl::TensorType::FLOAT16: { uint16_t v; std::memcpy(&v, e, 2); raw[k] = half_to_float(v); break; }
        case tfl::TensorType::INT16: { int16_t v; std::memcpy(&v, e, 2); raw[k] = v; break; }
        case tfl::TensorType::INT8: raw[k] = static_cast<int8_t>(*e); break;
        default: raw[k] = *e; break;
      }
    }
    bool integer_type = type == tfl::TensorType::INT32 || type == tfl::TensorType::INT64;
    auto pq = preset_of(t);
    if (pq && type != tfl::TensorType::FLOAT32 && type != tfl::TensorType::FLOAT16) {
      // dequantize: real = scale * (q - zero_point), per slice along axis
      int64_t axis = pq->scale.size() > 1 ? (s.size() == 1 ? 0 : pq->axis) : 0;
      if (pq->scale.size() > 1 && (axis < 0 || axis >= static_cast<int64_t>(s.size()) || s[axis] != static_cast<int64_t>(pq->scale.size())))
        throw_input_error(name_ + ": constant '" + tname(t) + "' has " + std::to_string(pq->scale.size()) +
                          " scales for its quantized dimension");
      int64_t inner = 1;
      for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d) inner *= s[d];
      for (int64_t k = 0; k < n; ++k) {
        size_t c = pq->scale.size() > 1 ? static_cast<size_t>((k / inner) % s[axis]) : 0;
        raw[k] = pq->scale[c] * (raw[k] - static_cast<double>(pq->zero_point[c]));
      }
      integer_type = false;
    }
    if (integer_type) {
      Tensor out = Tensor::ints(s);
      for (int64_t k = 0; k < n; ++k) out.i[k] = static_cast<int64_t>(raw[k]);
      return out;
    }
    Tensor out = Tensor::floats(s);
    for (int64_t k = 0; k < n; ++k) out.f[k] = static_cast<float>(raw[k]);
    return out;
  }

  // ---- graph building -----------------------------------------------------------
  int new_value(const std::string& base, const Shape& s, std::shared_ptr<const interp::PresetQuant> preset = nullptr) {
    interp::Value v;
    v.name = g_.unique_name(base);
    v.dtype = DType::F32;
    v.shape = s;
    v.has_shape = true;
    v.preset = std::move(preset);
    return g_.add_value(std::move(v));
  }
  int const_value(const std::string& base, Tensor t, std::shared_ptr<const interp::PresetQuant> preset = nullptr) {
    interp::Value v;
    v.name = g_.unique_name(base);
    v.dtype = t.dtype;
    v.shape = t.shape;
    v.has_shape = true;
    v.constant = std::make_shared<Tensor>(std::move(t));
    v.preset = std::move(preset);
    return g_.add_value(std::move(v));
  }
  Node& node(const std::string& op, std::vector<int> inputs, std::vector<int> outputs) {
    Node n;
    n.op = op;
    n.name = op + "_" + std::to_string(op_index_) + (sub_++ ? "_" + std::to_string(sub_ - 1) : "");
    n.source_index = op_index_;
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    g_.nodes.push_back(std::move(n));
    return g_.nodes.back();
  }
  static interp::Attribute ints(std::vector<int64_t> v) {
    interp::Attribute a;
    a.kind = interp::Attribute::Kind::Ints;
    a.ints = std::move(v);
    return a;
  }
  static interp::Attribute integer(int64_t v) {
    interp::Attribute a;
    a.kind = interp::Attribute::Kind::Int;
    a.i = v;
    return a;
  }
  static interp::Attribute real(float v) {
    interp::Attribute a;
    a.kind = interp::Attribute::Kind::Float;
    a.f = v;
    return a;
  }

  // --batch N (or an --input-shape differing from the file's input only in
  // its leading axis) re-batches the model: the leading axis of every graph
  // input is the batch, and rebatch() follows it through the operators.
  void choose_batch() {
    std::vector<int> inputs = list(sg_->inputs());
    if (inputs.empty()) return;
    const Shape first = file_shape(inputs[0]);
    int64_t want = opts_.batch;
    if (!opts_.input_shape.empty()) {
      const Shape& is = opts_.input_shape;
      if (first.empty() || is.size() != first.size() || !std::equal(is.begin() + 1, is.end(), first.begin() + 1))
        throw_input_error(name_ + ": a TFLite model has static shapes; its input is " + interp::shape_str(first) +
                          ", not --input-shape " + interp::shape_str(is) + " (only the leading axis, the batch, may change)");
      if (want <= 0) want = is[0];
    }
    if (want <= 0 || first.empty() || want == first[0]) return;
    file_batch_ = first[0];
    for (int t : inputs) {
      Shape s = file_shape(t);
      if (s.empty() || s[0] != file_batch_)
        throw_input_error(name_ + ": input '" + tname(t) + "' has shape " + interp::shape_str(s) + ", input '" +
                          tname(inputs[0]) + "' " + interp::shape_str(first) +
                          ": the graph inputs do not share a leading (batch) axis; --batch " + std::to_string(want) +
                          " cannot be applied");
      batched_[static_cast<size_t>(t)] = 1;
    }
    batch_ = want;
  }

  // Whether convert() handles the operator code (rebatch() refuses only those:
  // the others are reported as unsupported).
  static bool converted(int32_t code) {
    switch (code) {
      case CONV_2D: case DEPTHWISE_CONV_2D: case FULLY_CONNECTED: case ADD: case SUB: case MUL: case DIV:
      case AVERAGE_POOL_2D: case MAX_POOL_2D: case MEAN: case RESHAPE: case SQUEEZE: case EXPAND_DIMS:
      case TRANSPOSE: case CONCATENATION: case SOFTMAX: case LOGISTIC: case TANH: case RELU: case RELU6:
      case RELU_N1_TO_1: case HARD_SWISH: case LEAKY_RELU: case QUANTIZE: case DEQUANTIZE: case PAD: case PADV2:
        return true;
      default:
        return false;
    }
  }

  // Re-batching, before the operator is converted: its outputs carry the
  // batch when an input does, and must keep it as their leading axis, every
  // sample computed apart from the others (then the result at batch N is, sample
  // by sample, the file's). Shapes follow through tshape(); shape-carrying
  // operators (RESHAPE's new_shape or shape tensor, SQUEEZE, EXPAND_DIMS) are
  // rebuilt from their output shapes, so their leading dimension follows too.
  void rebatch(const tfl::Operator* op, int32_t code) {
    std::vector<int> in = list(op->inputs()), out = list(op->outputs());
    // (tensor() checks the index.)
    auto carries = [&](int t) { return t >= 0 && tensor(t) != nullptr && batched_[static_cast<size_t>(t)]; };
    if (std::none_of(in.begin(), in.end(), carries)) return;  // constants only: the same for every sample
    const bool check = converted(code);
    auto refuse = [&](const std::string& why) {
      fail_op(" (" + describe_code(code) + ") " + why + "; the model cannot be re-batched: --batch " +
              std::to_string(batch_) + " cannot be applied");
    };
    auto rank = [&](int t) { return static_cast<int64_t>(file_shape(t).size()); };
    int64_t out_rank = out.empty() || out[0] < 0 ? 0 : rank(out[0]);
    if (check) switch (code) {
      case TRANSPOSE: {
        std::vector<int64_t> perm = in.size() > 1 ? constant(in[1]).to_ints() : std::vector<int64_t>{};
        if (perm.empty() || perm[0] != 0) refuse("moves the batch away from axis 0");
        break;
      }
      case CONCATENATION: {
        const auto* o = op->builtin_options_as_ConcatenationOptions();
        int64_t axis = o ? o->axis() : 0;
        if (axis < 0) axis += out_rank;
        if (axis == 0) refuse("concatenates along the batch axis");
        for (int t : in)
          if (t >= 0 && !carries(t))
            refuse("concatenates '" + tname(t) + "', the same for every sample, with tensors that carry the batch");
        break;
      }
      case MEAN: {
        std::vector<int64_t> axes = in.size() > 1 ? constant(in[1]).to_ints() : std::vector<int64_t>{};
        for (int64_t a : axes)
          if (a == 0 || a + rank(in[0]) == 0) refuse("averages over the batch axis");
        break;
      }
      case SOFTMAX:
        if (rank(in[0]) < 2) refuse("normalises over the batch axis (a 1-D input)");
        break;
      case PAD: case PADV2: {
        std::vector<int64_t> p = in.size() > 1 ? constant(in[1]).to_ints() : std::vector<int64_t>{};
        if (p.size() >= 2 && (p[0] != 0 || p[1] != 0)) refuse("pads the batch axis");
        break;
      }
      case ADD: case SUB: case MUL: case DIV:
        for (int t : in) {
          if (t < 0) continue;
          Shape s = file_shape(t);
          if (carries(t) && static_cast<int64_t>(s.size()) != out_rank)
            refuse("broadcasts '" + tname(t) + "' " + interp::shape_str(s) + " to rank " + std::to_string(out_rank) +
                   ", moving its batch away from axis 0");
          if (!carries(t) && static_cast<int64_t>(s.size()) == out_rank && s[0] != 1)
            refuse("combines the batch with '" + tname(t) + "' " + interp::shape_str(s) + ", which differs per sample");
        }
        break;
      default:
        break;
    }
    for (int t : out) {
      if (t < 0) continue;
      Shape s = file_shape(t);
      if (s.empty() || s[0] != file_batch_) {
        if (check)
          refuse("gives '" + tname(t) + "' " + interp::shape_str(s) + " from a batch of " + std::to_string(file_batch_) +
                 ": the batch is no longer its leading axis");
        continue;
      }
      batched_[static_cast<size_t>(t)] = 1;
    }
  }

  void add_input(int t) {
    Shape s = tshape(t);
    int v = new_value(tname(t), s, preset_of(t));
    g_.inputs.push_back(v);
    ours_[t] = v;
    layout_[t] = Layout::AsIs;
  }

  // An input error about the operator being converted; `what` goes right
  // after "FILE: operator N".
  [[noreturn]] void fail_op(const std::string& what) const {
    throw_input_error(name_ + ": operator " + std::to_string(op_index_) + what);
  }

  // [N, H, W, C] -> [N, C, H, W], of a tensor the operator being converted
  // reads or writes in the image layout.
  Shape to_nchw(const Shape& s) const {
    if (s.size() != 4)
      fail_op(": a tensor of shape " + interp::shape_str(s) + " where an image [N, H, W, C] belongs");
    return {s[0], s[3], s[1], s[2]};
  }

  // The tensor in its TFLite layout.
  int asis(int t) {
    if (is_const(t) && ours_[t] < 0) {
      ours_[t] = const_value(tname(t), constant(t), preset_of(t));
      layout_[t] = Layout::AsIs;
    }
    if (ours_[t] < 0) throw_input_error(name_ + ": tensor " + std::to_string(t) + " is read before it is computed");
    if (layout_[t] == Layout::AsIs) return ours_[t];
    auto it = asis_cache_.find(t);
    if (it != asis_cache_.end()) return it->second;
    int out = new_value(tname(t) + "_nhwc", tshape(t), g_.value(ours_[t]).preset);
    node("Transpose", {ours_[t]}, {out}).attrs["perm"] = ints({0, 2, 3, 1});
    asis_cache_[t] = out;
    return out;
  }
  // The 4-D tensor as NCHW.
  int nchw(int t) {
    if (is_const(t) && ours_[t] < 0) {
      Tensor c = constant(t);
      if (c.rank() == 4) c = permute(c, {0, 3, 1, 2});
      ours_[t] = const_value(tname(t), std::move(c), preset_of(t));
      layout_[t] = c.rank() == 4 ? Layout::Nhwc : Layout::AsIs;
      return ours_[t];
    }
    if (ours_[t] < 0) throw_input_error(name_ + ": tensor " + std::to_string(t) + " is read before it is computed");
    if (layout_[t] == Layout::Nhwc) return ours_[t];
    if (g_.value(ours_[t]).shape.size() != 4)
      throw_input_error(name_ + ": tensor '" + tname(t) + "' should be 4-D here");
    auto it = nchw_cache_.find(t);
    if (it != nchw_cache_.end()) return it->second;
    int out = new_value(tname(t) + "_nchw", to_nchw(tshape(t)), g_.value(ours_[t]).preset);
    node("Transpose", {ours_[t]}, {out}).attrs["perm"] = ints({0, 3, 1, 2});
    nchw_cache_[t] = out;
    return out;
  }
  static Tensor permute(const Tensor& x, const std::vector<int64_t>& perm) {
    Shape s(perm.size());
    for (size_t d = 0; d < perm.size(); ++d) s[d] = x.shape[perm[d]];
    Tensor y = x.is_float() ? Tensor::floats(s) : Tensor::ints(s);
    std::vector<int64_t> xs(x.shape.size(), 1);
    for (size_t d = x.shape.size(); d-- > 1;) xs[d - 1] = xs[d] * x.shape[d];
    std::vector<int64_t> idx(s.size(), 0);
    for (int64_t o = 0; o < y.numel(); ++o) {
      int64_t src = 0;
      for (size_t d = 0; d < s.size(); ++d) src += idx[d] * xs[perm[d]];
      if (x.is_float()) y.f[o] = x.f[src];
      else y.i[o] = x.i[src];
      for (size_t d = s.size(); d-- > 0;) {
        if (++idx[d] < s[d]) break;
        idx[d] = 0;
      }
    }
    return y;
  }

  // Output of an op: a fresh value registered for tensor t.
  int output(int t, Layout layout) {
    Shape s = tshape(t);
    if (layout == Layout::Nhwc) s = to_nchw(s);
    int v = new_value(tname(t), s, preset_of(t));
    ours_[t] = v;
    layout_[t] = layout;
    return v;
  }

  // Appends the fused activation after value `v` (which stands for tensor t).
  void fused(int t, tfl::ActivationFunctionType act) {
    if (act == tfl::ActivationFunctionType::NONE) return;
    int x = ours_[t];
    Shape s = g_.value(x).shape;
    g_.value(x).name = g_.unique_name(g_.value(x).name + "_preact");
    auto pre = g_.value(x).preset;
    g_.value(x).preset = nullptr;  // the file's quantization belongs to the activated output
    int y = new_value(tname(t), s, pre);
    switch (act) {
      case tfl::ActivationFunctionType::RELU: node("Relu", {x}, {y}); break;
      case tfl::ActivationFunctionType::RELU6: clip(x, y, 0.0f, 6.0f); break;
      case tfl::ActivationFunctionType::RELU_N1_TO_1: clip(x, y, -1.0f, 1.0f); break;
      case tfl::ActivationFunctionType::TANH: node("Tanh", {x}, {y}); break;
      default: fail_op(" has an unsupported fused activation");
    }
    ours_[t] = y;
  }
  void clip(int x, int y, float lo, float hi) {
    int a = const_value("clip_min", Tensor::scalar_float(lo)), b = const_value("clip_max", Tensor::scalar_float(hi));
    node("Clip", {x, a, b}, {y});
  }

  // TF's SAME/VALID padding for one spatial axis.
  std::pair<int64_t, int64_t> tf_pads(tfl::Padding p, int64_t in, int64_t k, int64_t stride, int64_t dil) const {
    if (in < 1 || k < 1 || stride < 1 || dil < 1)
      fail_op(": input size " + std::to_string(in) + ", kernel " + std::to_string(k) + ", stride " +
              std::to_string(stride) + " and dilation " + std::to_string(dil) + " must all be positive");
    if (p != tfl::Padding::SAME) return {0, 0};
    int64_t out = (in + stride - 1) / stride;
    int64_t total = std::max<int64_t>((out - 1) * stride + (k - 1) * dil + 1 - in, 0);
    return {total / 2, total - total / 2};
  }

  // ---- operators ------------------------------------------------------------------
  bool convert(const tfl::Operator* op, int32_t code) {
    sub_ = 0;
    std::vector<int> in = list(op->inputs()), out = list(op->outputs());
    if (out.empty()) fail_op(" has no output");
    auto need_inputs = [&](size_t n) {
      if (in.size() < n) fail_op(" (" + describe_code(code) + ") needs " + std::to_string(n) + " inputs");
    };
    switch (code) {
      case CONV_2D:
      case DEPTHWISE_CONV_2D: {
        need_inputs(2);
        bool dw = code == DEPTHWISE_CONV_2D;
        tfl::Padding pad;
        int64_t sw, sh, dw_f, dh_f;
        tfl::ActivationFunctionType act;
        if (dw) {
          const auto* o = op->builtin_options_as_DepthwiseConv2DOptions();
          if (!o) return false;
          pad = o->padding(); sw = o->stride_w(); sh = o->stride_h();
          dw_f = o->dilation_w_factor(); dh_f = o->dilation_h_factor(); act = o->fused_activation_function();
        } else {
          const auto* o = op->builtin_options_as_Conv2DOptions();
          if (!o) return false;
          pad = o->padding(); sw = o->stride_w(); sh = o->stride_h();
          dw_f = o->dilation_w_factor(); dh_f = o->dilation_h_factor(); act = o->fused_activation_function();
        }
        int x = nchw(in[0]);
        const Shape& xs = g_.value(x).shape;
        Tensor w = constant(in[1]);  // conv [O, kh, kw, I], depthwise [1, kh, kw, C*m]
        if (w.rank() != 4) fail_op(": filter must be 4-D");
        auto wp = preset_of(in[1]);
        int64_t group;
        if (dw) {
          w = permute(w, {3, 0, 1, 2});  // [C*m, 1, kh, kw]
          group = xs[1];
          if (wp && wp->scale.size() > 1) {
            auto p = std::make_shared<interp::PresetQuant>(*wp);
            p->axis = 0;
            wp = p;
          }
        } else {
          w = permute(w, {0, 3, 1, 2});  // [O, I, kh, kw]
          group = xs[1] / std::max<int64_t>(w.shape[1], 1);
        }
        int64_t kh = w.shape[2], kw = w.shape[3];
        auto [pt, pb] = tf_pads(pad, xs[2], kh, sh, dh_f);
        auto [pl, pr] = tf_pads(pad, xs[3], kw, sw, dw_f);
        std::vector<int> ins = {x, const_value(tname(in[1]), std::move(w), wp)};
        if (in.size() > 2 && in[2] >= 0) ins.push_back(const_value(tname(in[2]), constant(in[2]), preset_of(in[2])));
        int y = output(out[0], Layout::Nhwc);
        Node& n = node("Conv", ins, {y});
        n.attrs["kernel_shape"] = ints({kh, kw});
        n.attrs["strides"] = ints({sh, sw});
        n.attrs["dilations"] = ints({dh_f, dw_f});
        n.attrs["pads"] = ints({pt, pl, pb, pr});
        n.attrs["group"] = integer(group);
        fused(out[0], act);
        return true;
      }
      case FULLY_CONNECTED: {
        need_inputs(2);
        const auto* o = op->builtin_options_as_FullyConnectedOptions();
        if (o && o->keep_num_dims() && tshape(out[0]).size() > 2) return false;
        Tensor w = constant(in[1]);  // [out, in]
        if (w.rank() != 2) fail_op(": weights must be 2-D");
        int x = asis(in[0]);
        if (g_.value(x).shape.size() != 2 || g_.value(x).shape[1] != w.shape[1]) {
          const int64_t elements = interp::shape_numel(g_.value(x).shape);
          if (w.shape[1] <= 0 || elements <= 0 || elements % w.shape[1] != 0)
            fail_op(": an input of " + std::to_string(elements) + " elements does not split into rows of the weights' " +
                    std::to_string(w.shape[1]) + " inputs");
          int64_t rows = elements / w.shape[1];
          int r = new_value(tname(in[0]) + "_flat", {rows, w.shape[1]}, g_.value(x).preset);
          int s = const_value("fc_shape", Tensor::ints({2}, {rows, w.shape[1]}));
          node("Reshape", {x, s}, {r});
          x = r;
        }
        std::vector<int> ins = {x, const_value(tname(in[1]), std::move(w), preset_of(in[1]))};
        if (in.size() > 2 && in[2] >= 0) ins.push_back(const_value(tname(in[2]), constant(in[2]), preset_of(in[2])));
        int y = output(out[0], Layout::AsIs);
        node("Gemm", ins, {y}).attrs["transB"] = integer(1);
        if (o) fused(out[0], o->fused_activation_function());
        return true;
      }
      case ADD: case SUB: case MUL: case DIV: {
        need_inputs(2);
        tfl::ActivationFunctionType act = tfl::ActivationFunctionType::NONE;
        if (const auto* o = op->builtin_options_as_AddOptions(); o && code == ADD) act = o->fused_activation_function();
        if (const auto* o = op->builtin_options_as_SubOptions(); o && code == SUB) act = o->fused_activation_function();
        if (const auto* o = op->builtin_options_as_MulOptions(); o && code == MUL) act = o->fused_activation_function();
        if (const auto* o = op->builtin_options_as_DivOptions(); o && code == DIV) act = o->fused_activation_function();
        bool nhwc = false;
        for (int t : {in[0], in[1]})
          if (!is_const(t) && ours_[t] >= 0 && layout_[t] == Layout::Nhwc) nhwc = true;
        int a = nhwc ? broadcast_nchw(in[0]) : asis(in[0]);
        int b = nhwc ? broadcast_nchw(in[1]) : asis(in[1]);
        int y = output(out[0], nhwc ? Layout::Nhwc : Layout::AsIs);
        const char* ops[] = {"Add", "Sub", "Mul", "Div"};
        node(ops[code == ADD ? 0 : code == SUB ? 1 : code == MUL ? 2 : 3], {a, b}, {y});
        fused(out[0], act);
        return true;
      }
      case AVERAGE_POOL_2D:
      case MAX_POOL_2D: {
        const auto* o = op->builtin_options_as_Pool2DOptions();
        if (!o) return false;
        int x = nchw(in.at(0));
        const Shape& xs = g_.value(x).shape;
        int64_t fh = o->filter_height(), fw = o->filter_width(), sh = o->stride_h(), sw = o->stride_w();
        auto [pt, pb] = tf_pads(o->padding(), xs[2], fh, sh, 1);
        auto [pl, pr] = tf_pads(o->padding(), xs[3], fw, sw, 1);
        int y = output(out[0], Layout::Nhwc);
        Node& n = node(code == MAX_POOL_2D ? "MaxPool" : "AveragePool", {x}, {y});
        n.attrs["kernel_shape"] = ints({fh, fw});
        n.attrs["strides"] = ints({sh, sw});
        n.attrs["pads"] = ints({pt, pl, pb, pr});
        fused(out[0], o->fused_activation_function());
        return true;
      }
      case MEAN: {
        need_inputs(2);
        const auto* o = op->builtin_options_as_ReducerOptions();
        bool keep = o && o->keep_dims();
        Tensor axes_t = constant(in[1]);
        std::vector<int64_t> axes = axes_t.to_ints();
        Shape xs = tshape(in[0]);
        for (auto& a : axes)
          if (a < 0) a += static_cast<int64_t>(xs.size());
        std::sort(axes.begin(), axes.end());
        if (xs.size() == 4 && axes == std::vector<int64_t>{1, 2}) {
          // spatial mean of NHWC = global average pooling
          int x = nchw(in[0]);
          Shape ps = {xs[0], xs[3], 1, 1};
          if (keep) {
            int y = output(out[0], Layout::Nhwc);
            node("GlobalAveragePool", {x}, {y});
          } else {
            int p = new_value(tname(out[0]) + "_pool", ps, preset_of(out[0]));
            node("GlobalAveragePool", {x}, {p});
            int y = output(out[0], Layout::AsIs);
            int s = const_value("mean_shape", Tensor::ints({2}, {xs[0], xs[3]}));
            node("Reshape", {p, s}, {y});
          }
          return true;
        }
        int x = asis(in[0]);
        int y = output(out[0], Layout::AsIs);
        Node& n = node("ReduceMean", {x}, {y});
        n.attrs["axes"] = ints(axes);
        n.attrs["keepdims"] = integer(keep ? 1 : 0);
        return true;
      }
      case RESHAPE:
      case SQUEEZE:
      case EXPAND_DIMS: {
        int x = asis(in.at(0));
        Shape os = tshape(out[0]);
        int y = output(out[0], Layout::AsIs);
        int s = const_value("reshape_shape", Tensor::ints({static_cast<int64_t>(os.size())}, os));
        node("Reshape", {x, s}, {y});
        return true;
      }
      case TRANSPOSE: {
        need_inputs(2);
        std::vector<int64_t> perm = constant(in[1]).to_ints();
        int x = asis(in[0]);
        int y = output(out[0], Layout::AsIs);
        node("Transpose", {x}, {y}).attrs["perm"] = ints(perm);
        return true;
      }
      case CONCATENATION: {
        const auto* o = op->builtin_options_as_ConcatenationOptions();
        if (!o) return false;
        bool nhwc = tshape(out[0]).size() == 4;
        for (int t : in)
          if (!is_const(t) && layout_[t] != Layout::Nhwc) nhwc = false;
        int64_t rank = static_cast<int64_t>(tshape(out[0]).size());
        int64_t axis = o->axis() < 0 ? o->axis() + rank : o->axis();
        std::vector<int> ins;
        for (int t : in) ins.push_back(nhwc ? nchw(t) : asis(t));
        int y = output(out[0], nhwc ? Layout::Nhwc : Layout::AsIs);
        static const int64_t nhwc_to_nchw[] = {0, 2, 3, 1};
        node("Concat", ins, {y}).attrs["axis"] = integer(nhwc ? nhwc_to_nchw[axis] : axis);
        fused(out[0], o->fused_activation_function());
        return true;
      }
      case SOFTMAX: {
        const auto* o = op->builtin_options_as_SoftmaxOptions();
        int x = asis(in.at(0));
        if (o && o->beta() != 1.0f) {
          int b = const_value("softmax_beta", Tensor::scalar_float(o->beta()));
          int m = new_value(tname(out[0]) + "_scaled", g_.value(x).shape);
          node("Mul", {x, b}, {m});
          x = m;
        }
        int y = output(out[0], Layout::AsIs);
        node("Softmax", {x}, {y}).attrs["axis"] = integer(-1);
        return true;
      }
      case PRELU: {
        // alpha in the image layout ([1, 1, C], [C] or one value): one slope per channel.
        need_inputs(2);
        int t = in.at(0);
        bool nhwc = !is_const(t) && layout_[t] == Layout::Nhwc;
        int x = nhwc ? ours_[t] : asis(t);
        Tensor alpha = constant(in[1]);
        const Shape& xs = g_.value(x).shape;
        int64_t c = nhwc ? xs[1] : xs.back();
        if (alpha.numel() != 1 && alpha.numel() != c)
          fail_op(": alpha " + interp::shape_str(alpha.shape) + " must hold one value or one per channel");
        alpha.shape = nhwc && alpha.numel() > 1 ? Shape{alpha.numel(), 1, 1} : Shape{alpha.numel()};
        int y = output(out[0], nhwc ? Layout::Nhwc : Layout::AsIs);
        node("PRelu", {x, const_value(tname(in[1]), std::move(alpha))}, {y});
        return true;
      }
      case LOGISTIC: case TANH: case RELU: case RELU6: case RELU_N1_TO_1: case HARD_SWISH: case LEAKY_RELU:
      case ELU: case QUANTIZE: case DEQUANTIZE: {
        int t = in.at(0);
        int x = (is_const(t) || layout_[t] == Layout::AsIs) ? asis(t) : ours_[t];
        Layout lay = (is_const(t) || layout_[t] == Layout::AsIs) ? Layout::AsIs : Layout::Nhwc;
        int y = output(out[0], lay);
        switch (code) {
          case LOGISTIC: node("Sigmoid", {x}, {y}); break;
          case TANH: node("Tanh", {x}, {y}); break;
          case RELU: node("Relu", {x}, {y}); break;
          case RELU6: clip(x, y, 0.0f, 6.0f); break;
          case RELU_N1_TO_1: clip(x, y, -1.0f, 1.0f); break;
          case HARD_SWISH: node("HardSwish", {x}, {y}); break;
          case ELU: node("Elu", {x}, {y}).attrs["alpha"] = real(1.0f); break;
          case LEAKY_RELU: {
            const auto* o = op->builtin_options_as_LeakyReluOptions();
            node("LeakyRelu", {x}, {y}).attrs["alpha"] = real(o ? o->alpha() : 0.2f);
            break;
          }
          default: node("Identity", {x}, {y}); break;  // (de)quantization: the float graph holds real values
        }
        return true;
      }
      case PAD:
      case PADV2: {
        need_inputs(2);
        std::vector<int64_t> p = constant(in[1]).to_ints();  // [rank, 2]
        Shape xs = tshape(in[0]);
        if (p.size() != 2 * xs.size()) fail_op(": paddings must be [rank, 2]");
        float value = 0.0f;
        if (code == PADV2 && in.size() > 2 && in[2] >= 0) {
          Tensor v = constant(in[2]);
          if (v.numel() > 0) value = static_cast<float>(v.at_double(0));
        }
        bool nhwc = xs.size() == 4 && !is_const(in[0]) && layout_[in[0]] == Layout::Nhwc;
        int x = nhwc ? ours_[in[0]] : asis(in[0]);
        std::vector<int64_t> pads(p.size());
        size_t r = xs.size();
        static const size_t from_nhwc[] = {0, 3, 1, 2};  // NCHW axis d is NHWC axis from_nhwc[d]
        for (size_t d = 0; d < r; ++d) {
          size_t src = nhwc ? from_nhwc[d] : d;
          pads[d] = p[2 * src];
          pads[d + r] = p[2 * src + 1];
        }
        int y = output(out[0], nhwc ? Layout::Nhwc : Layout::AsIs);
        int pv = const_value("pads", Tensor::ints({static_cast<int64_t>(pads.size())}, pads));
        int cv = const_value("pad_value", Tensor::scalar_float(value));
        node("Pad", {x, pv, cv}, {y});
        return true;
      }
      default:
        return false;
    }
  }

  // A binary operand in NCHW: 4-D tensors transposed; lower-rank constants
  // aligned to NHWC's trailing axes, then laid out as NCHW.
  int broadcast_nchw(int t) {
    if (!is_const(t)) return nchw(t);
    Tensor c = constant(t);
    if (c.rank() == 4) return nchw(t);
    if (c.rank() == 0 || c.numel() == 1) return asis(t);
    Shape s4(4, 1);
    for (size_t k = 0; k < c.shape.size(); ++k) s4[4 - c.shape.size() + k] = c.shape[k];
    c.shape = s4;
    c = permute(c, {0, 3, 1, 2});
    return const_value(tname(t) + "_nchw", std::move(c), preset_of(t));
  }

  // Graph inputs read only as NCHW (through Transpose 0,3,1,2) become NCHW inputs.
  void relayout_inputs() {
    for (int in : g_.inputs) {
      std::vector<Node*> readers;
      bool all = true;
      for (auto& n : g_.nodes)
        for (int v : n.inputs)
          if (v == in) {
            bool t = n.op == "Transpose" && n.get_ints("perm") == std::vector<int64_t>{0, 3, 1, 2};
            all &= t;
            readers.push_back(&n);
          }
      if (!all || readers.empty()) continue;
      int target = readers[0]->outputs[0];
      g_.value(in).shape = g_.value(target).shape;
      for (auto& n : g_.nodes) {
        for (int& v : n.inputs)
          for (Node* r : readers)
            if (v == r->outputs[0]) v = in;
      }
      for (int& v : g_.outputs)
        for (Node* r : readers)
          if (v == r->outputs[0]) v = in;
      std::vector<Node> kept;
      for (auto& n : g_.nodes)
        if (std::find(readers.begin(), readers.end(), &n) == readers.end()) kept.push_back(std::move(n));
      g_.nodes = std::move(kept);
    }
    g_.relink();
  }

  const std::string& bytes_;
  std::string name_;
  ImportOptions opts_;
  const tfl::Model* model_ = nullptr;
  const tfl::SubGraph* sg_ = nullptr;
  Graph g_;
  std::vector<int> ours_;
  std::vector<Layout> layout_;
  std::vector<char> batched_;  // tensor -> carries the batch on axis 0 (when re-batching)
  int64_t batch_ = 0;          // the FIR batch when it differs from the file's, else 0
  int64_t file_batch_ = 1;
  std::map<int, int> asis_cache_, nchw_cache_;
  int op_index_ = 0;
  int sub_ = 0;
};

}  // namespace

interp::Graph import_tflite(const std::string& path, const ImportOptions& options) {
  return import_tflite_bytes(read_input(path), display_name(path), options);
}

interp::Graph import_tflite_bytes(const std::string& bytes, const std::string& name, const ImportOptions& options) {
  return TfliteImporter(bytes, name, options).run();
}

}  // namespace cct::frontend
