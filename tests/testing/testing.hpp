// Helpers shared by the test suites: where the reference data and the built
// tools are, and running a tool as a subprocess.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cct::testing {

// ../shared/reference (or $CCT_REFERENCE_DIR). Fails the current test with a
// clear message when the directory is missing.
std::string reference_dir();
// Files in reference_dir()/sub, sorted; fails the test when there are none.
std::vector<std::string> reference_files(const std::string& sub);

std::string source_dir();  // the project checkout
std::string bin_dir();     // where the tools were built

// A fresh empty directory under the build tree (build/test-tmp/<name>) for
// one test's files. A run that passes removes its directories when it ends,
// one that fails keeps them to look at; CCT_KEEP_TEST_TMP=1 keeps them always.
std::string temp_dir(const std::string& name);
// Removes a directory of temp_dir's at once (unless CCT_KEEP_TEST_TMP is set):
// for a matrix that goes through many networks in one test, whose goldens
// would otherwise fill gigabytes before the run ends.
void discard_temp_dir(const std::string& dir);
// Called by the test main's listener when the run ends.
void end_of_run(bool passed);

// Text edits of test inputs (no <regex>: GCC 12 warns inside it under the
// sanitizers). replace_first: `from` must occur (else the test fails).
std::string replace_first(std::string text, const std::string& from, const std::string& to);
// Every integer written as `"key": N` becomes `value` (the presets' and our
// writers' spacing); at least one must occur.
std::string with_json_integer(std::string text, const std::string& key, int64_t value);
// The integer that follows the first `label` in text (after blanks); fails the test when there is none.
int64_t integer_after(const std::string& text, const std::string& label, size_t from = 0);

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs a shell command line, capturing stdout and stderr.
RunResult run(const std::string& command, const std::string& stdin_data = "");
// Runs a built tool: tool("zebusim") + " " + args.
RunResult run_tool(const std::string& tool, const std::string& args, const std::string& stdin_data = "");

// The ONNX file of a torchvision model (random weights, eval mode) exported
// at `batch` (the batch written into the graph), cached under the build
// directory, with examples/models/export_torchvision.py (python3-torch).
// Fails the test with the reason when export fails.
std::string torchvision_onnx(const std::string& name, int batch = 1);

// Lines joined with newlines (a list of problems in a failure message).
std::string joined(const std::vector<std::string>& lines);

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& data);

}  // namespace cct::testing
