#include "support/error.hpp"

namespace cct {

std::string at_line(std::string_view file, long line, std::string_view what) {
  std::string s(file.empty() ? "<input>" : file);
  if (line > 0) s += ":" + std::to_string(line);
  s += ": ";
  s += what;
  return s;
}

std::string at_pointer(std::string_view file, std::string_view pointer, std::string_view what) {
  std::string s(file.empty() ? "<input>" : file);
  s += ": ";
  if (!pointer.empty()) {
    s += pointer;
    s += ": ";
  }
  s += what;
  return s;
}

void throw_input_error(const std::string& message) { throw Error(kExitInvalidInput, message); }
void throw_io_error(const std::string& message) { throw Error(kExitIo, message); }
void throw_usage_error(const std::string& message) { throw Error(kExitUsage, message); }

}  // namespace cct
