// Errors and exit codes shared by every tool.
//
// A tool reports one problem as "tool: <where>: <what>" on stderr and exits
// with a code that tells scripts what kind of failure it was.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace cct {

enum ExitCode : int {
  kExitOk = 0,
  kExitCheckFailed = 1,  // a --check or comparison ran and found problems
  kExitUsage = 2,        // bad command line
  kExitInvalidInput = 3, // input file malformed or semantically invalid
  kExitIo = 4,           // cannot read or write a file
  kExitInternal = 5,     // a bug: an output we produced failed validation, etc.
};

// An error carrying its exit code. what() is the full "<where>: <what>" text.
class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

// "file:line: what"; line <= 0 leaves the line out.
std::string at_line(std::string_view file, long line, std::string_view what);
// "file: /json/pointer: what"; an empty pointer means the whole document.
std::string at_pointer(std::string_view file, std::string_view pointer, std::string_view what);

[[noreturn]] void throw_input_error(const std::string& message);
[[noreturn]] void throw_io_error(const std::string& message);
[[noreturn]] void throw_usage_error(const std::string& message);

}  // namespace cct
