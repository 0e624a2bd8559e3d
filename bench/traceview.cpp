// traceview on a large trace: the largest reference trace replicated to about
// --lines instructions (default 1M), each copy shifted in time to start when
// the previous one ended and inst_idx renumbered, so tokens and queues stay
// consistent.
//
// Measures (wall and CPU seconds, median of --repeat runs):
//   read      parse the JSON Lines text with validation (the tool's path), and without (--no-validate)
//   analyze   lanes, layers, MACs/bytes via the timing model, critical path
//   summary   read + analyze + format the text summary (what `traceview T` does)
//   html      format the HTML page (the size is reported), and write it
//   chrome    format and validate the Chrome JSON
//   svg       format the SVG
//
//   bench_traceview [REFERENCE_DIR] [--lines N] [--repeat N] [--out DIR]
// --out keeps the trace and the HTML in DIR (to open the page in a browser).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "support/error.hpp"
#include "support/io.hpp"
#include "trace/trace.hpp"
#include "traceview/analysis.hpp"
#include "traceview/views.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace cct;

namespace {

double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

struct Time {
  double wall = 0, cpu = 0;
};

template <class F>
Time median_time(int repeat, F&& f) {
  std::vector<Time> ts;
  for (int r = 0; r < repeat; ++r) {
    auto w0 = Clock::now();
    double c0 = cpu_seconds();
    f();
    ts.push_back({std::chrono::duration<double>(Clock::now() - w0).count(), cpu_seconds() - c0});
  }
  std::sort(ts.begin(), ts.end(), [](const Time& a, const Time& b) { return a.wall < b.wall; });
  return ts[ts.size() / 2];
}

std::string largest(const std::string& dir) {
  std::string best;
  uintmax_t best_size = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.file_size() > best_size) best_size = e.file_size(), best = e.path().string();
  if (best.empty()) throw Error(kExitIo, dir + ": no files");
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::string ref_dir = CCT_BENCH_SOURCE_DIR "/../shared/reference";
  if (const char* env = std::getenv("CCT_REFERENCE_DIR")) ref_dir = env;
  size_t lines = 1000000;
  int repeat = 3;
  std::string keep;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--lines" && i + 1 < argc) lines = std::stoul(argv[++i]);
    else if (a == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (a == "--out" && i + 1 < argc) keep = argv[++i];
    else if (a.rfind("--", 0) != 0) ref_dir = a;
    else {
      std::fprintf(stderr, "usage: bench_traceview [REFERENCE_DIR] [--lines N] [--repeat N] [--out DIR]\n");
      return 2;
    }
  }
  try {
    std::string src = largest(ref_dir + "/gemini-ir/trace");
    trace::Trace one = trace::read_trace(src);
    int64_t period = one.total_cycles();
    size_t copies = std::max<size_t>(1, (lines + one.size() - 1) / one.size());
    trace::Trace big;
    big.program.instructions.reserve(copies * one.size());
    big.timing.reserve(copies * one.size());
    for (size_t c = 0; c < copies; ++c)
      for (size_t i = 0; i < one.size(); ++i) {
        big.program.instructions.push_back(one.program.instructions[i]);
        trace::Timing t = one.timing[i];
        t.inst_idx = int64_t(big.timing.size()) + 1;
        t.start += int64_t(c) * period;
        t.end += int64_t(c) * period;
        big.timing.push_back(t);
      }
    std::string dir = keep.empty() ? (fs::temp_directory_path() / "bench_traceview").string() : keep;
    fs::create_directories(dir);
    std::string trace_path = dir + "/big.trace.jsonl";
    std::string text = trace::format_trace(big, isa::Syntax::JsonLines);
    write_output(trace_path, text);
    std::printf("trace: %s x %zu = %zu instructions, %lld cycles, %.1f MB of JSON Lines\n", fs::path(src).filename().c_str(),
                copies, big.size(), (long long)big.total_cycles(), double(text.size()) / 1e6);
    text.clear();
    text.shrink_to_fit();

    arch::Architecture arch = arch::load_architecture("zebu-1core");
    traceview::Options opt;
    opt.arch = &arch;
    opt.file = trace_path;

    trace::Trace loaded;
    Time read = median_time(repeat, [&] { loaded = trace::read_trace(trace_path); });
    Time read_nv = median_time(repeat, [&] { loaded = trace::read_trace(trace_path, false); });
    traceview::Analysis a;
    Time analyze = median_time(repeat, [&] { a = traceview::analyze(loaded, opt); });
    size_t summary_bytes = 0;
    Time summary = median_time(repeat, [&] {
      trace::Trace t = trace::read_trace(trace_path);
      traceview::Analysis an = traceview::analyze(t, opt);
      summary_bytes = traceview::format_summary(an, trace_path).size();
    });
    std::string html;
    traceview::HtmlOptions ho;
    ho.title = "bench";
    Time html_t = median_time(repeat, [&] { html = traceview::format_html(loaded, a, ho); });
    std::string html_path = dir + "/big.html";
    Time html_w = median_time(repeat, [&] { write_output(html_path, html); });
    // The default embeds parameters only up to HtmlOptions::param_limit instructions; measure both ways.
    traceview::HtmlOptions all = ho;
    all.param_limit = loaded.size();
    traceview::HtmlOptions none = ho;
    none.param_limit = 0;
    size_t html_all = traceview::format_html(loaded, a, all).size();
    size_t html_none = traceview::format_html(loaded, a, none).size();
    size_t chrome_bytes = 0, svg_bytes = 0;
    Time chrome = median_time(1, [&] { chrome_bytes = traceview::format_chrome_trace(loaded, a, true, trace_path, "bench.json").size(); });
    Time svg = median_time(repeat, [&] { svg_bytes = traceview::format_svg(loaded, a, {}).size(); });

    std::printf("read+validate  %.3f s wall (%.3f s CPU)\n", read.wall, read.cpu);
    std::printf("read, no valid. %.3f s wall (%.3f s CPU)\n", read_nv.wall, read_nv.cpu);
    std::printf("analyze        %.3f s wall (%.3f s CPU)\n", analyze.wall, analyze.cpu);
    std::printf("summary        %.3f s wall (%.3f s CPU): read + analyze + format, %zu bytes of text (target < 3 s)\n",
                summary.wall, summary.cpu, summary_bytes);
    std::printf("html           %.3f s to format, %.3f s to write, %.1f MB (default --html-param-limit %zu); "
                "%.1f MB with every instruction's parameters, %.1f MB with none\n",
                html_t.wall, html_w.wall, double(html.size()) / 1e6, ho.param_limit, double(html_all) / 1e6,
                double(html_none) / 1e6);
    std::printf("chrome         %.3f s wall (format + schema validation), %.1f MB\n", chrome.wall, double(chrome_bytes) / 1e6);
    std::printf("svg            %.3f s wall, %.1f kB\n", svg.wall, double(svg_bytes) / 1e3);
    std::printf("critical path  %zu instructions in %zu runs; %zu lanes, %zu layers\n", a.critical.size(), a.path_runs.size(),
                a.lanes.size(), a.layers.size());
    if (keep.empty()) fs::remove_all(dir);
    else std::printf("kept %s and %s\n", trace_path.c_str(), html_path.c_str());
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_traceview: %s\n", e.what());
    return 1;
  }
  return 0;
}
