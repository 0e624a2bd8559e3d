// The network zoo through the whole chain (label "slow"): torchvision
// MobileNetV2, MobileNetV3-Small, EfficientNet-B0, RegNetX-400MF,
// ResNeXt-50 32x4d, ResNet-50, the data movement networks SqueezeNet 1.1,
// GoogLeNet, DenseNet-121 (concats of many inputs of any channel counts) and
// ShuffleNetV2 (channel split and shuffle), AlexNet and VGG-11 (the last two
// stream their large dense layers' weights in runs, VGG-11 b4 on one core
// spills), LR-ASPP and DeepLabV3 MobileNetV3-Large and FCN ResNet-50 (resize),
// ConvNeXt-Tiny (channels-last Linear layers between permutes as 1x1
// convolutions, layer norms over channels on the host), ViT-B/16 (its
// sequence-first attention's dense layers on [N, T, D], the heads on the
// host; exported at each batch) (random weights), the TFLite
// files of the reference data, libonnx-testdata's pytorch-converted Conv2d,
// ConvTranspose2d and padding tests (grouped, depthwise, dilated, strided,
// padded; reflect, replicate, zero, constant) and node tests of pooling,
// resize, ConvTranspose, Pad (constant, edge, reflect), standalone
// BatchNormalization, activations, PReLU and Slice (calibrated on their own input), a
// small U-Net of export_torchvision.py (ConvTranspose2d, reflect and
// replicate padding), SSDlite320 MobileNetV3-Large with its
// post-processing on the host (the FIR's host graph), compiled by onnx2fir's
// pipeline at batch 1 and 4 (the largest networks at batch 1 only here,
// batch 4 in examples/zoo's table), mapped by gemini for zebu-1core and
// chip-64tops, and run by the functional model with golden checks. Each case
// must be bit for bit: every accelerator layer equal to its golden
// activations, the graph outputs equal to the quantized FIR
// interpreter's and a host graph's outputs to their goldens; and zebusim's MAC count must equal the network's MACs from
// the Frontend IR's shapes. One MESSAGE line per case. Batch 4 is in the
// "heavy" suite (registered as zoo_heavy), so ctest runs the two halves side
// by side. examples/zoo/run_zoo.py runs the same matrix through the tools.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "../testing/testing.hpp"
#include "fir/host_graph.hpp"
#include "frontend/onnx_import.hpp"
#include "support/error.hpp"
#include "zoo_util.hpp"

namespace fs = std::filesystem;
using namespace cct;

namespace {

// OnnxTest: pytorch-converted; OnnxNode: an operator's node test, whose
// inputs after the first are the operator's parameters, bound as constants.
enum class Kind { Torchvision, Tflite, OnnxTest, OnnxNode };

struct Net {
  std::string name;
  Kind kind;
  // torch's export writes the batch into the model (ShuffleNetV2's channel
  // shuffle reshapes to a constant [1, 2, C/2, H, W], ViT's attention to
  // [T, N*H, D/H]): exported at the batch
  // under test instead of resized by onnx2fir --batch.
  bool export_at_batch = false;
  // Batch 4 of the largest networks (minutes of interpreter and functional
  // work each) and of SSDlite (torch takes two minutes to export its batch-4
  // graph; its per-image branches merging on the batch is
  // tests/frontend/test_lower.cpp's) runs in examples/zoo/run_zoo.py's
  // table, not in the test suite, which keeps CI within its budget; batch 1
  // runs here.
  bool batch4_in_table_only = false;
};

const Net kNets[] = {
    {"mobilenet_v2", Kind::Torchvision},
    {"mobilenet_v3_small", Kind::Torchvision},
    {"efficientnet_b0", Kind::Torchvision},
    {"regnet_x_400mf", Kind::Torchvision},
    {"resnext50_32x4d", Kind::Torchvision},
    {"resnet50", Kind::Torchvision},
    {"squeezenet1_1", Kind::Torchvision},
    {"googlenet", Kind::Torchvision},
    {"densenet121", Kind::Torchvision},
    {"shufflenet_v2_x1_0", Kind::Torchvision, true},
    {"alexnet", Kind::Torchvision},
    {"vgg11", Kind::Torchvision},
    {"mobilenet_v2_quantized_1x3x224x224", Kind::Tflite},
    {"person_detect", Kind::Tflite},
    {"hello_world_int8", Kind::Tflite},
    {"test_Conv2d", Kind::OnnxTest},
    {"test_Conv2d_strided", Kind::OnnxTest},
    {"test_Conv2d_padding", Kind::OnnxTest},
    {"test_Conv2d_depthwise", Kind::OnnxTest},
    {"test_Conv2d_depthwise_padded", Kind::OnnxTest},
    {"test_Conv2d_depthwise_strided", Kind::OnnxTest},
    {"test_Conv2d_depthwise_with_multiplier", Kind::OnnxTest},
    {"test_Conv2d_groups", Kind::OnnxTest},
    {"test_Conv2d_dilated", Kind::OnnxTest},
    {"lraspp_mobilenet_v3_large", Kind::Torchvision},
    {"deeplabv3_mobilenet_v3_large", Kind::Torchvision},
    {"fcn_resnet50", Kind::Torchvision, false, true},
    {"convnext_tiny", Kind::Torchvision},
    {"vit_b_16", Kind::Torchvision, true, true},
    {"test_averagepool_2d_ceil", Kind::OnnxNode},
    {"test_averagepool_2d_default", Kind::OnnxNode},
    {"test_averagepool_2d_pads", Kind::OnnxNode},
    {"test_averagepool_2d_pads_count_include_pad", Kind::OnnxNode},
    {"test_averagepool_2d_precomputed_pads", Kind::OnnxNode},
    {"test_averagepool_2d_precomputed_pads_count_include_pad", Kind::OnnxNode},
    {"test_averagepool_2d_precomputed_same_upper", Kind::OnnxNode},
    {"test_averagepool_2d_precomputed_strides", Kind::OnnxNode},
    {"test_averagepool_2d_same_lower", Kind::OnnxNode},
    {"test_averagepool_2d_same_upper", Kind::OnnxNode},
    {"test_averagepool_2d_strides", Kind::OnnxNode},
    {"test_batchnorm_epsilon", Kind::OnnxNode},
    {"test_batchnorm_example", Kind::OnnxNode},
    {"test_clip", Kind::OnnxNode},
    {"test_clip_default_inbounds", Kind::OnnxNode},
    {"test_clip_default_max", Kind::OnnxNode},
    {"test_clip_default_min", Kind::OnnxNode},
    {"test_clip_example", Kind::OnnxNode},
    {"test_clip_inbounds", Kind::OnnxNode},
    {"test_clip_outbounds", Kind::OnnxNode},
    {"test_clip_splitbounds", Kind::OnnxNode},
    {"test_elu", Kind::OnnxNode},
    {"test_elu_default", Kind::OnnxNode},
    {"test_elu_example", Kind::OnnxNode},
    {"test_leakyrelu", Kind::OnnxNode},
    {"test_leakyrelu_default", Kind::OnnxNode},
    {"test_leakyrelu_example", Kind::OnnxNode},
    {"test_maxpool_2d_ceil", Kind::OnnxNode},
    {"test_maxpool_2d_default", Kind::OnnxNode},
    {"test_maxpool_2d_dilations", Kind::OnnxNode},
    {"test_maxpool_2d_pads", Kind::OnnxNode},
    {"test_maxpool_2d_precomputed_pads", Kind::OnnxNode},
    {"test_maxpool_2d_precomputed_same_upper", Kind::OnnxNode},
    {"test_maxpool_2d_precomputed_strides", Kind::OnnxNode},
    {"test_maxpool_2d_same_lower", Kind::OnnxNode},
    {"test_maxpool_2d_same_upper", Kind::OnnxNode},
    {"test_maxpool_2d_strides", Kind::OnnxNode},
    {"test_resize_downsample_scales_linear", Kind::OnnxNode},
    {"test_resize_downsample_scales_linear_align_corners", Kind::OnnxNode},
    {"test_resize_downsample_scales_nearest", Kind::OnnxNode},
    {"test_resize_downsample_sizes_linear_pytorch_half_pixel", Kind::OnnxNode},
    {"test_resize_downsample_sizes_nearest", Kind::OnnxNode},
    {"test_resize_downsample_sizes_nearest_tf_half_pixel_for_nn", Kind::OnnxNode},
    {"test_resize_upsample_scales_linear", Kind::OnnxNode},
    {"test_resize_upsample_scales_linear_align_corners", Kind::OnnxNode},
    {"test_resize_upsample_scales_nearest", Kind::OnnxNode},
    {"test_resize_upsample_sizes_nearest_ceil_half_pixel", Kind::OnnxNode},
    {"test_resize_upsample_sizes_nearest_floor_align_corners", Kind::OnnxNode},
    {"test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric", Kind::OnnxNode},
    {"test_upsample_nearest", Kind::OnnxNode},
    {"test_prelu_broadcast", Kind::OnnxNode},
    {"test_slice_default_axes", Kind::OnnxNode},
    {"test_slice_default_steps", Kind::OnnxNode},
    {"test_slice_end_out_of_bounds", Kind::OnnxNode},
    {"test_slice_neg", Kind::OnnxNode},
    {"test_slice_negative_axes", Kind::OnnxNode},
    // Transposed convolution (a zero-insertion resize and a convolution) and
    // reflect / edge / constant padding, from ONNX's node tests, PyTorch's
    // converted tests and a small U-Net.
    {"test_convtranspose", Kind::OnnxNode},
    {"test_convtranspose_autopad_same", Kind::OnnxNode},
    {"test_convtranspose_dilations", Kind::OnnxNode},
    {"test_convtranspose_kernel_shape", Kind::OnnxNode},
    {"test_convtranspose_output_shape", Kind::OnnxNode},
    {"test_convtranspose_pad", Kind::OnnxNode},
    {"test_convtranspose_pads", Kind::OnnxNode},
    {"test_convtranspose_with_kernel", Kind::OnnxNode},
    {"test_constant_pad", Kind::OnnxNode},
    {"test_edge_pad", Kind::OnnxNode},
    {"test_reflect_pad", Kind::OnnxNode},
    {"test_ConvTranspose2d", Kind::OnnxTest},
    {"test_ConvTranspose2d_no_bias", Kind::OnnxTest},
    {"test_ReflectionPad2d", Kind::OnnxTest},
    {"test_ReplicationPad2d", Kind::OnnxTest},
    {"test_ZeroPad2d", Kind::OnnxTest},
    {"test_ConstantPad2d", Kind::OnnxTest},
    {"tiny_unet", Kind::Torchvision},
    // Networks all on the host (gemini maps no layer; the program waits for
    // one host step, or nothing): an identity transpose, a reduction over a
    // 3-D tensor, softmax.
    {"test_transpose_all_permutations_0", Kind::OnnxNode},
    {"test_reduce_mean_keepdims_example", Kind::OnnxNode},
    {"test_softmax_example", Kind::OnnxNode},
    // SSDlite: backbone and heads on the chip; its box decoding, score
    // thresholds, TopK and NMS (NonZero, GatherND, TopK, If) are the FIR's
    // host graph, run on the host in its step: boxes, scores and labels
    // equal to their goldens. The export writes the batch into the graph
    // (the image list, the per-image transform, whose branches onnx2fir
    // merges into one on the batch, and post-processing).
    {"ssdlite320_mobilenet_v3_large", Kind::Torchvision, true, true},
    // 1-D pooling and transposed convolution: the 2-D operator over a row
    // ([N, C, L] viewed as [N, C, 1, L]) between host reshapes.
    {"test_maxpool_1d_default", Kind::OnnxNode},
    {"test_averagepool_1d_default", Kind::OnnxNode},
    {"test_convtranspose_1d", Kind::OnnxNode},
    // LayerNormalization over the trailing axes from `axis` (flattened into
    // one), with its Mean and InvStdDev outputs, all on the host. Those whose
    // normalisation takes in axis 0, the batch here (test_layer_normalization
    // _2d_axis0, _3d_axis0_epsilon, _4d_axis0 and the negative axes equal to
    // them), do not fit this matrix, whose samples are repeated to the batch:
    // tests/func/test_func_host.cpp runs every LayerNormalization node test.
    {"test_layer_normalization_2d_axis1", Kind::OnnxNode},
    {"test_layer_normalization_2d_axis_negative_1", Kind::OnnxNode},
    {"test_layer_normalization_3d_axis1_epsilon", Kind::OnnxNode},
    {"test_layer_normalization_3d_axis2_epsilon", Kind::OnnxNode},
    {"test_layer_normalization_3d_axis_negative_1_epsilon", Kind::OnnxNode},
    {"test_layer_normalization_3d_axis_negative_2_epsilon", Kind::OnnxNode},
    {"test_layer_normalization_4d_axis1", Kind::OnnxNode},
    {"test_layer_normalization_4d_axis2", Kind::OnnxNode},
    {"test_layer_normalization_4d_axis3", Kind::OnnxNode},
    {"test_layer_normalization_4d_axis_negative_1", Kind::OnnxNode},
    {"test_layer_normalization_4d_axis_negative_2", Kind::OnnxNode},
    {"test_layer_normalization_4d_axis_negative_3", Kind::OnnxNode},
    {"test_layer_normalization_default_axis", Kind::OnnxNode},
};
const std::string kArchs[] = {"zebu-1core", "chip-64tops"};

// As tests/interp/test_onnx_node_tests.cpp finds ONNX's test data.
std::string onnx_testdata_dir() {
  const char* e = std::getenv("CCT_ONNX_TESTDATA");
  return e && *e ? e : "/usr/share/libonnx-testdata/data";
}

std::string model_path(const Net& n, int batch) {
  switch (n.kind) {
    case Kind::Torchvision:
      return testing::torchvision_onnx(n.name, n.export_at_batch ? batch : 1);
    case Kind::Tflite: return testing::reference_dir() + "/tflite/" + n.name + ".tflite";
    case Kind::OnnxTest:
    case Kind::OnnxNode: {
      fs::path p = fs::path(onnx_testdata_dir()) / (n.kind == Kind::OnnxNode ? "node" : "pytorch-converted") / n.name / "model.onnx";
      if (!fs::exists(p)) FAIL("ONNX test data not found at " << p << " (install libonnx-testdata or set CCT_ONNX_TESTDATA)");
      return p.string();
    }
  }
  return "";
}

// A test set's tensor at another batch: sample k is the set's sample k mod n.
interp::Tensor at_batch(const interp::Tensor& t, int64_t batch) {
  REQUIRE(!t.shape.empty());
  int64_t n = t.shape[0], per = t.numel() / n;
  interp::Tensor out = t;
  out.shape[0] = batch;
  out.f.resize(size_t(batch * per));
  for (int64_t b = 0; b < batch; ++b)
    std::copy(t.f.begin() + (b % n) * per, t.f.begin() + (b % n + 1) * per, out.f.begin() + b * per);
  return out;
}

// A test set's tensor as floats: the integer tensors of a few node tests
// (test_edge_pad's int32 ramps) are small integers the chip holds as INT8
// like any activation (onnx2fir imports such an input as float).
interp::Tensor read_pb(const fs::path& p) {
  REQUIRE_MESSAGE(fs::exists(p), p << " is missing");
  interp::Tensor t = frontend::parse_onnx_tensor(testing::read_file(p.string()), p.string());
  if (t.is_float()) return t;
  interp::Tensor f = interp::Tensor::floats(t.shape);
  for (int64_t k = 0; k < t.numel(); ++k) f.f[size_t(k)] = static_cast<float>(t.at_double(k));
  return f;
}

struct Prepared {
  // The FIR; c.input is the network input, c.dir holds weights and goldens,
  // c.outputs the interpreter's graph outputs (host layers included: the
  // functional run runs them with the same interpreter).
  func_test::Compiled c;
  std::string skipped;    // why the case is not run
  std::string stage;      // what failed before the chain: onnx2fir, or the test set
  std::string error;      // its message
  std::vector<std::string> dirs;  // made for it beside the compiled model's (calibration input, test data)
};

// onnx2fir's pipeline at `batch`; the ONNX tests run on their own input
// (test_data_set_0, samples repeated to the batch), with goldens recomputed by
// the interpreter for it, and the interpreter's float output must be close to
// the set's expected output (the INT8 model is an approximation).
Prepared prepare(const Net& n, int batch) {
  Prepared p;
  std::string path = model_path(n, batch);
  try {
    std::vector<std::pair<std::string, std::string>> constants;
    if (n.kind == Kind::OnnxNode)
      for (int k = 1; fs::exists(fs::path(path).parent_path() / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb")); ++k)
        constants.emplace_back("", (fs::path(path).parent_path() / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb")).string());
    // A node test calibrates on its own input: its values (ramps up to 25,
    // say) lie beyond the range random normal samples calibrate.
    std::string calib;
    if (n.kind == Kind::OnnxNode) {
      calib = testing::temp_dir("zoo/calib_" + n.name);
      p.dirs.push_back(calib);
      interp::Tensor x0 = read_pb(fs::path(path).parent_path() / "test_data_set_0" / "input_0.pb");
      write_npy(calib + "/input_0.npy", NpyArray::from_float(x0.f, x0.shape));
    }
    p.c = func_test::compile_model(path, batch, "zoo_" + n.name, constants, calib);
  } catch (const Error& e) {
    if (n.kind == Kind::Tflite && batch != 1)
      p.skipped = "a TFLite model has a fixed batch; onnx2fir refuses --batch " + std::to_string(batch) + ": " + e.what();
    else if (n.kind == Kind::OnnxNode && batch != 1)
      p.skipped = "the node test fixes its batch (e.g. a Resize's sizes); onnx2fir refuses --batch " + std::to_string(batch) +
                  ": " + zoo::first_line(e.what());
    else
      p.stage = "onnx2fir", p.error = zoo::first_line(e.what());
    return p;
  }
  if (n.kind == Kind::OnnxTest || n.kind == Kind::OnnxNode) {
    fs::path set = fs::path(path).parent_path() / "test_data_set_0";
    interp::Tensor x = at_batch(read_pb(set / "input_0.pb"), batch);
    // Every graph output (LayerNormalization's Y, Mean and InvStdDev, say).
    std::vector<interp::Tensor> ys;
    for (int k = 0; fs::exists(set / ("output_" + std::to_string(k) + ".pb")); ++k)
      ys.push_back(at_batch(read_pb(set / ("output_" + std::to_string(k) + ".pb")), batch));
    std::string dir = testing::temp_dir("zoo/data_" + n.name + "_b" + std::to_string(batch));
    p.dirs.push_back(dir);
    for (const auto& e : fs::directory_iterator(p.c.dir))
      if (e.path().extension() == ".npy") fs::copy_file(e.path(), fs::path(dir) / e.path().filename());
    p.c.dir = dir;
    p.c.input = NpyArray::from_float(x.f, x.shape);
    p.c.outputs = func_test::write_goldens(p.c.graph, interp::directory_loader(dir), p.c.input, dir);
    const auto& got = p.c.outputs;
    bool fits = got.size() == ys.size();
    for (size_t o = 0; fits && o < got.size(); ++o) fits = got[o].shape == ys[o].shape && !got[o].is_int8();
    if (!fits) {
      p.stage = "test set";
      p.error = "the Frontend IR's outputs are not the test set's: " + std::to_string(got.size()) + " outputs, the first " +
                interp::shape_str(got.empty() ? interp::Shape{} : got[0].shape) + " " +
                (got.empty() ? std::string("-") : got[0].dtype) + "; test_data_set_0 has " + std::to_string(ys.size()) +
                ", the first " + interp::shape_str(ys.empty() ? interp::Shape{} : ys[0].shape);
      return p;
    }
    // Against the test set's expected (float) outputs: the INT8 model
    // approximates them (calibrated on random inputs, so values beyond the
    // calibrated range clip), but a wrong grouping, dilation or padding
    // would not come close.
    for (size_t o = 0; o < ys.size(); ++o) {
      const interp::Tensor& y = ys[o];
      double dot = 0, gg = 0, yy = 0, err = 0, range = 0;
      for (int64_t k = 0; k < y.numel(); ++k) {
        double a = got[o].f[size_t(k)], b = y.f[size_t(k)];
        dot += a * b, gg += a * a, yy += b * b;
        err = std::max(err, std::fabs(a - b));
        range = std::max(range, std::fabs(b));
      }
      double cosine = dot / std::sqrt(std::max(gg * yy, 1e-300));
      MESSAGE(n.name << " b" << batch << ": the INT8 interpreter against test_data_set_0's output " << o << ": cosine "
                     << cosine << ", max error " << err << " (largest value " << range << ")");
      CHECK_MESSAGE(cosine >= 0.99, n.name << " b" << batch << ": the INT8 interpreter's output " << o
                                           << " is far from the test set's (cosine " << cosine << ")");
    }
  }
  return p;
}

void run_matrix(int batch) {
  int cases = 0, passed = 0, skipped = 0;
  std::vector<std::string> failing;
  // CCT_ZOO_ONLY=a,b runs those networks only (a quick look at a few).
  const char* only = std::getenv("CCT_ZOO_ONLY");
  for (const Net& n : kNets) {
    if (only && *only && ("," + std::string(only) + ",").find("," + n.name + ",") == std::string::npos) continue;
    if (batch != 1 && n.batch4_in_table_only && !(only && *only)) continue;
    Prepared p = prepare(n, batch);
    const int64_t npu = p.skipped.empty() && p.error.empty() ? zoo::npu_layers(p.c.graph) : 0;
    const int64_t real = p.skipped.empty() && p.error.empty() ? zoo::real_macs(p.c.graph) : 0;
    const size_t failing_before = failing.size();
    for (const std::string& arch : kArchs) {
      ++cases;
      std::string where = n.name + " b" + std::to_string(batch) + " " + arch;
      if (!p.skipped.empty()) {
        ++skipped;
        MESSAGE(where << ": skipped (" << p.skipped << ")");
        continue;
      }
      if (!p.error.empty()) {
        MESSAGE(where << ": " << p.stage << ": " << p.error);
        CHECK_MESSAGE(false, where << ": " << p.stage << ": " << p.error);
        failing.push_back(where + ": " + p.stage);
        continue;
      }
      std::string dir = testing::temp_dir("zoo/" + n.name + "_b" + std::to_string(batch) + "_" + arch);
      p.dirs.push_back(dir);
      zoo::Case k = zoo::run(zoo::build(p.c, arch, dir), p.c, p.c.input, p.c.dir);
      if (k.ok()) {
        // Every accelerator layer checked, outputs bit for bit.
        std::vector<std::string> problems;
        // Data movement done by transfers alone is checked through its readers.
        const int64_t moves = zoo::npu_move_layers(p.c.graph);
        if (k.layers_checked < npu - moves || k.layers_checked > npu)
          problems.push_back(std::to_string(k.layers_checked) + " of " + std::to_string(npu) + " accelerator layers (" +
                             std::to_string(moves) + " data movement) matched their golden activations");
        if (k.outputs.size() != p.c.outputs.size())
          problems.push_back(std::to_string(k.outputs.size()) + " outputs, the interpreter has " + std::to_string(p.c.outputs.size()));
        for (size_t o = 0; o < std::min(k.outputs.size(), p.c.outputs.size()); ++o)
          if (!func_test::same_bits(k.outputs[o].tensor, p.c.outputs[o]))
            problems.push_back(k.outputs[o].name + " differs from the quantized FIR interpreter's");
        // The model's outputs, when the host graph computes them: each equal to its golden.
        if (const fir::HostGraph* hg = p.c.graph.host_graph();
            hg && (k.host_graph_checked != int64_t(hg->outputs.size()) || k.host_graph_outputs.size() != hg->outputs.size()))
          problems.push_back(std::to_string(k.host_graph_checked) + " of the host graph's " + std::to_string(hg->outputs.size()) +
                             " outputs equal to their goldens");
        if (!problems.empty()) {
          k.stage = "functional";
          for (const auto& s : problems) k.error += (k.error.empty() ? "" : "; ") + s;
        }
      }
      bool macs_ok = k.sim_macs == real;
      std::ostringstream line;
      line << where << ": " << k.status() << " | cycles " << k.cycles << ", zebusim MACs " << k.sim_macs << ", real MACs "
           << real;
      if (k.sim_macs >= 0 && real > 0) line << " (x" << double(k.sim_macs) / double(real) << ")";
      line << ", gemini " << k.gemini_cycles << " cycles";
      if (k.layers_checked >= 0) line << ", " << k.layers_checked << "/" << npu << " layers golden";
      if (k.functional_seconds > 0) line << ", functional run " << k.functional_seconds << " s";
      if (!k.note.empty()) line << "; " << k.note;
      MESSAGE(line.str());
      CHECK_MESSAGE(k.ok(), where << ": " << k.status());
      if (k.sim_macs >= 0)
        CHECK_MESSAGE(macs_ok, where << ": zebusim counts " << k.sim_macs << " MACs, the network has " << real);
      if (k.ok() && macs_ok) ++passed;
      else failing.push_back(where + ": " + (k.ok() ? "MACs" : k.stage));
    }
    // A network that passed leaves no files: the goldens of the whole matrix
    // would fill gigabytes before the run ends. A failing one keeps them.
    if (failing.size() == failing_before) {
      func_test::forget_model("zoo_" + n.name, batch);
      for (const std::string& d : p.dirs) testing::discard_temp_dir(d);
    }
  }
  MESSAGE("zoo batch " << batch << ": " << passed << " of " << cases << " cases bit for bit with zebusim's MACs equal to the network's, "
                       << skipped << " skipped; failing:\n"
                       << testing::joined(failing));
  CHECK(passed + skipped == cases);
}

}  // namespace

TEST_CASE("the zoo at batch 1 on zebu-1core and chip-64tops: bit for bit, every layer golden, zebusim's MACs the network's") {
  run_matrix(1);
}

TEST_CASE("the zoo at batch 4 on zebu-1core and chip-64tops: bit for bit, every layer golden, zebusim's MACs the network's" *
          doctest::test_suite("heavy")) {
  run_matrix(4);
}
