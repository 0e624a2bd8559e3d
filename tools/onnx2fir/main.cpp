// onnx2fir: ONNX, TFLite and TorchScript models to the quantized, fused
// Frontend IR, with its .npy files.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "fir/host.hpp"
#include "fir/host_graph.hpp"
#include "frontend/pipeline.hpp"
#include "interp/parallel.hpp"
#include "support/cli.hpp"
#include "support/error.hpp"
#include "support/io.hpp"
#include "support/npy.hpp"

using namespace cct;
namespace fs = std::filesystem;

namespace {

std::vector<int64_t> parse_shape(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    try {
      size_t used = 0;
      long long v = std::stoll(part, &used);
      if (used != part.size() || v <= 0) throw std::invalid_argument(part);
      out.push_back(v);
    } catch (const std::exception&) {
      throw_usage_error("--input-shape: '" + s + "' is not a list of positive integers such as 1,3,224,224");
    }
  }
  if (out.empty()) throw_usage_error("--input-shape: empty shape");
  return out;
}

void add_files(OutputSet& out, const std::string& dir, const std::vector<std::pair<std::string, NpyArray>>& files) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw_io_error(dir + ": cannot create directory: " + ec.message());
  for (const auto& [name, a] : files) out.add((fs::path(dir) / name).string(), serialize_npy(a));
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  return buf;
}

}  // namespace

// What runs where and why: the FIR's device "cpu" layers, as the chain
// will run them (fir::host_plan): host steps, in program order, each layer
// with the reason it is not on the chip; reshapes the chip reads through.
static std::string host_report(const frontend::CompileResult& res) {
  const fir::Graph g = fir::parse_fir(res.fir_text, "FIR", {false, false});  // validated when written
  const fir::HostPlan plan = fir::host_plan(g, "FIR");
  std::map<std::string, std::string> why;
  for (const auto& c : res.cpu_fallbacks)
    if (auto k = c.find(": "); k != std::string::npos) why[c.substr(0, k)] = c.substr(k + 2);
  int64_t npu = 0, cpu = 0;
  for (const auto& l : g.layers()) (l.device == fir::Device::Npu ? npu : cpu) += 1;
  std::ostringstream out;
  for (const auto& c : res.postprocess) out << c << "\n";
  out << "on the accelerator: " << npu << " layer(s); on the host: " << plan.steps.size() << " step(s) of "
      << cpu - int64_t(plan.pass.size()) << " layer(s)";
  if (!plan.pass.empty()) out << ", " << plan.pass.size() << " reshape(s) the accelerator reads through";
  out << "\n";
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const auto& st = plan.steps[k];
    out << "host step " << k << " (" << st.ops << " element operations; reads";
    for (const auto& in : st.inputs) out << " " << in;
    out << "):\n";
    for (const fir::Layer* l : st.layers) {
      auto it = why.find(l->name);
      std::string reason = it != why.end() ? it->second
                           : l->op == fir::Op::Reshape ? "reshape of a host layer's result (stays on the host)"
                                                       : "device cpu in the FIR";
      out << "  " << l->name << " (" << fir::op_name(l->op) << "): " << reason << "\n";
    }
    if (st.host_graph)
      out << "  " << fir::kHostGraphKey << " (" << g.host_graph()->nodes.size()
          << " nodes): post-processing of data-dependent shapes, run by the reference interpreter\n";
  }
  for (const auto& [name, _] : plan.pass)
    out << "read through: " << name << " (reshape of accelerator data: the chip reads its input as it is stored)\n";
  return out.str();
}

int main(int argc, char** argv) {
  cli::ToolInfo info{
      "onnx2fir",
      "import an ONNX, TFLite or TorchScript model, fuse and quantize it to INT8, write the Frontend IR",
      "MODEL.onnx|MODEL.tflite|MODEL.pt",
      "The FIR goes to -o (stdout by default). Its .npy files (int8 weights 'k', int32 biases 'b',\n"
      "per-channel weight scales 'k_scale', constant operands) go to --data-dir, or next to the -o\n"
      "file; with --data-dir the golden activations of the first calibration batch, computed by the\n"
      "bit-accurate INT8 interpreter, are written there too.\n"
      "A post-processing of data-dependent shapes (NonZero, TopK, NonMaxSuppression, If) becomes the\n"
      "FIR's host graph (\"$host_graph\"): the host runs it on the FIR's outputs, and the model outputs'\n"
      "goldens (host_graph_output<k>.npy) come from those outputs as the INT8 FIR computes them.\n"
      "Calibration: --calib DIR reads every .npy in DIR (one sample [C,H,W] or [1,C,H,W], or a stack\n"
      "[n,C,H,W]); --calib-random N draws N seeded standard-normal samples (default 8).\n"
      "--report prints, per layer, the cosine and euclidean similarity (1 - |x-y| / |(x+y)/2|) and the\n"
      "max error (max |x-y| / max |x|) of the float model and the INT8 FIR over the calibration inputs,\n"
      "flagging cosine < 0.9 or euclidean < 0.5, compared before float16 rounding; float16 tensors that\n"
      "cannot hold their values are flagged apart.\n"
      "PyTorch: save the nn.Module as TorchScript (torch.jit.trace(model.eval(), x).save('m.pt')) and\n"
      "give --input-shape; it is exported to ONNX with /usr/bin/python3 (python3-torch)."};
  return cli::run_tool(
      argc, argv, info, {"model"},
      [](cxxopts::Options& o) {
        o.add_options()("model", "the model file ('-' = stdin)", cxxopts::value<std::string>());
        cli::add_output_option(o, "Frontend IR (JSON)");
        o.add_options()("batch", "batch size of the FIR (replaces the model's first input dimension)",
                        cxxopts::value<int64_t>(), "N")(
            "input-shape", "input shape, e.g. 1,3,224,224 (required for dynamic inputs and TorchScript)",
            cxxopts::value<std::string>(), "N,C,H,W")("calib", "directory of calibration .npy files",
                                                      cxxopts::value<std::string>(), "DIR")(
            "calib-random", "calibrate on N seeded random inputs", cxxopts::value<int>(), "N")(
            "calibrator", "minmax, percentile or kl", cxxopts::value<std::string>()->default_value("minmax"), "NAME")(
            "percentile", "percentile for --calibrator percentile", cxxopts::value<double>()->default_value("99.99"), "P")(
            "seed", "seed of --calib-random", cxxopts::value<uint64_t>()->default_value("1"), "S")(
            "data-dir", "write the .npy files (model and golden activations) here", cxxopts::value<std::string>(), "DIR")(
            "report", "compare float and INT8 layer by layer (on stderr)")(
            "output-dtype", "float16 (as the reference) or float32: type of the float outputs",
            cxxopts::value<std::string>()->default_value("float16"), "T")(
            "threads", "worker threads (default: all cores)", cxxopts::value<int>(), "N")(
            "constant-input", "give graph input NAME the value in FILE (.npy, or an ONNX TensorProto .pb, which may name the input itself): it "
            "becomes a constant",
            cxxopts::value<std::vector<std::string>>(), "NAME=FILE|FILE.pb")(
            "cut-postprocess", "leave out a data-dependent post-processing (NonZero, TopK, NonMaxSuppression, If: "
            "a detector's box decoding and NMS), which is otherwise the FIR's host graph, run by the host: the FIR's "
            "outputs are its inputs (said on stderr and by --report)")(
            "quiet", "no progress messages");
        cli::add_validate_option(o);
      },
      [](const cxxopts::ParseResult& r) {
        std::string model = cli::required(r, "model", "model file");
        std::string out = cli::output_path(r);
        bool quiet = r.count("quiet") > 0;
        if (r.count("threads")) {
          int t = r["threads"].as<int>();
          if (t < 1) throw_usage_error("--threads must be at least 1");
          interp::set_thread_count(t);
        }
        frontend::CompileOptions opt;
        if (r.count("input-shape")) opt.import.input_shape = parse_shape(r["input-shape"].as<std::string>());
        if (r.count("constant-input"))
          for (const std::string& b : r["constant-input"].as<std::vector<std::string>>()) {
            // NAME=FILE, or FILE: a TensorProto naming its input (ONNX's test sets' input_K.pb).
            auto eq = b.find('=');
            if (eq == std::string::npos) opt.import.constant_inputs.emplace_back("", b);
            else if (eq == 0 || eq + 1 == b.size()) throw_usage_error("--constant-input: '" + b + "' is not NAME=FILE or FILE");
            else opt.import.constant_inputs.emplace_back(b.substr(0, eq), b.substr(eq + 1));
          }
        if (r.count("batch")) {
          int64_t b = r["batch"].as<int64_t>();
          if (b < 1) throw_usage_error("--batch must be at least 1");
          opt.import.batch = b;
        }
        if (r.count("calib") && r.count("calib-random")) throw_usage_error("give either --calib or --calib-random, not both");
        if (r.count("calib")) opt.calib_dir = r["calib"].as<std::string>();
        if (r.count("calib-random")) {
          opt.calib_random = r["calib-random"].as<int>();
          if (opt.calib_random < 1) throw_usage_error("--calib-random must be at least 1");
        }
        opt.calibrator = frontend::parse_calibrator(r["calibrator"].as<std::string>());
        opt.percentile = r["percentile"].as<double>();
        if (!(opt.percentile > 50.0 && opt.percentile <= 100.0)) throw_usage_error("--percentile must be in (50, 100]");
        opt.seed = r["seed"].as<uint64_t>();
        opt.report = r.count("report") > 0;
        opt.cut_postprocess = r.count("cut-postprocess") > 0;
        opt.output_dtype = r["output-dtype"].as<std::string>();
        if (opt.output_dtype != "float16" && opt.output_dtype != "float32")
          throw_usage_error("--output-dtype must be float16 or float32");
        opt.validate = cli::validate_enabled(r);
        std::string data_dir;
        if (r.count("data-dir")) {
          data_dir = r["data-dir"].as<std::string>();
          opt.golden = true;
        } else if (out != "-") {
          data_dir = fs::path(out).parent_path().string();
          if (data_dir.empty()) data_dir = ".";
        }
        auto progress = [&](const std::string& s) {
          if (!quiet) std::cerr << "onnx2fir: " << s << "\n";
        };
        interp::Graph g = frontend::load_model(model, opt.import);
        progress("imported " + display_name(model) + ": " + std::to_string(g.nodes.size()) + " nodes, opset " +
                 std::to_string(g.opset));
        frontend::CompileResult res = frontend::compile(std::move(g), opt, progress);
        for (const auto& n : res.notes) cli::warn(n);
        for (const auto& c : res.cpu_fallbacks) cli::warn("on the cpu: " + c);
        // Everything is computed before anything is written.
        // The FIR and its .npy files are one unit: all written, or none.
        OutputSet files;
        if (!data_dir.empty()) {
          add_files(files, data_dir, res.files);
          add_files(files, data_dir, res.golden);
        } else {
          cli::warn("no --data-dir and the FIR goes to stdout: its .npy files are not written");
        }
        if (out != "-") {
          fs::path parent = fs::path(out).parent_path();
          std::error_code ec;
          if (!parent.empty()) fs::create_directories(parent, ec);
        }
        files.add_view(out, res.fir_text);
        files.commit();
        if (opt.report) {
          std::ostringstream rep;
          rep << "layer                                    operation         device  cosine    euclidean max error\n";
          int flagged = 0;
          for (const auto& l : res.report) {
            char line[256];
            std::snprintf(line, sizeof line, "%-40s %-17s %-7s %-9s %-9s %-9s%s%s\n", l.name.c_str(),
                          l.operation.c_str(), l.device.c_str(), fmt(l.cosine).c_str(), fmt(l.euclidean).c_str(),
                          fmt(l.max_error).c_str(), l.flagged ? "  LOW" : "", l.float16_lossy ? "  FLOAT16" : "");
            rep << line;
            flagged += l.flagged;
          }
          bool low = frontend::low_similarity(res.output_cosine, res.output_euclidean);
          rep << "final output cosine (INT8 vs float, " << res.calibration_samples
              << " calibration inputs): " << fmt(res.output_cosine) << ", euclidean " << fmt(res.output_euclidean)
              << ", max error " << fmt(res.output_max_error) << (low ? "  LOW" : "") << "\n";
          rep << flagged << " layer(s) under cosine 0.9 or euclidean 0.5\n";
          rep << host_report(res);
          if (!res.float16_losses.empty()) {
            rep << res.float16_losses.size()
                << " float16 tensor(s) cannot hold their values (float16: 6.0e-08 to 65504); compared above before "
                   "that rounding:\n";
            for (const auto& f : res.float16_losses) {
              char line[512];
              std::snprintf(line, sizeof line, "  %s: largest |x| %.2g, %lld of %lld values become 0, %lld infinite\n",
                            f.tensor.c_str(), f.max_abs, static_cast<long long>(f.zeroed),
                            static_cast<long long>(f.values), static_cast<long long>(f.infinite));
              rep << line;
            }
            bool low16 = frontend::low_similarity(res.float16_output_cosine, res.float16_output_euclidean);
            rep << "final output as the FIR computes it (float16 rounded, as the golden data and the chip): cosine "
                << fmt(res.float16_output_cosine) << ", euclidean " << fmt(res.float16_output_euclidean)
                << (low16 ? "  LOW" : "") << "\n";
            if (opt.output_dtype == "float16")
              rep << "--output-dtype float32 keeps the tensors on the way to the graph outputs in float32\n";
          }
          std::cerr << rep.str();
        }
        return kExitOk;
      });
}
