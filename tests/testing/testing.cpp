#include "testing.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace cct::testing {
namespace {
std::string env_or(const char* name, const std::string& dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : dflt;
}
}  // namespace

std::string reference_dir() {
  std::string dir = env_or("CCT_REFERENCE_DIR", source_dir() + "/../shared/reference");
  if (!fs::is_directory(dir)) {
    FAIL("reference data not found at " << dir
         << " (it lives in ../shared/reference beside the checkout; set CCT_REFERENCE_DIR to point elsewhere)");
  }
  return dir;
}

std::vector<std::string> reference_files(const std::string& sub) {
  std::string dir = reference_dir() + "/" + sub;
  std::vector<std::string> out;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file()) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  if (out.empty()) FAIL("no reference files in " << dir);
  return out;
}

std::string source_dir() { return env_or("CCT_SOURCE_DIR", CCT_TEST_SOURCE_DIR); }
std::string bin_dir() { return env_or("CCT_BIN_DIR", CCT_TEST_BIN_DIR); }

namespace {
std::vector<std::string>& made_temp_dirs() {
  static std::vector<std::string> dirs;
  return dirs;
}
bool keep_temp_dirs() {
  const char* v = std::getenv("CCT_KEEP_TEST_TMP");
  return v && *v && std::string(v) != "0";
}
}  // namespace

std::string temp_dir(const std::string& name) {
  fs::path p = fs::path(bin_dir()).parent_path() / "test-tmp" / name;
  fs::remove_all(p);
  fs::create_directories(p);
  made_temp_dirs().push_back(p.string());
  return p.string();
}

void discard_temp_dir(const std::string& dir) {
  if (keep_temp_dirs()) return;
  std::error_code ec;
  fs::remove_all(dir, ec);
}

void end_of_run(bool passed) {
  if (passed)
    for (const std::string& d : made_temp_dirs()) discard_temp_dir(d);
  made_temp_dirs().clear();
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  f << data;
}

std::string replace_first(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  if (at == std::string::npos) FAIL("'" << from << "' not found in the text to edit");
  return text.replace(at, from.size(), to);
}

std::string with_json_integer(std::string text, const std::string& key, int64_t value) {
  const std::string head = "\"" + key + "\": ";
  int found = 0;
  for (size_t at = text.find(head); at != std::string::npos; at = text.find(head, at + 1)) {
    size_t b = at + head.size(), e = b;
    while (e < text.size() && (std::isdigit(static_cast<unsigned char>(text[e])) || (e == b && text[e] == '-'))) ++e;
    if (e == b) continue;
    text.replace(b, e - b, std::to_string(value));
    ++found;
  }
  if (found == 0) FAIL("no integer \"" << key << "\" in the text to edit");
  return text;
}

int64_t integer_after(const std::string& text, const std::string& label, size_t from) {
  size_t at = text.find(label, from);
  if (at == std::string::npos) FAIL("'" << label << "' not found in: " << text.substr(0, 2000));
  at += label.size();
  while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
  size_t end = at;
  while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
  if (end == at) FAIL("no integer after '" << label << "' in: " << text.substr(0, 2000));
  return std::stoll(text.substr(at, end - at));
}

RunResult run(const std::string& command, const std::string& stdin_data) {
  static int counter = 0;
  std::string base = (fs::temp_directory_path() / ("cct-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++))).string();
  write_file(base + ".in", stdin_data);
  std::string cmd = "(" + command + ") <" + base + ".in >" + base + ".out 2>" + base + ".err";
  int status = std::system(cmd.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.out = read_file(base + ".out");
  r.err = read_file(base + ".err");
  fs::remove(base + ".in");
  fs::remove(base + ".out");
  fs::remove(base + ".err");
  return r;
}

std::string torchvision_onnx(const std::string& name, int batch) {
  fs::path dir = fs::path(bin_dir()).parent_path() / "model-cache";
  fs::create_directories(dir);
  std::string path = (dir / (name + (batch != 1 ? "-b" + std::to_string(batch) : "") + ".onnx")).string();
  if (!fs::exists(path)) {
    // Test processes run in parallel and may want the same model at once
    // (zoo and zoo_heavy walk one list): the first takes the model's lock and
    // exports it, the others wait and find the file (exporting it twice cost
    // CI's two cores the same time). Written aside and renamed into place, so
    // a killed export leaves no half model. (Exporting every model first, in
    // a fixture with a worker per core, made CI slower: 1324 s against 1226,
    // the fixture holding both cores before zoo_heavy, the longest test, could
    // start.)
    const std::string tmp = path + ".tmp" + std::to_string(getpid());
    const std::string export_cmd = "/usr/bin/python3 " + source_dir() + "/examples/models/export_torchvision.py " +
                                   name + " " + tmp + " --batch " + std::to_string(batch) + " && mv " + tmp + " " + path;
    auto r = run("flock " + path + ".lock sh -c 'test -f " + path + " || { " + export_cmd + "; }'");
    if (r.exit_code != 0)
      FAIL("export of " << name << " failed (are python3-torch and python3-torchvision installed?): " << r.err);
  }
  return path;
}

RunResult run_tool(const std::string& tool, const std::string& args, const std::string& stdin_data) {
  return run(bin_dir() + "/" + tool + " " + args, stdin_data);
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

}  // namespace cct::testing
