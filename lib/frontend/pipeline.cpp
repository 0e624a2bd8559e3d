#include "frontend/pipeline.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "fir/fir.hpp"
#include "fir/host_graph.hpp"
#include "frontend/graph_passes.hpp"
#include "frontend/lower.hpp"
#include "frontend/quantize.hpp"
#include "frontend/tflite_import.hpp"
#include "frontend/torchscript.hpp"
#include "interp/fir_exec.hpp"
#include "interp/float_interp.hpp"
#include "interp/host_graph.hpp"
#include "support/error.hpp"
#include "support/io.hpp"

namespace cct::frontend {

using interp::Tensor;

void Similarity::add(const float* x, const float* y, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    double a = x[k], b = y[k];
    xy += a * b;
    xx += a * a;
    yy += b * b;
    diff += (a - b) * (a - b);
    sum += (a + b) * (a + b) / 4.0;
    max_diff = std::max(max_diff, std::fabs(a - b));
    max_x = std::max(max_x, std::fabs(a));
  }
}

double Similarity::max_error() const {
  if (max_x == 0.0) return max_diff == 0.0 ? 0.0 : 1.0;
  return max_diff / max_x;
}

double Similarity::cosine() const {
  if (xx == 0.0 && yy == 0.0) return 1.0;
  if (xx == 0.0 || yy == 0.0) return 0.0;
  return xy / std::sqrt(xx * yy);
}

double Similarity::euclidean() const {
  if (sum == 0.0) return diff == 0.0 ? 1.0 : 0.0;
  return 1.0 - std::sqrt(diff) / std::sqrt(sum);
}

interp::Graph load_model(const std::string& path, const ImportOptions& options) {
  std::string bytes = read_input(path);
  std::string name = display_name(path);
  std::string dir = path == "-" ? "." : std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const bool tflite = bytes.size() >= 8 && bytes.compare(4, 4, "TFL3") == 0;
  const bool zip = bytes.size() >= 4 && bytes.compare(0, 4, std::string("PK\x03\x04", 4)) == 0;
  if (tflite) return import_tflite_bytes(bytes, name, options);
  if (zip) {
    std::string onnx = torchscript_to_onnx(path, options);
    return import_onnx_bytes(onnx, name + " (exported to ONNX)", dir, options);
  }
  // The content decides; without a TFLite or zip signature the file is read
  // as ONNX, unless its name says it is one of the others: then the error
  // names that format (a damaged .tflite is not "not a valid ONNX model").
  std::string ext = std::filesystem::path(ends_with_zst(path) ? path.substr(0, path.size() - 4) : path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (ext == ".tflite")
    throw_input_error(name + ": not a valid TFLite model: no \"TFL3\" file identifier at byte 4 (corrupt or truncated file, or not TFLite?)");
  if (ext == ".pt" || ext == ".pth")
    throw_input_error(name + ": not a valid TorchScript model: not a zip archive (corrupt or truncated file, or not TorchScript?)");
  return import_onnx_bytes(bytes, name, dir, options);
}

namespace {

// Standard normal samples from a seeded generator with our own Box-Muller
// transform (libstdc++'s distributions are not portable).
void fill_normal(std::vector<float>& v, std::mt19937_64& rng) {
  const double two_pi = 6.283185307179586;
  for (size_t k = 0; k < v.size(); k += 2) {
    double u1 = (static_cast<double>(rng() >> 11) + 1.0) / 9007199254740993.0;  // (0, 1]
    double u2 = static_cast<double>(rng() >> 11) / 9007199254740992.0;          // [0, 1)
    double r = std::sqrt(-2.0 * std::log(u1));
    v[k] = static_cast<float>(r * std::cos(two_pi * u2));
    if (k + 1 < v.size()) v[k + 1] = static_cast<float>(r * std::sin(two_pi * u2));
  }
}

// One sample per entry: each of shape [1, ...] of graph input 0.
std::vector<Tensor> load_samples(const std::string& dir, const interp::Shape& input_shape) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) throw_io_error(dir + ": not a directory (--calib expects a directory of .npy files)");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string p = e.path().string();
    if (e.is_regular_file() && (p.size() > 4 && (p.ends_with(".npy") || p.ends_with(".npy.zst")))) files.push_back(p);
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) throw_input_error(dir + ": no .npy files for calibration");
  interp::Shape one = input_shape;
  one[0] = 1;
  interp::Shape bare(input_shape.begin() + 1, input_shape.end());
  int64_t per = interp::shape_numel(one);
  std::vector<Tensor> out;
  for (const auto& f : files) {
    NpyArray a = read_npy(f);
    std::vector<float> v = a.to_float();
    int64_t n;
    if (a.shape == bare) n = 1;
    else if (a.shape.size() == one.size() && std::equal(a.shape.begin() + 1, a.shape.end(), one.begin() + 1)) n = a.shape[0];
    else
      throw_input_error(f + ": shape " + interp::shape_str(a.shape) + " does not match the model input " +
                        interp::shape_str(one) + " (or " + interp::shape_str(bare) + ", or a stack of samples)");
    for (int64_t s = 0; s < n; ++s)
      out.push_back(Tensor::floats(one, std::vector<float>(v.begin() + s * per, v.begin() + (s + 1) * per)));
  }
  return out;
}

// Stacks samples [k*B, k*B + B) (cyclically) into one batch per graph input.
std::vector<Tensor> make_batch(const std::vector<std::vector<Tensor>>& samples, const interp::Graph& g, size_t k) {
  std::vector<Tensor> batch;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const interp::Shape& s = g.value(g.inputs[i]).shape;
    int64_t B = s.empty() ? 1 : s[0];
    Tensor t = Tensor::floats(s);
    int64_t per = interp::shape_numel(s) / std::max<int64_t>(B, 1);
    const auto& pool = samples[i];
    for (int64_t b = 0; b < B; ++b) {
      const Tensor& src = pool[(k * static_cast<size_t>(B) + static_cast<size_t>(b)) % pool.size()];
      std::copy(src.f.begin(), src.f.end(), t.f.begin() + b * per);
    }
    batch.push_back(std::move(t));
  }
  return batch;
}

// What rounding to float16 does to the values a float16 tensor receives.
struct Float16Check {
  Similarity rounding;  // rounded against unrounded
  int64_t values = 0, zeroed = 0, infinite = 0;
  double max_abs = 0.0;
  std::vector<float> rounded;
  void add(const float* v, int64_t n) {
    rounded.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      rounded[i] = int8::to_float16(v[i]);
      if (std::isfinite(v[i])) {
        max_abs = std::max(max_abs, static_cast<double>(std::fabs(v[i])));
        infinite += std::isinf(rounded[i]);
      }
      zeroed += v[i] != 0.0f && rounded[i] == 0.0f;
    }
    values += n;
    rounding.add(v, rounded.data(), n);
  }
  // Float16 rounds a value by at most 2^-11 of it (euclidean >= 0.9995): a
  // 1% change is its range at work, not its precision.
  bool lossy() const { return values > 0 && (infinite > 0 || !(rounding.euclidean() >= 0.99)); }
  Float16Loss loss(const std::string& tensor) const {
    return {tensor, values, zeroed, infinite, max_abs, rounding.euclidean()};
  }
};

// The largest tensor the compiler takes (1 GiB of floats): larger declared
// shapes are damage or a model far beyond the accelerator, and the
// interpreter would try to allocate them.
constexpr int64_t kMaxTensorElements = int64_t{1} << 28;

void check_tensor_sizes(const interp::Graph& g) {
  for (const auto* list : {&g.inputs, &g.outputs})
    for (int i : *list)
      if (g.value(i).has_shape && g.value(i).shape.empty())
        throw_input_error(g.source + ": " + (list == &g.inputs ? "input" : "output") + " '" + g.value(i).name +
                          "' is a scalar; the model's inputs and outputs must be tensors");
  for (const auto& v : g.values) {
    if (!v.has_shape) continue;
    int64_t n = 1;
    bool over = false;
    for (int64_t d : v.shape) over = over || d < 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxTensorElements;
    if (over)
      throw_input_error(g.source + ": tensor '" + v.name + "' of shape " + interp::shape_str(v.shape) + " has more than " +
                        std::to_string(kMaxTensorElements) + " elements (the compiler's limit)");
  }
}

// A convolution's weights and bias (BatchNormalization folded in) are
// quantized to INT8: a NaN or infinite value has no INT8 code.
void check_finite_weights(const LoweredModel& m, const std::string& source) {
  for (const auto& l : m.layers)
    for (const auto* t : {&l.weight, &l.bias}) {
      if (!*t || !(*t)->is_float()) continue;
      for (float v : (*t)->f)
        if (!std::isfinite(v))
          throw_input_error(source + ": layer '" + l.name + "': its " + (t == &l.weight ? "weights" : "bias") +
                            " hold a NaN or infinite value (BatchNormalization folded in); INT8 cannot represent it");
    }
}

CompileResult compile_graph(interp::Graph graph, const CompileOptions& opt,
                            const std::function<void(const std::string&)>& progress) {
  auto say = [&](const std::string& s) {
    if (progress) progress(s);
  };
  CompileResult res;
  std::shared_ptr<const fir::HostGraph> host_graph;  // the post-processing, run on the host
  std::vector<std::pair<std::string, NpyArray>> host_files;
  check_tensor_sizes(graph);
  simplify(graph);
  check_tensor_sizes(graph);  // shapes completed by running the graph
  if (PostProcessing pp = find_post_processing(graph); !pp.nodes.empty()) {
    std::map<std::string, int> ops;
    for (int k : pp.nodes) ++ops[graph.nodes[static_cast<size_t>(k)].op];
    std::string op_list;
    for (const auto& [op, n] : ops) op_list += (op_list.empty() ? "" : ", ") + op + " x" + std::to_string(n);
    std::string in_list;
    for (int v : pp.inputs) in_list += (in_list.empty() ? "'" : ", '") + graph.value(v).name + "' " +
                                       interp::shape_str(graph.value(v).shape);
    const std::string what = std::to_string(pp.nodes.size()) + " node(s) of post-processing from " + pp.first +
                             " on (" + op_list + ")";
    for (int v : pp.inputs)
      if (graph.value(v).producer < 0)
        throw_input_error(graph.source + ": the post-processing (" + what + ") reads the network input '" +
                          graph.value(v).name + "', which the FIR does not pass on to the host");
    // The FIR's outputs: the model's outputs the post-processing does not
    // compute, then the values it reads.
    std::vector<int> outs;
    std::set<int> cut(pp.nodes.begin(), pp.nodes.end());
    for (int v : graph.outputs)
      if (graph.value(v).producer < 0 || !cut.count(graph.value(v).producer)) outs.push_back(v);
    std::vector<int> computed;
    std::string dropped;
    for (int v : graph.outputs)
      if (std::find(outs.begin(), outs.end(), v) == outs.end()) {
        computed.push_back(v);
        dropped += (dropped.empty() ? "'" : ", '") + graph.value(v).name + "'";
      }
    std::vector<std::string> from;
    for (int v : pp.inputs) {
      auto at = std::find(outs.begin(), outs.end(), v);
      if (at == outs.end()) at = outs.insert(outs.end(), v);
      from.push_back("output" + std::to_string(at - outs.begin() + 1));
    }
    if (opt.cut_postprocess) {
      res.postprocess.push_back("cut off (--cut-postprocess): " + what + ", computing output(s) " + dropped);
      res.postprocess.push_back("the FIR's outputs are instead its inputs: " + in_list);
    } else {
      std::vector<std::string> golden;
      for (size_t k = 0; k < computed.size(); ++k) {
        if (graph.value(computed[k]).dtype == interp::DType::Unknown)
          throw_input_error(graph.source + ": model output '" + graph.value(computed[k]).name +
                            "' has no declared element type (the host graph's outputs need one)");
        golden.push_back("host_graph_output" + std::to_string(k + 1) + ".npy");
      }
      host_graph = std::make_shared<fir::HostGraph>(interp::make_host_graph(
          graph, pp.nodes, pp.inputs, from, computed, golden, dynamic_values(graph), host_files));
      res.postprocess.push_back("on the host (" + std::string(fir::kHostGraphKey) + ", data-dependent shapes): " + what +
                                ", computing output(s) " + dropped);
      res.postprocess.push_back("it reads the FIR's outputs " + in_list);
    }
    for (const auto& c : res.postprocess) res.notes.push_back(c);
    graph.outputs = outs;
    graph.prune();
    if (graph.outputs.empty() || dynamic_values(graph) != std::vector<char>(graph.values.size(), 0))
      throw Error(kExitInternal, graph.source + ": cutting off the post-processing left no static graph");
  }
  LowerOptions lo;
  lo.output_dtype = opt.output_dtype;
  LoweredModel m = lower(graph, lo);
  check_finite_weights(m, graph.source);
  res.cpu_fallbacks = m.cpu_fallbacks;
  say("lowered to " + std::to_string(m.layers.size()) + " layers");

  // Calibration samples.
  std::vector<std::vector<Tensor>> samples(graph.inputs.size());
  if (!opt.calib_dir.empty()) {
    if (graph.inputs.size() != 1) throw_usage_error("--calib supports models with one input; use --calib-random");
    samples[0] = load_samples(opt.calib_dir, graph.value(graph.inputs[0]).shape);
  } else {
    int n = opt.calib_random > 0 ? opt.calib_random : 8;
    if (opt.calib_random <= 0) res.notes.push_back("no --calib or --calib-random given: calibrating on 8 random inputs");
    std::mt19937_64 rng(opt.seed);
    for (size_t i = 0; i < graph.inputs.size(); ++i) {
      interp::Shape one = graph.value(graph.inputs[i]).shape;
      if (!one.empty()) one[0] = 1;
      for (int s = 0; s < n; ++s) {
        Tensor t = Tensor::floats(one);
        fill_normal(t.f, rng);
        samples[i].push_back(std::move(t));
      }
    }
  }
  size_t n_samples = samples.empty() ? 0 : samples[0].size();
  int64_t B = graph.inputs.empty() || graph.value(graph.inputs[0]).shape.empty() ? 1 : graph.value(graph.inputs[0]).shape[0];
  size_t batches = (n_samples + static_cast<size_t>(B) - 1) / static_cast<size_t>(B);
  res.calibration_samples = static_cast<int>(n_samples);
  if (n_samples % static_cast<size_t>(B) != 0)
    res.notes.push_back(std::to_string(n_samples) + " calibration samples do not fill batches of " + std::to_string(B) +
                        "; the last batch repeats samples from the start");

  // Float pass: activation statistics.
  std::vector<RangeStats> stats(graph.values.size());
  std::vector<char> needed(graph.values.size(), 0);
  for (const auto& vals : m.qclass_values)
    for (int v : vals) needed[v] = 1;
  interp::FloatInterpreter fi(graph);
  for (size_t b = 0; b < batches; ++b) {
    fi.run(make_batch(samples, graph, b), [&](int v, const Tensor& t) {
      // The lowering went by the shapes the file declares: a file whose
      // declared shapes its operators do not produce is inconsistent.
      const auto& val = graph.value(v);
      if (val.has_shape && t.shape != val.shape)
        throw_input_error(graph.source + ": tensor '" + val.name + "' is declared " + interp::shape_str(val.shape) +
                          " but its operator computes " + interp::shape_str(t.shape));
      if (needed[v] && t.is_float()) stats[v].observe(t.f.data(), static_cast<int64_t>(t.f.size()));
    });
  }
  for (size_t k = 0; k < graph.inputs.size(); ++k) {
    int v = graph.inputs[k];
    if (!needed[v]) continue;
    for (size_t b = 0; b < batches; ++b) {
      auto batch = make_batch(samples, graph, b);
      stats[v].observe(batch[k].f.data(), static_cast<int64_t>(batch[k].f.size()));
    }
  }
  say("calibrated on " + std::to_string(n_samples) + " sample(s) with " + calibrator_name(opt.calibrator));

  QuantizeOptions qo;
  qo.calibrator = opt.calibrator;
  qo.percentile = opt.percentile;
  QuantizedModel q = quantize(m, stats, qo, &graph);
  if (host_graph) {
    q.fir.set_host_graph(host_graph);
    for (auto& f : host_files) q.files.push_back(std::move(f));
  }
  auto problems = fir::check(q.fir, "<onnx2fir output>");
  if (!problems.empty()) {
    std::string msg = "the generated FIR is invalid (a bug in onnx2fir):";
    for (size_t k = 0; k < problems.size() && k < 10; ++k) msg += "\n  " + problems[k];
    throw Error(kExitInternal, msg);
  }
  res.fir_text = fir::format_fir(q.fir, opt.validate);
  res.files = std::move(q.files);

  if (!opt.golden && !opt.report) return res;

  std::map<std::string, const NpyArray*> by_name;
  for (const auto& [n, a] : res.files) by_name[n] = &a;
  const interp::FirExecutor::Loader load = [&](const std::string& f) -> NpyArray {
    auto it = by_name.find(f);
    if (it == by_name.end()) throw_input_error(f + ": not among the model files");
    return *it->second;
  };
  interp::FirExecutor exec(q.fir, load);

  if (opt.golden) {
    std::set<std::string> written;
    auto outputs = exec.run(make_batch(samples, graph, 0), [&](const fir::Layer& l, const std::vector<const interp::QTensor*>& in,
                                                 const interp::QTensor& out) {
      for (const auto& [role, file] : l.file_list) {
        if (by_name.count(file) || written.count(file)) continue;
        const interp::QTensor* t = nullptr;
        if (role == "output_activation1") t = &out;
        else if (role.rfind("input_activation", 0) == 0) {
          size_t i = static_cast<size_t>(std::stoi(role.substr(16))) - 1;
          if (i < in.size()) t = in[i];
        }
        if (!t) continue;
        res.golden.push_back({file, t->to_npy()});
        written.insert(file);
      }
    });
    // The model's outputs: the host graph on the FIR's (quantized) outputs.
    if (host_graph) {
      interp::HostGraphRunner host(q.fir, load, "<onnx2fir output>");
      auto results = host.run([&](const fir::Layer&, const std::string& output) { return outputs.at(fir::graph_output_position(output)); });
      for (size_t k = 0; k < results.size(); ++k)
        res.golden.push_back({host_graph->outputs[k].file, interp::tensor_to_npy(results[k], "model output '" + host_graph->outputs[k].name + "'")});
    }
    res.golden_outputs = std::move(outputs);
    say("golden activations for " + std::to_string(res.golden.size()) + " tensors");
  }

  if (opt.report) {
    const auto& layers = q.fir.layers();
    std::vector<Similarity> sim(m.layers.size());
    std::vector<Float16Check> layer16(m.layers.size()), input16(graph.inputs.size());
    std::vector<int> keep;
    for (const auto& l : m.layers)
      if (l.value >= 0) keep.push_back(l.value);
    std::sort(keep.begin(), keep.end());
    keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
    std::map<int, size_t> slot;
    for (size_t k = 0; k < keep.size(); ++k) slot[keep[k]] = k;
    std::map<std::string, size_t> layer_pos;
    for (size_t k = 0; k < layers.size(); ++k) layer_pos[layers[k].name] = k;
    // The INT8 network is compared with float before float16 rounding:
    // float16 turns values below 3e-8 into 0 (the logits of randomly
    // initialised MobileNets are about 3e-9), which would hide what the INT8
    // arithmetic computes. What the rounding does is measured apart, and when
    // it loses values the final output is also compared as the FIR computes
    // it, rounded (from the batch where that shows, catching up on earlier
    // ones, so networks without loss run the INT8 network once per batch).
    auto final_compare = [](Similarity& s, const std::vector<Tensor>& fout, const std::vector<interp::QTensor>& qout) {
      for (size_t o = 0; o < fout.size() && o < qout.size(); ++o)
        if (!qout[o].is_int8() && static_cast<int64_t>(qout[o].f.size()) == fout[o].numel())
          s.add(fout[o].f.data(), qout[o].f.data(), fout[o].numel());
    };
    auto any_loss = [&] {
      return std::any_of(layer16.begin(), layer16.end(), [](const Float16Check& c) { return c.lossy(); }) ||
             std::any_of(input16.begin(), input16.end(), [](const Float16Check& c) { return c.lossy(); });
    };
    Similarity final_out, rounded_out;
    size_t rounded_done = 0;  // batches [0, rounded_done) are in rounded_out
    auto compare_rounded = [&](size_t upto) {
      for (; rounded_done < upto; ++rounded_done) {
        auto batch = make_batch(samples, graph, rounded_done);
        final_compare(rounded_out, fi.run(batch), exec.run(batch));
      }
    };
    for (size_t b = 0; b < batches; ++b) {
      auto batch = make_batch(samples, graph, b);
      for (size_t i = 0; i < batch.size() && i < input16.size(); ++i)
        input16[i].add(batch[i].f.data(), static_cast<int64_t>(batch[i].f.size()));
      std::vector<Tensor> kept;
      auto fout = fi.run(batch, nullptr, keep, &kept);
      auto observe = [&](const fir::Layer& l, const std::vector<const interp::QTensor*>&, const interp::QTensor& out) {
        size_t k = layer_pos[l.name];
        int v = m.layers[k].value;
        if (v < 0) return;
        const Tensor& ref = kept[slot[v]];
        if (!ref.is_float() || ref.numel() != out.numel()) return;
        // Reshapes and transposes pass int8 data through without their own
        // quantization fields: dequantize with the layer's class.
        std::vector<float> got;
        if (out.is_int8() && m.layers[k].qclass >= 0) {
          const auto& tq = q.class_quant[static_cast<size_t>(m.layers[k].qclass)];
          got.resize(out.q.size());
          for (size_t i = 0; i < got.size(); ++i) got[i] = static_cast<float>(tq.scale * (out.q[i] + tq.zero_point));
        } else {
          got = interp::real_values(l, out);
        }
        sim[k].add(ref.f.data(), got.data(), ref.numel());
        if (out.dtype == "float16") layer16[k].add(got.data(), static_cast<int64_t>(got.size()));
      };
      final_compare(final_out, fout, exec.run(batch, observe, nullptr, interp::FirExecutor::Float16::Fp32));
      if (any_loss()) {
        compare_rounded(b);
        final_compare(rounded_out, fout, exec.run(batch));
        rounded_done = b + 1;
      }
    }
    for (size_t i = 0; i < input16.size(); ++i)
      if (input16[i].lossy()) res.float16_losses.push_back(input16[i].loss("input" + std::to_string(i + 1)));
    for (size_t k = 0; k < layers.size(); ++k) {
      if (m.layers[k].value < 0) continue;
      LayerReport r;
      r.name = layers[k].name;
      r.operation = layers[k].operation;
      r.device = std::string(fir::device_name(layers[k].device));
      r.cosine = sim[k].cosine();
      r.euclidean = sim[k].euclidean();
      r.max_error = sim[k].max_error();
      r.flagged = sim[k].low();
      r.float16_lossy = layer16[k].lossy();
      if (r.float16_lossy) res.float16_losses.push_back(layer16[k].loss(r.name));
      res.report.push_back(r);
    }
    res.output_cosine = final_out.cosine();
    res.output_euclidean = final_out.euclidean();
    res.output_max_error = final_out.max_error();
    if (!res.float16_losses.empty()) {
      compare_rounded(batches);
      res.float16_output_cosine = rounded_out.cosine();
      res.float16_output_euclidean = rounded_out.euclidean();
    }
  }
  return res;
}

}  // namespace

// Problems found while compiling (an operator's kernel refusing its inputs,
// say) name the model file like those found while reading it.
CompileResult compile(interp::Graph graph, const CompileOptions& opt, const std::function<void(const std::string&)>& progress) {
  const std::string source = graph.source;
  try {
    return compile_graph(std::move(graph), opt, progress);
  } catch (const Error& e) {
    const std::string what = e.what();
    if (e.code() != kExitInvalidInput || source.empty() || what.rfind(source, 0) == 0) throw;
    throw Error(e.code(), source + ": " + what);
  }
}

}  // namespace cct::frontend
