// A static Gantt chart (traceview --svg).
#include <algorithm>
#include <cinttypes>
#include <cmath>

#include "traceview/text_table.hpp"
#include "traceview/views.hpp"

namespace cct::traceview {

std::string_view queue_color(isa::Queue q) {
  // One hue per queue, chosen to stay distinguishable side by side.
  static constexpr std::array<std::string_view, isa::kQueueCount> kColors = {
      "#7f7f7f",  // CT
      "#1f77b4",  // LD
      "#17becf",  // LW
      "#d62728",  // PE
      "#2ca02c",  // VP
      "#9467bd",  // DT
      "#ff7f0e",  // ST
      "#8c564b",  // SI
      "#e377c2",  // SO
  };
  return kColors[size_t(q)];
}

void append_markup_escaped(std::string& out, std::string_view s) {
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
}

namespace {

// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `target` ticks.
int64_t tick_step(int64_t span, int target) {
  double raw = double(std::max<int64_t>(span, 1)) / target;
  double p = std::pow(10.0, std::floor(std::log10(raw)));
  double m = raw / p;
  double step = m <= 1 ? p : m <= 2 ? 2 * p : m <= 5 ? 5 * p : 10 * p;
  return std::max<int64_t>(1, int64_t(std::min(step, 4e18)));
}

constexpr double kMinBoxPx = 3.0;  // narrower instructions are binned per pixel column

}  // namespace

std::string format_svg(const trace::Trace& t, const Analysis& a, const SvgOptions& o) {
  const int label_w = 150, right_pad = 20, top = 48, lane_h = 18, lane_gap = 4, axis_h = 28, legend_h = 26;
  const int width = std::max(o.width, label_w + right_pad + 100);
  const int plot_w = width - label_w - right_pad;
  const int lanes = int(a.lanes.size()) + 1;  // + the critical path
  const int height = top + lanes * (lane_h + lane_gap) + axis_h + legend_h + 10;
  const double total = double(std::max<int64_t>(a.total_cycles, 1));
  const double px_per_cycle = double(plot_w) / total;
  auto x_of = [&](double cycle) { return double(label_w) + cycle * px_per_cycle; };

  std::string out;
  out.reserve(1 << 20);
  out += strf("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
              "font-family=\"sans-serif\" font-size=\"11\">\n",
              width, height, width, height);
  out += strf("<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", width, height);
  out += "<text x=\"8\" y=\"18\" font-size=\"14\" font-weight=\"bold\">";
  append_markup_escaped(out, o.title);
  out += "</text>\n";
  out += strf("<text x=\"8\" y=\"36\">%" PRId64 " instructions, %" PRId64 " cycles (%.3f us at %.3g GHz), %s</text>\n",
              a.instructions, a.total_cycles, a.seconds() * 1e6, a.clock_ghz, a.arch_name.c_str());

  auto lane_y = [&](int k) { return top + k * (lane_h + lane_gap); };

  // ---- Critical path, coloured by layer (alternating shades), labelled where there is room.
  {
    int y = lane_y(0);
    out += strf("<text x=\"8\" y=\"%d\">critical path</text>\n", y + lane_h - 5);
    std::vector<char> narrow(size_t(plot_w) + 1, 0);
    for (const PathRun& r : a.path_runs) {
      double x0 = x_of(double(r.begin)), x1 = x_of(double(r.end));
      if (x1 - x0 < kMinBoxPx) {
        // Runs narrower than a few pixels become plain grey columns.
        for (int c = std::max(0, int(x0) - label_w); c <= std::min(plot_w, int(x1) - label_w); ++c) narrow[size_t(c)] = 1;
        continue;
      }
      const char* fill = (r.layer % 2) ? "#9aa5b1" : "#cbd2d9";
      out += strf("<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"><title>", x0, y, x1 - x0, lane_h, fill);
      append_markup_escaped(out, strf("%s on %s (core %d): cycles %" PRId64 "-%" PRId64 ", %" PRId64 " instructions",
                               a.layer_label(r.layer).c_str(), std::string(isa::queue_name(r.queue)).c_str(), r.core,
                               r.begin, r.end, r.instructions));
      out += "</title></rect>\n";
    }
    for (int c = 0; c <= plot_w;) {
      if (!narrow[size_t(c)]) {
        ++c;
        continue;
      }
      int e = c + 1;
      while (e <= plot_w && narrow[size_t(e)]) ++e;
      out += strf("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#aeb7c1\"/>\n", label_w + c, y, e - c, lane_h);
      c = e;
    }
  }

  // ---- One lane per core and queue.
  std::vector<std::vector<int64_t>> by_lane(a.lanes.size());
  for (size_t i = 0; i < t.size(); ++i) by_lane[size_t(a.lane_of[i])].push_back(int64_t(i));
  std::vector<double> busy(size_t(plot_w) + 1);
  for (size_t k = 0; k < a.lanes.size(); ++k) {
    const Lane& l = a.lanes[k];
    int y = lane_y(int(k) + 1);
    std::string color(queue_color(l.queue));
    out += strf("<text x=\"8\" y=\"%d\">core %d %s</text>\n", y + lane_h - 5, l.core, std::string(isa::queue_name(l.queue)).c_str());
    out += strf("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f4f4f4\"/>\n", label_w, y, plot_w, lane_h);
    std::fill(busy.begin(), busy.end(), 0.0);
    for (int64_t i : by_lane[k]) {
      const auto& tm = t.timing[size_t(i)];
      const auto& inst = t.program.instructions[size_t(i)];
      double x0 = x_of(double(tm.start)), x1 = x_of(double(tm.end));
      if (x1 - x0 >= kMinBoxPx) {
        out += strf("<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"%s><title>", x0, y, x1 - x0, lane_h,
                    color.c_str(), inst.is_config() ? " fill-opacity=\"0.5\"" : "");
        append_markup_escaped(out, strf("line %" PRId64 " %s, %s: [%" PRId64 ", %" PRId64 "] %" PRId64 " cycles", i + 1,
                                 std::string(inst.mnemonic()).c_str(), a.layer_label(inst.mapping.slyr).c_str(), tm.start,
                                 tm.end, tm.duration()));
        out += "</title></rect>\n";
        continue;
      }
      // Spread the instruction's pixel coverage over the columns it touches.
      double lo = x0 - label_w, hi = x1 - label_w;
      for (int c = std::max(0, int(std::floor(lo))); c <= std::min(plot_w, int(std::floor(hi))); ++c)
        busy[size_t(c)] += std::max(0.0, std::min(hi, double(c + 1)) - std::max(lo, double(c)));
    }
    // Runs of columns at the same (quantised) occupancy become one rectangle.
    int c = 0;
    while (c <= plot_w) {
      int level = int(std::lround(std::min(1.0, busy[size_t(c)]) * 10));
      int e = c + 1;
      while (e <= plot_w && int(std::lround(std::min(1.0, busy[size_t(e)]) * 10)) == level) ++e;
      if (level > 0)
        out += strf("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" fill-opacity=\"%.1f\"/>\n", label_w + c, y,
                    e - c, lane_h, color.c_str(), level / 10.0);
      c = e;
    }
  }

  // ---- Time axis.
  int axis_y = lane_y(lanes) + 2;
  out += strf("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n", label_w, axis_y, label_w + plot_w, axis_y);
  int64_t step = tick_step(a.total_cycles, 10);
  for (int64_t k = 0; k <= a.total_cycles / step; ++k) {
    int64_t c = k * step;  // (no c += step: it could overflow near the largest times)
    double x = x_of(double(c));
    out += strf("<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"#333\"/>\n", x, axis_y, x, axis_y + 5);
    out += strf("<text x=\"%.2f\" y=\"%d\" text-anchor=\"middle\">%" PRId64 "</text>\n", x, axis_y + 17, c);
  }
  out += strf("<text x=\"8\" y=\"%d\">cycles</text>\n", axis_y + 17);

  // ---- Legend.
  int ly = axis_y + axis_h + 8;
  int lx = label_w;
  for (int q = 0; q < isa::kQueueCount; ++q) {
    if (a.count_by_queue[size_t(q)] == 0) continue;
    out += strf("<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>", lx, ly, std::string(queue_color(isa::Queue(q))).c_str());
    out += strf("<text x=\"%d\" y=\"%d\">%s</text>\n", lx + 16, ly + 10, std::string(isa::queue_name(isa::Queue(q))).c_str());
    lx += 56;
  }
  out += strf("<text x=\"%d\" y=\"%d\">(lighter: configuration; faded: occupancy of instructions narrower than a pixel)</text>\n",
              lx + 8, ly + 10);
  out += "</svg>\n";
  return out;
}

}  // namespace cct::traceview
