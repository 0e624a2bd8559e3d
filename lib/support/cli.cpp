#include "support/cli.hpp"

#include <exception>
#include <iostream>
#include <new>

#include "support/error.hpp"

#ifndef CCT_VERSION
#define CCT_VERSION "unknown"
#endif

namespace cct::cli {
namespace {
std::string g_tool = "cct";

// cxxopts reports a value of the wrong type as "Argument 'abc' failed to
// parse" without the option: find the option that was given that value on
// the command line (--opt abc, --opt=abc, -xabc) and name it.
std::string bad_value_message(const cxxopts::exceptions::incorrect_argument_type& e, int argc, char** argv) {
  const std::string what = e.what();
  const std::string head = "Argument ", tail = " failed to parse";
  if (what.rfind(head, 0) != 0 || what.size() < head.size() + tail.size() ||
      what.compare(what.size() - tail.size(), tail.size(), tail) != 0)
    return what;
  // The value sits between cxxopts' quote marks, which may be multi-byte.
  std::string quoted = what.substr(head.size(), what.size() - head.size() - tail.size());
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() < 2 || a[0] != '-') continue;
    std::string option, value;
    if (a.rfind("--", 0) == 0) {
      auto eq = a.find('=');
      if (eq != std::string::npos) option = a.substr(0, eq), value = a.substr(eq + 1);
      else if (i + 1 < argc) option = a, value = argv[i + 1];
    } else if (a.size() > 2) {
      option = a.substr(0, 2), value = a.substr(2);
    } else if (i + 1 < argc) {
      option = a, value = argv[i + 1];
    }
    if (option.empty() || value.empty() || quoted.size() < value.size() + 2) continue;
    const size_t open = (quoted.size() - value.size()) / 2;
    if (quoted.compare(open, value.size(), value) == 0 && quoted.size() - value.size() == 2 * open)
      return "option " + option + ": cannot read '" + value + "' as its value";
  }
  return what;
}
}  // namespace

const std::string& tool_name() { return g_tool; }

void warn(const std::string& message) { std::cerr << g_tool << ": warning: " << message << "\n"; }

std::string version_string() { return std::string(CCT_VERSION); }

void add_output_option(cxxopts::Options& o, const std::string& what) {
  o.add_options()("o,output", "write the " + what + " to FILE ('-' = stdout, *.zst = compressed)",
                  cxxopts::value<std::string>()->default_value("-"), "FILE");
}

void add_validate_option(cxxopts::Options& o) {
  o.add_options()("no-validate", "skip schema validation of inputs and outputs");
}

void add_arch_option(cxxopts::Options& o) {
  o.add_options()("arch", "architecture: a preset name (zebu-1core, chip-64tops) or a JSON file",
                  cxxopts::value<std::string>(), "NAME|FILE");
}

std::string required(const cxxopts::ParseResult& r, const std::string& name, const std::string& what) {
  if (!r.count(name)) throw_usage_error("missing " + what + " (see --help)");
  return r[name].as<std::string>();
}

std::string output_path(const cxxopts::ParseResult& r) {
  return r.count("output") ? r["output"].as<std::string>() : std::string("-");
}

bool validate_enabled(const cxxopts::ParseResult& r) { return r.count("no-validate") == 0; }

int run_tool(int argc, char** argv, const ToolInfo& info, const std::vector<std::string>& positional,
             const Define& define, const Body& body) {
  g_tool = info.name;
  try {
    cxxopts::Options options(info.name, info.name + " - " + info.summary);
    options.custom_help("[options]");
    options.positional_help(info.usage);
    options.add_options()("h,help", "print this help and exit")("version", "print the version and exit");
    define(options);
    if (!positional.empty()) options.parse_positional(positional);
    cxxopts::ParseResult result;
    try {
      result = options.parse(argc, argv);
    } catch (const cxxopts::exceptions::incorrect_argument_type& e) {
      throw_usage_error(bad_value_message(e, argc, argv) + " (see --help)");
    } catch (const cxxopts::exceptions::exception& e) {
      throw_usage_error(std::string(e.what()) + " (see --help)");
    }
    if (result.count("help")) {
      std::cout << options.help();
      if (!info.epilog.empty()) std::cout << "\n" << info.epilog << (info.epilog.back() == '\n' ? "" : "\n");
      return kExitOk;
    }
    if (result.count("version")) {
      std::cout << info.name << " (chiplet-toolkit) " << version_string() << "\n";
      return kExitOk;
    }
    if (!result.unmatched().empty()) throw_usage_error("unexpected argument '" + result.unmatched().front() + "' (see --help)");
    return body(result);
  } catch (const Error& e) {
    std::cerr << info.name << ": " << e.what() << "\n";
    return e.code();
  } catch (const cxxopts::exceptions::exception& e) {
    std::cerr << info.name << ": " << e.what() << " (see --help)\n";
    return kExitUsage;
  } catch (const std::bad_alloc&) {
    std::cerr << info.name << ": out of memory\n";
    return kExitInternal;
  } catch (const std::exception& e) {
    std::cerr << info.name << ": internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace cct::cli
