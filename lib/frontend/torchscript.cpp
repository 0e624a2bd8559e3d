#include "frontend/torchscript.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/wait.h>

#include "support/error.hpp"
#include "support/io.hpp"

namespace cct::frontend {

namespace fs = std::filesystem;

const char* torchscript_export_script() {
  return R"PY(# onnx2fir's TorchScript -> ONNX helper: MODEL.pt OUT.onnx N,C,H,W
import sys
try:
    import torch
except ImportError:
    sys.stderr.write("python3-torch is not installed; on Debian: apt-get install python3-torch\n")
    sys.exit(3)
try:
    model = torch.jit.load(sys.argv[1], map_location="cpu")
except Exception as e:
    sys.stderr.write("not a TorchScript archive torch can load: %s\n" % e)
    sys.exit(4)
model.eval()
shape = [int(d) for d in sys.argv[3].split(",")]
x = torch.zeros(*shape)
try:
    torch.onnx.export(model, (x,), sys.argv[2], opset_version=13, input_names=["input"],
                      output_names=["output"], do_constant_folding=True)
except Exception as e:
    sys.stderr.write("torch.onnx.export failed: %s\n" % e)
    sys.exit(5)
)PY";
}

namespace {

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "onnx2fir-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw_io_error("cannot create a temporary directory under " + fs::temp_directory_path().string());
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

std::string torchscript_to_onnx(const std::string& path, const ImportOptions& options) {
  std::string name = display_name(path);
  if (options.input_shape.empty())
    throw_usage_error(name + ": a TorchScript model does not record its input shape; give --input-shape N,C,H,W");
  std::vector<int64_t> shape = options.input_shape;
  if (options.batch > 0) shape[0] = options.batch;
  std::string dims;
  for (size_t k = 0; k < shape.size(); ++k) dims += (k ? "," : "") + std::to_string(shape[k]);

  TempDir tmp;
  fs::path model = tmp.path / "model.pt";
  {
    // Also handles '-' and compressed input: the helper reads a plain file.
    std::string bytes = read_input(path);
    std::ofstream f(model, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw_io_error("cannot write " + model.string());
  }
  fs::path script = tmp.path / "export.py", out = tmp.path / "model.onnx", err = tmp.path / "stderr.txt";
  {
    std::ofstream f(script);
    f << torchscript_export_script();
  }
  const char* py = std::getenv("CCT_PYTHON");
  std::string python = py && *py ? py : "/usr/bin/python3";
  std::string cmd = quote(python) + " " + quote(script.string()) + " " + quote(model.string()) + " " +
                    quote(out.string()) + " " + quote(dims) + " >/dev/null 2>" + quote(err.string());
  int status = std::system(cmd.c_str());
  int code = status == -1 ? -1 : (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  std::string msg = slurp(err);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  if (auto p = msg.rfind('\n'); p != std::string::npos && code != 3) msg = msg.substr(p + 1);
  if (code == 127 || (code != 0 && !fs::exists(python)))
    throw_io_error(name + ": cannot run " + python + " to export the TorchScript model (install python3 and "
                   "python3-torch, or set CCT_PYTHON)");
  if (code == 3) throw_io_error(name + ": " + msg);
  if (code != 0) throw_input_error(name + ": TorchScript export failed: " + (msg.empty() ? "exit code " + std::to_string(code) : msg));
  if (!fs::exists(out)) throw_input_error(name + ": TorchScript export produced no ONNX file");
  return slurp(out);
}

}  // namespace cct::frontend
