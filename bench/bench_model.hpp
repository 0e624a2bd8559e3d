// Benchmarks' default model: torchvision's resnet50 (random weights),
// exported once with examples/models/export_torchvision.py into the build's
// bench-cache/ directory (beside bench/).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

namespace cct::bench {

// The cached export's path, exporting it first when missing; "" (after a
// message naming `bench`) when the export fails.
inline std::string cached_resnet50(const char* argv0, const std::string& bench) {
  namespace fs = std::filesystem;
  fs::path cache = fs::absolute(fs::path(argv0)).parent_path().parent_path() / "bench-cache";
  fs::create_directories(cache);
  std::string model = (cache / "resnet50.onnx").string();
  if (fs::exists(model)) return model;
  std::string cmd = std::string("/usr/bin/python3 ") + CCT_BENCH_SOURCE_DIR +
                    "/examples/models/export_torchvision.py resnet50 '" + model + "'";
  std::cerr << "exporting resnet50: " << cmd << "\n";
  if (std::system(cmd.c_str()) != 0) {
    std::cerr << bench << ": export failed (needs Debian's python3-torch and python3-torchvision)\n";
    return "";
  }
  return model;
}

}  // namespace cct::bench
