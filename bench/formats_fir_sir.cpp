// Throughput of the FIR and SIR libraries on the largest reference files, in
// MB/s of the input text:
//   read     parse + schema validation + typed structs + structural/semantic checks
//   write    the typed structs to text (format_fir / format_sir without validation)
//   read+write           both: what a tool that reads, changes and writes a file spends
//   +output validation   also checks the written text against the schema, as tools
//                        do by default before writing
// Times are CPU time of this thread (the machine is shared), median of --repeat runs.
//
//   bench_formats_fir_sir [REFERENCE_DIR] [--repeat N]
#include <algorithm>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "fir/fir.hpp"
#include "sir/sir.hpp"
#include "support/error.hpp"
#include "support/io.hpp"

namespace fs = std::filesystem;

namespace {

std::string largest(const std::string& dir) {
  std::string best;
  uintmax_t best_size = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    if (e.file_size() > best_size) {
      best_size = e.file_size();
      best = e.path().string();
    }
  }
  if (best.empty()) throw cct::Error(cct::kExitIo, dir + ": no files");
  return best;
}

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Runs f `repeat` times and returns the median time of one run in seconds.
template <class F>
double median_time(int repeat, F&& f) {
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    double t0 = cpu_seconds();
    f();
    times.push_back(cpu_seconds() - t0);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void report(const char* what, const std::string& file, size_t bytes, double read_s, double write_s, double both_s,
            double all_s) {
  double mb = static_cast<double>(bytes) / 1e6;
  std::printf("%s %s (%.3f MB)\n", what, fs::path(file).filename().c_str(), mb);
  std::printf("  read+validate       %7.1f MB/s  (%.2f ms)\n", mb / read_s, read_s * 1e3);
  std::printf("  write               %7.1f MB/s  (%.2f ms)\n", mb / write_s, write_s * 1e3);
  std::printf("  read+validate+write %7.1f MB/s  (%.2f ms)\n", mb / both_s, both_s * 1e3);
  std::printf("  ... +output schema  %7.1f MB/s  (%.2f ms)\n", mb / all_s, all_s * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string ref = std::string(CCT_BENCH_SOURCE_DIR) + "/../shared/reference";
    if (const char* env = std::getenv("CCT_REFERENCE_DIR")) ref = env;
    int repeat = 30;
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
      else ref = a;
    }

    std::string sir_path = largest(ref + "/gemini-ir/scheduler");
    std::string sir_text = cct::read_input(sir_path);
    cct::sir::Schedule s;
    std::string out;
    double sir_read = median_time(repeat, [&] { s = cct::sir::parse_sir(sir_text, sir_path); });
    double sir_write = median_time(repeat, [&] { out = cct::sir::format_sir(s, false); });
    double sir_both = median_time(repeat, [&] { out = cct::sir::format_sir(cct::sir::parse_sir(sir_text, sir_path), false); });
    double sir_all = median_time(repeat, [&] { out = cct::sir::format_sir(cct::sir::parse_sir(sir_text, sir_path), true); });
    report("SIR", sir_path, sir_text.size(), sir_read, sir_write, sir_both, sir_all);

    std::string fir_path = largest(ref + "/gemini-ir/frontend");
    std::string fir_text = cct::read_input(fir_path);
    cct::fir::Graph g;
    double fir_read = median_time(repeat, [&] { g = cct::fir::parse_fir(fir_text, fir_path); });
    double fir_write = median_time(repeat, [&] { out = cct::fir::format_fir(g, false); });
    double fir_both = median_time(repeat, [&] { out = cct::fir::format_fir(cct::fir::parse_fir(fir_text, fir_path), false); });
    double fir_all = median_time(repeat, [&] { out = cct::fir::format_fir(cct::fir::parse_fir(fir_text, fir_path), true); });
    report("FIR", fir_path, fir_text.size(), fir_read, fir_write, fir_both, fir_all);
    std::printf("(CPU time, median of %d runs)\n", repeat);
    return 0;
  } catch (const cct::Error& e) {
    std::fprintf(stderr, "bench_formats_fir_sir: %s\n", e.what());
    return e.code();
  }
}
