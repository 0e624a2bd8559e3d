// The graphical views of a trace: Chrome Trace Event JSON (Perfetto,
// chrome://tracing), a static SVG Gantt chart and a self-contained HTML page
// with a zoomable Gantt chart. Each returns the whole text; the tool writes it
// with write_output.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "traceview/analysis.hpp"

namespace cct::traceview {

// Colour of each queue's instructions ("#rrggbb"), shared by the SVG and HTML views.
std::string_view queue_color(isa::Queue q);
// Appends `s` with the characters markup gives a meaning to (< > & ") escaped,
// for text and attribute values of the SVG and HTML views.
void append_markup_escaped(std::string& out, std::string_view s);

// Chrome Trace Event JSON: one complete event ("ph": "X") per instruction,
// pid = core, tid = queue, times in microseconds at the architecture's clock,
// args = line, inst_idx, layer, workload, tile, what it waited for, the
// trace's optional fields and the parameters. Metadata events name the
// processes ("core N") and threads (queue names). `trace_name` is recorded in
// otherData; the text is validated against schemas/traceview_chrome.schema.json
// when `validate` (`out_name` names it in errors).
std::string format_chrome_trace(const trace::Trace& t, const Analysis& a, bool validate, const std::string& trace_name,
                                const std::string& out_name);

struct SvgOptions {
  int width = 1600;  // pixels, the whole picture
  std::string title;
};
// A static Gantt chart: one lane per core and queue plus the critical path
// coloured by layer, a time axis in cycles, a legend. Instructions wider than
// a few pixels are drawn one by one (with a <title> tooltip); narrower ones
// are binned per pixel column with the lane's colour at their occupancy.
std::string format_svg(const trace::Trace& t, const Analysis& a, const SvgOptions& options);

struct HtmlOptions {
  std::string title;
  // Instructions up to which every instruction's parameters are embedded for
  // the tooltips; above it the page shows timing and mapping only (and says so).
  size_t param_limit = 2000000;
};
// One self-contained HTML file (no network access, no external script or
// font): a canvas Gantt chart (wheel to zoom, drag to pan), one lane per core
// and queue, instructions coloured by queue, a hover tooltip with the
// instruction's parameters, and the per-layer table beside it (click a layer
// to zoom to it). Data are embedded as base64 varint streams; at coarse zoom
// instructions narrower than a pixel are drawn as per-pixel occupancy.
std::string format_html(const trace::Trace& t, const Analysis& a, const HtmlOptions& options);

}  // namespace cct::traceview
