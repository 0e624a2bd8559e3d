// Throughput of the ISA program and trace libraries.
//
// Times are medians of --repeat runs. The machine may be shared, so both the
// wall-clock time and the CPU time of the process are measured; rates are
// given by wall time, with the CPU-time rate in parentheses (it is the higher
// of the two when other processes compete for the cores, and the lower when
// the schema pass runs on several threads).
//
// 1. The largest reference program and trace, in both syntaxes: read with
//    validation (table checks; plus the per-line schema pass for JSON Lines),
//    write (format), and write with output validation (format + re-read), in
//    MB/s of text. Median of --repeat runs.
// 2. A synthetic trace of about 1M instructions (the largest reference trace
//    replicated, inst_idx and times renumbered): seconds to read it with and
//    without validation, and to format it, in both syntaxes.
//
//   bench_formats_isa_trace [REFERENCE_DIR] [--repeat N] [--lines N]
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "isa/program_io.hpp"
#include "support/error.hpp"
#include "support/io.hpp"
#include "trace/trace.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace cct;

namespace {

std::string largest(const std::string& dir) {
  std::string best;
  uintmax_t best_size = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && e.file_size() > best_size) {
      best_size = e.file_size();
      best = e.path().string();
    }
  }
  if (best.empty()) throw Error(kExitIo, dir + ": no files");
  return best;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Time {
  double wall = 0, cpu = 0;
};

// Median wall and CPU time of one run of f.
template <class F>
Time median_time(int repeat, F&& f) {
  std::vector<double> wall, cpu;
  for (int i = 0; i < repeat; ++i) {
    auto t0 = Clock::now();
    double c0 = cpu_seconds();
    f();
    cpu.push_back(cpu_seconds() - c0);
    wall.push_back(seconds_since(t0));
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  return {wall[wall.size() / 2], cpu[cpu.size() / 2]};
}

// Keeps results alive so the optimiser cannot drop the work.
size_t g_sink = 0;

struct Row {
  Time read, write, write_validated;
};

std::string rate(double mb, Time t) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%6.1f (%6.1f)", mb / t.wall, mb / t.cpu);
  return buf;
}

void print_row(const char* kind, isa::Syntax s, size_t bytes, const Row& r) {
  double mb = static_cast<double>(bytes) / 1e6;
  Time total{r.read.wall + r.write.wall, r.read.cpu + r.write.cpu};
  std::printf("%-7s %-6s %6.3f MB  MB/s: read+validate %s  write %s  write+validate %s  read+validate+write %s\n",
              kind, std::string(isa::syntax_name(s)).c_str(), mb, rate(mb, r.read).c_str(), rate(mb, r.write).c_str(),
              rate(mb, r.write_validated).c_str(), rate(mb, total).c_str());
}

void bench_program(const std::string& path, int repeat) {
  isa::Program prog = isa::read_program(path);
  std::printf("program %s: %zu instructions\n", fs::path(path).filename().c_str(), prog.size());
  for (isa::Syntax s : {isa::Syntax::Legacy, isa::Syntax::JsonLines}) {
    std::string text = isa::format_program(prog, s);
    Row r;
    r.read = median_time(repeat, [&] { g_sink += isa::parse_program(text, "bench", true).size(); });
    r.write = median_time(repeat, [&] { g_sink += isa::format_program(prog, s).size(); });
    r.write_validated = median_time(repeat, [&] {
      std::string out = isa::format_program(prog, s);
      g_sink += isa::parse_program(out, "bench", true).size();
    });
    print_row("program", s, text.size(), r);
  }
}

void bench_trace(const std::string& path, int repeat) {
  trace::Trace tr = trace::read_trace(path);
  std::printf("trace %s: %zu instructions\n", fs::path(path).filename().c_str(), tr.size());
  for (isa::Syntax s : {isa::Syntax::Legacy, isa::Syntax::JsonLines}) {
    std::string text = trace::format_trace(tr, s);
    Row r;
    r.read = median_time(repeat, [&] { g_sink += trace::parse_trace(text, "bench", true).size(); });
    r.write = median_time(repeat, [&] { g_sink += trace::format_trace(tr, s).size(); });
    r.write_validated = median_time(repeat, [&] {
      std::string out = trace::format_trace(tr, s);
      g_sink += trace::parse_trace(out, "bench", true).size();
    });
    print_row("trace", s, text.size(), r);
  }
}

void bench_synthetic(const std::string& path, size_t lines) {
  trace::Trace ref = trace::read_trace(path);
  trace::Trace big;
  big.program.instructions.reserve(lines);
  big.timing.reserve(lines);
  int64_t offset = 0;
  while (big.size() < lines) {
    for (size_t i = 0; i < ref.size() && big.size() < lines; ++i) {
      big.program.instructions.push_back(ref.program.instructions[i]);
      trace::Timing t = ref.timing[i];
      t.inst_idx = static_cast<int64_t>(big.size()) + 1;
      t.start += offset;
      t.end += offset;
      big.timing.push_back(t);
    }
    offset = big.total_cycles();
  }
  std::printf("synthetic trace: %zu instructions (%s replicated), %zu bytes per instruction in memory\n", big.size(),
              fs::path(path).filename().c_str(), sizeof(isa::Instruction) + sizeof(trace::Timing));
  // What a simulator does per instruction: queue, tokens, a few parameters by id.
  Time scan = median_time(5, [&] {
    int64_t sum = 0;
    for (const isa::Instruction& inst : big.program.instructions) {
      sum += static_cast<int>(inst.queue()) + inst.prev.size() + inst.next.size();
      if (inst.has(isa::Param::STaddr)) sum += inst.get(isa::Param::STaddr);
      if (inst.has(isa::Param::DTaddr)) sum += inst.get(isa::Param::DTaddr);
      if (inst.has(isa::Param::Tile)) sum += inst.list(isa::Param::Tile)[0];
      if (inst.has(isa::Param::QK)) sum += static_cast<int64_t>(inst.number(isa::Param::QK));
    }
    g_sink += static_cast<size_t>(sum);
  });
  std::printf("parameter access: %.1f M instructions/s (queue, tokens and up to four parameters by id)\n",
              static_cast<double>(big.size()) / scan.cpu / 1e6);
  for (isa::Syntax s : {isa::Syntax::Legacy, isa::Syntax::JsonLines}) {
    std::string text;
    trace::Trace a, b;
    Time write = median_time(1, [&] { text = trace::format_trace(big, s); });
    Time read_valid = median_time(1, [&] { a = trace::parse_trace(text, "synthetic", true); });
    Time read = median_time(1, [&] { b = trace::parse_trace(text, "synthetic", false); });
    if (!(a == big) || !(b == big)) throw Error(kExitInternal, "synthetic trace did not read back");
    double mb = static_cast<double>(text.size()) / 1e6;
    std::printf("synthetic %-6s %6.1f MB  seconds wall (cpu): read+validate %5.2f (%5.2f)  read without schema pass "
                "%5.2f (%5.2f)  write %5.2f (%5.2f)\n",
                std::string(isa::syntax_name(s)).c_str(), mb, read_valid.wall, read_valid.cpu, read.wall, read.cpu,
                write.wall, write.cpu);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string ref = std::string(CCT_BENCH_SOURCE_DIR) + "/../shared/reference";
  if (const char* env = std::getenv("CCT_REFERENCE_DIR")) ref = env;
  int repeat = 15;
  size_t lines = 1000000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--lines" && i + 1 < argc) {
      lines = static_cast<size_t>(std::max(1, std::atoi(argv[++i])));
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: bench_formats_isa_trace [REFERENCE_DIR] [--repeat N] [--lines N]\n");
      return 0;
    } else {
      ref = a;
    }
  }
  try {
    bench_program(largest(ref + "/gemini-ir/asm"), repeat);
    bench_trace(largest(ref + "/gemini-ir/trace"), repeat);
    bench_synthetic(largest(ref + "/gemini-ir/trace"), lines);
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_formats_isa_trace: %s\n", e.what());
    return e.code();
  }
  return 0;
}
