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
}

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
