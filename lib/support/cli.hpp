// The command-line conventions every tool follows, written once:
//   --help, --version; "-" for stdin/stdout; -o FILE (stdout by default);
//   --no-validate; --arch NAME|FILE; errors as "tool: where: what" with
//   distinct exit codes (see support/error.hpp).
#pragma once

#include <cxxopts.hpp>

#include <functional>
#include <string>
#include <vector>

namespace cct::cli {

struct ToolInfo {
  std::string name;     // e.g. "zebusim"
  std::string summary;  // one line: what the tool does
  std::string usage;    // the positional part of the synopsis, e.g. "PROGRAM --arch ARCH"
  std::string epilog;   // extra help text printed after the options (may be empty)
};

using Define = std::function<void(cxxopts::Options&)>;
using Body = std::function<int(const cxxopts::ParseResult&)>;

// Parses the command line and runs body. Handles --help and --version,
// reports any cct::Error as "name: message" and returns its exit code.
// `positional` lists option names that take positional arguments, in order.
int run_tool(int argc, char** argv, const ToolInfo& info, const std::vector<std::string>& positional,
             const Define& define, const Body& body);

// Standard options.
void add_output_option(cxxopts::Options& o, const std::string& what = "output file");  // -o, --output
void add_validate_option(cxxopts::Options& o);                                          // --no-validate
void add_arch_option(cxxopts::Options& o);                                              // --arch

// Accessors that turn a missing value into a usage error.
std::string required(const cxxopts::ParseResult& r, const std::string& name, const std::string& what);
std::string output_path(const cxxopts::ParseResult& r);  // "-" when not given
bool validate_enabled(const cxxopts::ParseResult& r);

// The tool name of the running program (for messages from library code).
const std::string& tool_name();
// Prints "tool: warning: message" on stderr.
void warn(const std::string& message);

std::string version_string();

}  // namespace cct::cli
