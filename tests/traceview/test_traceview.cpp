// traceview: analysis of the reference traces, the summary, --compare against
// isa_compare.py, the Chrome JSON, the SVG, the HTML page in headless
// Chromium, a two-core trace, determinism and errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "fir/fir.hpp"
#include "isa/program_io.hpp"
#include "sim/sim.hpp"
#include "timing/timing.hpp"
#include "support/io.hpp"
#include "support/json.hpp"
#include "html_check.hpp"
#include "testing.hpp"
#include "trace/trace.hpp"
#include "traceview/analysis.hpp"
#include "traceview/compare.hpp"
#include "traceview/views.hpp"

using namespace cct;
namespace fs = std::filesystem;
using cct::testing::run;
using cct::testing::run_tool;

namespace {

std::vector<std::string> reference_traces() { return cct::testing::reference_files("gemini-ir/trace"); }

// int8_X.sim_quantized_bN_c1_bw16_sim.txt -> asm/int8_X.sim_quanti_bN_c1_bw16_asm.txt and frontend/int8_X.sim_quantized_bN.json
std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  auto p = s.find(from);
  REQUIRE(p != std::string::npos);
  return s.replace(p, from.size(), to);
}
std::string program_for(const std::string& trace_path) {
  std::string name = fs::path(trace_path).filename().string();
  name = replace_all(replace_all(name, "sim_quantized_", "sim_quanti_"), "_sim.txt", "_asm.txt");
  return cct::testing::reference_dir() + "/gemini-ir/asm/" + name;
}
std::string fir_for(const std::string& trace_path) {
  std::string name = fs::path(trace_path).filename().string();
  name = name.substr(0, name.find("_c1_bw16")) + ".json";
  return cct::testing::reference_dir() + "/gemini-ir/frontend/" + name;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}
std::string line_starting(const std::string& text, const std::string& prefix) {
  for (const auto& l : lines_of(text))
    if (l.rfind(prefix, 0) == 0) return l;
  return "";
}

traceview::Analysis analyze(const trace::Trace& t, const arch::Architecture& a, const fir::Graph* g = nullptr) {
  traceview::Options o;
  o.arch = &a;
  o.fir = g;
  return traceview::analyze(t, o);
}

// The invariants every analysis must satisfy, checked against the trace itself.
void check_invariants(const trace::Trace& t, const traceview::Analysis& a) {
  int64_t last_end = 0, busy = 0;
  std::map<int, int64_t> per_op;
  for (size_t i = 0; i < t.size(); ++i) {
    last_end = std::max(last_end, t.timing[i].end);
    traceview::add_to(busy, t.timing[i].duration());
    ++per_op[int(t.program.instructions[i].op())];
  }
  CHECK(a.total_cycles == last_end);
  CHECK(a.instructions == int64_t(t.size()));
  for (int op = 0; op < isa::kOpcodeCount; ++op) CHECK(a.count_by_opcode[size_t(op)] == per_op[op]);
  int64_t lane_busy = 0, lane_instr = 0;
  for (const auto& l : a.lanes) traceview::add_to(lane_busy, l.busy_cycles), lane_instr += l.instructions;
  CHECK(lane_busy == busy);
  CHECK(lane_instr == int64_t(t.size()));
  // Per-layer cycles add up to the total, and so do the critical-path runs.
  int64_t layer_sum = 0, run_sum = 0, queue_sum = 0;
  for (const auto& l : a.layers) layer_sum += l.cycles;
  for (const auto& r : a.path_runs) run_sum += r.end - r.begin;
  for (int64_t c : a.path_cycles_by_queue) queue_sum += c;
  CHECK(layer_sum == a.total_cycles);
  CHECK(run_sum == a.total_cycles);
  CHECK(queue_sum == a.total_cycles);
  // The path: contiguous runs from 0 to the end, each step bound to its predecessor.
  REQUIRE(!a.critical.empty());
  CHECK(t.timing[size_t(a.critical.back())].end == last_end);
  CHECK(a.path_runs.front().begin == 0);
  for (size_t k = 1; k < a.path_runs.size(); ++k) CHECK(a.path_runs[k].begin == a.path_runs[k - 1].end);
  for (size_t k = 1; k < a.critical.size(); ++k) {
    const auto& d = a.dep_of[size_t(a.critical[k])];
    CHECK(d.pred == a.critical[k - 1]);
    CHECK(t.timing[size_t(d.pred)].end <= t.timing[size_t(a.critical[k])].start);
  }
}

}  // namespace

namespace {
// Appends an instruction of `op` on `core` with its tokens; returns it, for its parameters.
isa::Instruction& append(isa::Program& p, isa::Opcode op, int core, std::initializer_list<isa::Queue> prev,
                         std::initializer_list<isa::Queue> next) {
  isa::Instruction inst(op);
  inst.mapping.core = core;
  inst.prev = isa::QueueList(prev);
  inst.next = isa::QueueList(next);
  p.instructions.push_back(inst);
  return p.instructions.back();
}
}  // namespace

TEST_CASE("on every reference trace the analysis matches the trace and per-layer cycles add up") {
  arch::Architecture a = arch::load_architecture("zebu-1core");
  for (const auto& path : reference_traces()) {
    CAPTURE(path);
    trace::Trace t = trace::read_trace(path);
    fir::Graph g = fir::read_fir(fir_for(path));
    traceview::Analysis an = analyze(t, a, &g);
    check_invariants(t, an);
    CHECK(an.model_priced);
    CHECK(an.macs > 0);
    CHECK(an.dram_read > 0);
    CHECK(an.dram_write > 0);
    CHECK_FALSE(an.energy.available);  // ZeBu traces carry times only
    // slyr indexes the FIR's layers in file order: names match and the
    // executed MACs of every layer equal the FIR's.
    for (const auto& l : an.layers) {
      CAPTURE(l.layer);
      REQUIRE(size_t(l.layer) < g.layers().size());
      CHECK(l.name == g.layers()[size_t(l.layer)].name);
      CHECK(l.macs == l.fir_macs);
    }
  }
}

TEST_CASE("the summary prints the trace's totals, class counts and a layer table that adds up") {
  for (const auto& path : reference_traces()) {
    CAPTURE(path);
    trace::Trace t = trace::read_trace(path);
    auto r = run_tool("traceview", "'" + path + "' --fir '" + fir_for(path) + "'");
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.empty());
    CHECK(line_starting(r.out, "total ").find(" " + std::to_string(t.total_cycles()) + " cycles") != std::string::npos);
    CHECK(line_starting(r.out, "instructions ") == "instructions  " + std::to_string(t.size()));
    std::map<std::string, int64_t> counts;
    for (const auto& inst : t.program.instructions) ++counts[std::string(inst.mnemonic())];
    for (const auto& mn_n : counts) {
      const auto& mn = mn_n.first;
      const auto& n = mn_n.second;
      std::string l = line_starting(r.out, "  " + mn + " ");
      CAPTURE(mn);
      REQUIRE(!l.empty());
      std::istringstream in(l);
      std::string name, queue;
      int64_t count = -1;
      in >> name >> queue >> count;
      CHECK(count == n);
    }
    // The layer table's total row: instructions, cycles (= the total), share 100.0%.
    std::string total_row;
    for (const auto& l : lines_of(r.out))
      if (l.rfind("  total ", 0) == 0) total_row = l;
    REQUIRE(!total_row.empty());
    std::istringstream in(total_row);
    std::string word, share;
    int64_t instrs = 0, cycles = 0;
    in >> word >> instrs >> cycles >> share;
    CHECK(cycles == t.total_cycles());
    CHECK(share == "100.0%");
    // Summing the layer rows themselves gives the same total.
    int64_t sum = 0;
    bool in_table = false;
    for (const auto& l : lines_of(r.out)) {
      if (l.rfind("   slyr", 0) == 0 || l.rfind("  slyr", 0) == 0) {
        in_table = true;
        continue;
      }
      if (!in_table) continue;
      if (l.rfind("  total ", 0) == 0) break;
      std::istringstream row(l);
      std::string slyr, name, op;
      int64_t n = 0, c = 0;
      row >> slyr >> name >> op >> n >> c;
      sum += c;
    }
    CHECK(sum == t.total_cycles());
    CHECK(r.out.find("critical path: ") != std::string::npos);
    CHECK(r.out.find("energy: the trace carries no per-instruction energy") != std::string::npos);
  }
}

TEST_CASE("zebusim traces: MACs, DRAM bytes and energy agree with zebusim --stats-json") {
  std::string dir = cct::testing::temp_dir("traceview_zebusim");
  std::string path = reference_traces().front();
  std::string prog = program_for(path);
  auto z = run_tool("zebusim", "'" + prog + "' --arch zebu-1core -o " + dir + "/ours.jsonl --stats-json " + dir + "/stats.json");
  REQUIRE(z.exit_code == 0);
  Json stats = parse_json(cct::testing::read_file(dir + "/stats.json"), "stats.json");
  arch::Architecture a = arch::load_architecture("zebu-1core");
  trace::Trace t = trace::read_trace(dir + "/ours.jsonl");
  traceview::Analysis an = analyze(t, a);
  check_invariants(t, an);
  CHECK(an.trace_has_ops);
  CHECK(an.trace_has_bytes);
  CHECK(an.macs == stats.find("macs")->as_int());
  CHECK(an.dram_read == stats.find("bytes")->find("dram_read")->as_int());
  CHECK(an.dram_write == stats.find("bytes")->find("dram_write")->as_int());
  REQUIRE(an.energy.available);
  REQUIRE(an.energy.components);
  const Json& e = *stats.find("energy");
  double total = an.energy.instructions_pj + an.energy.split.static_;
  CHECK(total == doctest::Approx(e.find("total_pj")->as_double()).epsilon(1e-9));
  CHECK(an.energy.split.mac == doctest::Approx(e.find("mac_pj")->as_double()).epsilon(1e-9));
  CHECK(an.energy.split.dram == doctest::Approx(e.find("dram_pj")->as_double()).epsilon(1e-9));
  CHECK(an.energy.split.static_ == doctest::Approx(e.find("static_pj")->as_double()).epsilon(1e-9));
  // Per-layer MACs as zebusim counts them.
  for (const Json& l : stats.find("layers")->as_array()) {
    const traceview::LayerRow* row = an.layer(int32_t(l.find("layer")->as_int()));
    REQUIRE(row != nullptr);
    CHECK(row->macs == l.find("macs")->as_int());
  }
  // The reference trace of the same program gives the same MACs and bytes through the timing model.
  traceview::Analysis ref = analyze(trace::read_trace(path), a);
  CHECK(ref.macs == an.macs);
  CHECK(ref.dram_read == an.dram_read);
  CHECK(ref.dram_write == an.dram_write);
  auto r = run_tool("traceview", dir + "/ours.jsonl");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("energy: ") != std::string::npos);
  CHECK(r.out.find("by component") != std::string::npos);
}

TEST_CASE("--compare prints the same total error and duration errors as isa_compare.py") {
  std::string dir = cct::testing::temp_dir("traceview_compare");
  std::string script = cct::testing::reference_dir() + "/../tools/isa_compare.py";
  REQUIRE_MESSAGE(fs::exists(script), "missing " << script);
  REQUIRE_MESSAGE(fs::exists("/usr/bin/python3"), "/usr/bin/python3 is needed to run isa_compare.py");
  for (const auto& ref : reference_traces()) {
    CAPTURE(ref);
    std::string ours = dir + "/" + fs::path(ref).stem().string() + ".jsonl";
    auto z = run_tool("zebusim", "'" + program_for(ref) + "' --arch zebu-1core -o '" + ours + "'");
    REQUIRE(z.exit_code == 0);
    auto tv = run_tool("traceview", "'" + ours + "' --compare '" + ref + "' --top 5");
    REQUIRE(tv.exit_code == 0);
    auto py = run("/usr/bin/python3 '" + script + "' trace '" + ours + "' '" + ref + "' --max-total-err 100 --max-mdape 100");
    REQUIRE(py.exit_code == 0);
    std::string total = line_starting(py.out, "total cycles: ");
    REQUIRE(!total.empty());
    CHECK(lines_of(tv.out).back() == total);
    CHECK(line_starting(tv.out, "duration error: ") == line_starting(py.out, "duration error: "));
    CHECK(line_starting(tv.out, "end-time error: ") == line_starting(py.out, "end-time error: "));
    CHECK(line_starting(tv.out, "instructions ") == line_starting(py.out, "instructions "));
    CHECK(tv.out.find("instructions that differ most") != std::string::npos);
    CHECK(tv.out.find("first divergence: cycle ") != std::string::npos);
  }
  // A trace against itself: no error, no divergence.
  std::string ref = reference_traces().front();
  auto same = run_tool("traceview", "'" + ref + "' --compare '" + ref + "'");
  REQUIRE(same.exit_code == 0);
  CHECK(lines_of(same.out).back().find("error +0.000%") != std::string::npos);
  CHECK(same.out.find("first divergence: none") != std::string::npos);
  // Traces of different programs are not comparable: exit 1, as isa_compare.py.
  auto other = run_tool("traceview", "'" + reference_traces()[0] + "' --compare '" + reference_traces()[1] + "'");
  CHECK(other.exit_code == 1);
  CHECK(other.out.find("instruction streams differ at instruction") != std::string::npos);
  CHECK(other.out.find("not comparable") != std::string::npos);
}

TEST_CASE("compare_traces: durations, top differences and the first divergence of an edited trace") {
  arch::Architecture a = arch::load_architecture("zebu-1core");
  trace::Trace ref = trace::read_trace(reference_traces().front());
  trace::Trace ours = ref;
  // Lengthen one pe_conv by 1000 cycles and push everything after it back.
  size_t k = 0;
  while (ours.program.instructions[k].op() != isa::Opcode::pe_conv) ++k;
  int64_t at = ours.timing[k].end;
  for (auto& tm : ours.timing) {
    if (tm.start >= at) tm.start += 1000;
    if (tm.end >= at) tm.end += 1000;
  }
  traceview::Comparison c = traceview::compare_traces(ours, ref, analyze(ours, a), analyze(ref, a), 3);
  REQUIRE(c.comparable);
  CHECK(c.total_ours == c.total_ref + 1000);
  REQUIRE(!c.top.empty());
  CHECK(c.top.front() == int64_t(k));
  CHECK(c.first_divergence == int64_t(k));
  CHECK(c.overall.mape_pct > 0);
}

TEST_CASE("--chrome: one complete event per instruction, pid = core, tid = queue") {
  std::string dir = cct::testing::temp_dir("traceview_chrome");
  for (const auto& path : reference_traces()) {
    CAPTURE(path);
    trace::Trace t = trace::read_trace(path);
    auto r = run_tool("traceview", "'" + path + "' --chrome " + dir + "/t.json --svg " + dir + "/t.svg");
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.empty());  // other outputs asked for: no summary unless --summary
    Json j = parse_json(cct::testing::read_file(dir + "/t.json"), "t.json");
    const auto& events = j.find("traceEvents")->as_array();
    size_t complete = 0;
    for (const Json& e : events) {
      if (e.find("ph")->as_string() != "X") continue;
      const auto& inst = t.program.instructions[complete];
      const auto& tm = t.timing[complete];
      CHECK(e.find("name")->as_string() == inst.mnemonic());
      CHECK(e.find("pid")->as_int() == inst.mapping.core);
      CHECK(e.find("tid")->as_int() == int64_t(inst.queue()));
      CHECK(e.find("ts")->as_double() * 1000.0 == doctest::Approx(double(tm.start)));  // 1 GHz: 1000 cycles per us
      CHECK(e.find("args")->find("end")->as_int() == tm.end);
      CHECK(e.find("args")->find("params")->is_object());
      ++complete;
    }
    CHECK(complete == t.size());
    // The SVG is well-formed XML with one lane label per core and queue.
    std::string svg = cct::testing::read_file(dir + "/t.svg");
    auto py = run("/usr/bin/python3 -c \"import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); "
                  "print(sum(1 for e in r.iter() if e.tag.endswith('text') and (e.text or '').startswith('core ')))\" " +
                  dir + "/t.svg");
    REQUIRE(py.exit_code == 0);
    traceview::Analysis an = analyze(t, arch::load_architecture("zebu-1core"));
    CHECK(std::stoul(py.out) == an.lanes.size());
  }
}

namespace {

using html_check::body_attr;
using html_check::chromium;
using html_check::headless;

// Decodes a PNG (8-bit RGB/RGBA, not interlaced) with Python's zlib and counts
// its distinct colours and the pixels of the PE and LD lane colours.
const char* kPngStats = R"PY(
import sys, zlib, struct
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
pos, idat = 8, b''
while pos < len(data):
    n, typ = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    pos += 12 + n
    if typ == b'IHDR':
        w, h, depth, ctype, _, _, interlace = struct.unpack('>IIBBBBB', body)
    elif typ == b'IDAT':
        idat += body
assert depth == 8 and interlace == 0 and ctype in (2, 6), 'unsupported PNG'
bpp = 3 if ctype == 2 else 4
raw = zlib.decompress(idat)
stride = w * bpp
prev = bytearray(stride)
colours = {}
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b = prev[x]
        c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + ((a + b) >> 1)) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        k = bytes(line[x:x + 3])
        colours[k] = colours.get(k, 0) + 1
    prev = line
print(w, h, len(colours), colours.get(bytes([0xd6, 0x27, 0x28]), 0), colours.get(bytes([0x1f, 0x77, 0xb4]), 0))
)PY";

}  // namespace

TEST_CASE("--html opens in headless Chromium without errors, shows the lanes and is not blank") {
  std::string dir = cct::testing::temp_dir("traceview_html");
  chromium();
  std::string path = reference_traces().back();
  trace::Trace t = trace::read_trace(path);
  traceview::Analysis an = analyze(t, arch::load_architecture("zebu-1core"));
  auto r = run_tool("traceview", "'" + path + "' --fir '" + fir_for(path) + "' --html " + dir + "/t.html");
  REQUIRE(r.exit_code == 0);
  std::string html = cct::testing::read_file(dir + "/t.html");
  // Self-contained: no external resource of any kind.
  for (const char* bad : {"http://", "https://", "src=", "<link", "@import", "url("}) {
    CAPTURE(bad);
    CHECK(html.find(bad) == std::string::npos);
  }

  // The page's self-test zooms into every lane and describes instructions; errors end up in <body data-status>.
  auto dom = headless("file://" + dir + "/t.html#selftest", "--dump-dom", dir);
  REQUIRE_MESSAGE(dom.exit_code == 0, dom.err);
  CAPTURE(dom.err.substr(0, 2000));
  CHECK(body_attr(dom.out, "data-status") == "ok");
  CHECK(body_attr(dom.out, "data-error") == "");
  CHECK(body_attr(dom.out, "data-selftest") == "ok");
  CHECK(body_attr(dom.out, "data-lanes") == std::to_string(an.lanes.size()));
  CHECK(body_attr(dom.out, "data-described") == std::to_string(an.lanes.size()));
  CHECK(dom.err.find("Uncaught") == std::string::npos);
  // The tooltip sample shows parameters; the layer table has one row per layer with its FIR name.
  CHECK(dom.out.find("parameters:") != std::string::npos);
  CHECK(dom.out.find("Conv_0") != std::string::npos);
  CHECK(std::count_if(an.layers.begin(), an.layers.end(), [&](const auto& l) {
          return dom.out.find("data-slyr=\"" + std::to_string(l.layer) + "\"") != std::string::npos;
        }) == std::ptrdiff_t(an.layers.size()));

  // #line=N opens on instruction N and shows its details.
  size_t conv = 0;
  while (t.program.instructions[conv].op() != isa::Opcode::pe_conv) ++conv;
  auto line = headless("file://" + dir + "/t.html#line=" + std::to_string(conv + 1), "--dump-dom", dir);
  CHECK(body_attr(line.out, "data-status") == "ok");
  CHECK(line.out.find("pe_conv   line " + std::to_string(conv + 1)) != std::string::npos);

  // A screenshot: decoded, it has many colours, among them the PE and LD lane colours.
  std::string png = dir + "/t.png";
  auto shot = headless("file://" + dir + "/t.html", "--screenshot=" + png, dir, 1000, 500);
  REQUIRE_MESSAGE(fs::exists(png), shot.err);
  cct::testing::write_file(dir + "/png_stats.py", kPngStats);
  auto stats = run("/usr/bin/python3 " + dir + "/png_stats.py " + png);
  REQUIRE_MESSAGE(stats.exit_code == 0, stats.err);
  std::istringstream in(stats.out);
  long w = 0, h = 0, colours = 0, pe = 0, ld = 0;
  in >> w >> h >> colours >> pe >> ld;
  MESSAGE("screenshot " << w << "x" << h << ": " << colours << " colours, " << pe << " PE pixels, " << ld << " LD pixels");
  CHECK(w == 1000);
  CHECK(colours >= 20);
  CHECK(pe > 500);
  CHECK(ld > 200);

  // The check must be able to fail: a page whose script throws is reported.
  std::string broken = html;
  auto p = broken.find("const TV = ");
  REQUIRE(p != std::string::npos);
  broken.insert(p, "null.boom;\n");
  cct::testing::write_file(dir + "/broken.html", broken);
  auto bad = headless("file://" + dir + "/broken.html", "--dump-dom", dir);
  CHECK(body_attr(bad.out, "data-status") == "error");
  CHECK(bad.err.find("Uncaught") != std::string::npos);
}

TEST_CASE("the HTML view of the whole chip: every instruction class hovered, enum parameters by name, no console error") {
  // The bundled model through the tools on chip-64tops (transfers between
  // cores, every queue busy); the slow label has ResNet-50 (test_traceview_resnet.cpp).
  std::string dir = cct::testing::temp_dir("traceview_hover");
  const std::string arch = " --arch chip-64tops", fir = dir + "/t.fir.json";
  auto must = [](const cct::testing::RunResult& r) { REQUIRE_MESSAGE(r.exit_code == 0, r.err); };
  must(run_tool("onnx2fir", cct::testing::source_dir() + "/examples/tiny_resnet/tiny_resnet.onnx --quiet --calib-random 1 --data-dir " +
                                dir + "/data -o " + fir));
  must(run_tool("gemini", fir + arch + " --no-progress -o " + dir + "/t.map.json"));
  must(run_tool("irgen", fir + " " + dir + "/t.map.json" + arch + " -o " + dir + "/t.sir.json"));
  must(run_tool("asm", dir + "/t.sir.json --fir " + fir + arch + " -o " + dir + "/t.asm"));
  must(run_tool("zebusim", dir + "/t.asm" + arch + " -o " + dir + "/t.trace"));
  must(run_tool("traceview", dir + "/t.trace" + arch + " --fir " + fir + " --html " + dir + "/t.html"));
  html_check::check_hover_every_class(dir + "/t.html", trace::read_trace(dir + "/t.trace"), dir);

  // A receive whose sending partner comes later in the program: the page's
  // link to the binding predecessor points forward (it was decoded as an
  // index past the end, and the tooltip threw).
  using isa::Opcode;
  using isa::Param;
  using isa::Queue;
  isa::Program p;
  auto add = [&](Opcode op, int core, std::initializer_list<Queue> prev, std::initializer_list<Queue> next) -> isa::Instruction& {
    return append(p, op, core, prev, next);
  };
  add(Opcode::si_cfg, 1, {}, {}).set_list(Param::DTile, {64, 28, 28});
  {
    auto& si = add(Opcode::si_mov, 1, {}, {});
    si.set(Param::SCORE, 0);
    si.set(Param::TAG, 7);
    si.set_list(Param::Tile, {1, 64, 28, 28});
  }
  add(Opcode::ct_st, 0, {}, {Queue::SO});
  add(Opcode::so_cfg, 0, {}, {}).set_list(Param::STile, {64, 28, 28});
  {
    auto& so = add(Opcode::so_mov, 0, {Queue::CT}, {});
    so.set(Param::DCORE, 1);
    so.set(Param::TAG, 7);
    so.set_list(Param::Tile, {1, 64, 28, 28});
  }
  add(Opcode::ct_ed, 0, {}, {});
  arch::Architecture a = arch::load_architecture("chip-64tops");
  trace::Trace t;
  t.program = p;
  t.timing = sim::simulate(p, a).timing;
  traceview::Analysis an = analyze(t, a);
  REQUIRE(an.dep_of[1].pred > 1);  // si_mov is held back by its partner's core, below it
  cct::testing::write_file(dir + "/fwd.html", traceview::format_html(t, an, {}));
  html_check::check_hover_every_class(dir + "/fwd.html", t, dir);
}

TEST_CASE("a two-core trace: lanes per core, the critical path crosses cores through a transfer") {
  using isa::Opcode;
  using isa::Param;
  using isa::Queue;
  isa::Program p;
  auto add = [&](Opcode op, int core, std::initializer_list<Queue> prev, std::initializer_list<Queue> next) -> isa::Instruction& {
    isa::Instruction& inst = append(p, op, core, prev, next);
    inst.mapping.slyr = core;  // layer 0 on core 0, layer 1 on core 1
    return inst;
  };
  add(Opcode::ct_st, 0, {}, {Queue::SO});
  add(Opcode::so_cfg, 0, {}, {}).set_list(Param::STile, {64, 28, 28});
  {
    auto& so = add(Opcode::so_mov, 0, {Queue::CT}, {});
    so.set(Param::DCORE, 1);
    so.set(Param::TAG, 7);
    so.set_list(Param::Tile, {1, 64, 28, 28});
  }
  add(Opcode::si_cfg, 1, {}, {}).set_list(Param::DTile, {64, 28, 28});
  {
    auto& si = add(Opcode::si_mov, 1, {}, {Queue::DT});
    si.set(Param::SCORE, 0);
    si.set(Param::TAG, 7);
    si.set_list(Param::Tile, {1, 64, 28, 28});
  }
  {
    auto& cfg = add(Opcode::dt_cfg, 1, {}, {});
    cfg.set_list(Param::STile, {64, 28, 28});
    cfg.set_list(Param::DTile, {64, 28, 28});
  }
  {
    auto& dt = add(Opcode::dt_cal, 1, {Queue::SI}, {Queue::CT});
    dt.set_list(Param::Tile, {1, 64, 28, 28});
    dt.set(Param::DTaddr, 64 * 28 * 28);  // a copy beside the received tensor
  }
  add(Opcode::ct_ed, 1, {Queue::DT}, {});
  arch::Architecture a = arch::load_architecture("chip-64tops");
  trace::Trace t;
  t.program = p;
  t.timing = sim::simulate(p, a).timing;
  traceview::Analysis an = analyze(t, a);
  check_invariants(t, an);
  CHECK(an.cores == std::vector<int32_t>{0, 1});
  CHECK(an.transfer_partner[2] == 4);
  CHECK(an.transfer_partner[4] == 2);
  // ct_st (core 0) -> si_mov (core 1, held back through its partner) -> dt_cal -> ct_ed.
  CHECK(an.critical == std::vector<int64_t>{0, 4, 6, 7});
  CHECK(an.dep_of[4].kind == traceview::EdgeKind::Transfer);
  CHECK(an.layers.size() == 2);
  // Chrome JSON: processes are the two cores.
  std::string chrome = traceview::format_chrome_trace(t, an, true, "two", "two.json");
  Json j = parse_json(chrome, "two.json");
  std::set<int64_t> pids;
  for (const Json& e : j.find("traceEvents")->as_array())
    if (e.find("ph")->as_string() == "X") pids.insert(e.find("pid")->as_int());
  CHECK(pids == std::set<int64_t>{0, 1});
  std::string html = traceview::format_html(t, an, {});
  CHECK(html.find("\"lanes\": [[0,") != std::string::npos);
}

TEST_CASE("outputs are deterministic; stdin and .zst input; summary to -o") {
  std::string dir = cct::testing::temp_dir("traceview_det");
  std::string path = reference_traces().front();
  std::string text = cct::testing::read_file(path);
  write_output(dir + "/t.txt.zst", text);
  for (int k = 0; k < 2; ++k) {
    auto r = run_tool("traceview", "'" + path + "' --summary -o " + dir + "/s" + std::to_string(k) + ".txt --html " + dir + "/h" +
                                       std::to_string(k) + ".html --chrome " + dir + "/c" + std::to_string(k) + ".json --svg " +
                                       dir + "/v" + std::to_string(k) + ".svg");
    REQUIRE(r.exit_code == 0);
  }
  for (const char* f : {"s%.txt", "h%.html", "c%.json", "v%.svg"}) {
    std::string a = f, b = f;
    a.replace(a.find('%'), 1, "0");
    b.replace(b.find('%'), 1, "1");
    CAPTURE(a);
    bool same = cct::testing::read_file(dir + "/" + a) == cct::testing::read_file(dir + "/" + b);
    CHECK(same);
  }
  std::string summary = cct::testing::read_file(dir + "/s0.txt");
  auto from_stdin = run_tool("traceview", "-", text);
  REQUIRE(from_stdin.exit_code == 0);
  auto from_zst = run_tool("traceview", dir + "/t.txt.zst");
  REQUIRE(from_zst.exit_code == 0);
  // Only the trace line (its name) differs.
  auto body = [](const std::string& s) { return s.substr(s.find('\n')); };
  CHECK(body(from_stdin.out) == body(summary));
  CHECK(body(from_zst.out) == body(summary));
}

TEST_CASE("traceview errors: missing files, malformed traces, bad options") {
  std::string dir = cct::testing::temp_dir("traceview_err");
  auto r = run_tool("traceview", dir + "/absent.trace");
  CHECK(r.exit_code == kExitIo);
  CHECK(r.err.find("traceview: ") == 0);
  cct::testing::write_file(dir + "/bad.trace", "[ct_st, {'slyr': 0, 'clyr': [], 's_flyr': 0, 'c_flyr': [], 'wkl': 0, 'tile': -1}, "
                                               "{'inst_idx': 1, 'time': [40, 33]}, {'Prev_Insts': [], 'Next_Insts': []}]\n");
  r = run_tool("traceview", dir + "/bad.trace");
  CHECK(r.exit_code == kExitInvalidInput);
  CHECK(r.err.find("bad.trace:1:") != std::string::npos);
  cct::testing::write_file(dir + "/garbage.trace", std::string("\x00\x01garbage\xff", 11));
  r = run_tool("traceview", dir + "/garbage.trace");
  CHECK(r.exit_code == kExitInvalidInput);
  r = run_tool("traceview", reference_traces().front() + " --arch no-such-chip");
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("no-such-chip") != std::string::npos);
  r = run_tool("traceview", reference_traces().front() + " --compare " + reference_traces().front() + " --html " + dir + "/x.html");
  CHECK(r.exit_code == kExitUsage);
  CHECK_FALSE(fs::exists(dir + "/x.html"));
  // A trace on more cores than the architecture has: the --arch was forgotten.
  {
    std::string t = cct::testing::read_file(reference_traces().front());
    std::string first = t.substr(0, t.find('\n') + 1);
    size_t at = first.find("'tile': -1}");
    REQUIRE(at != std::string::npos);
    first.replace(at, 11, "'tile': -1, 'core': 3}");
    cct::testing::write_file(dir + "/core3.trace", first);
    r = run_tool("traceview", dir + "/core3.trace");
    CHECK(r.exit_code == kExitInvalidInput);
    CHECK(r.err.find("core3.trace: the trace runs on core 3 but architecture zebu-1core has 1 core(s): give --arch") !=
          std::string::npos);
    r = run_tool("traceview", dir + "/core3.trace --arch chip-64tops");
    CHECK_MESSAGE(r.exit_code == 0, r.err);
  }
  r = run_tool("traceview", "");
  CHECK(r.exit_code == kExitUsage);
  r = run_tool("traceview", "--help");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("add up to the total") != std::string::npos);
  r = run_tool("traceview", "--version");
  CHECK(r.exit_code == 0);
  // A filtered trace (only pe_conv lines) cannot be priced by the model: a warning, not a failure.
  std::string filtered;
  for (const auto& l : lines_of(cct::testing::read_file(reference_traces().front())))
    if (l.rfind("[pe_conv", 0) == 0) filtered += l + "\n";
  cct::testing::write_file(dir + "/pe_only.trace", filtered);
  r = run_tool("traceview", dir + "/pe_only.trace --html " + dir + "/pe.html --summary");
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("warning: the timing model cannot price this trace") != std::string::npos);
  CHECK(r.out.find("unavailable") != std::string::npos);
}

TEST_CASE("random and extreme traces: every view works and per-layer cycles still add up") {
  arch::Architecture a = arch::load_architecture("zebu-1core");
  trace::Trace base = trace::read_trace(reference_traces().front());
  std::mt19937_64 rng(20261122);
  auto pick = [&](int64_t lo, int64_t hi) { return lo + int64_t(rng() % uint64_t(hi - lo + 1)); };
  for (int round = 0; round < 24; ++round) {
    CAPTURE(round);
    trace::Trace t;
    for (size_t i = 0; i < base.size(); ++i) {
      if (pick(0, 9) == 0) continue;  // filtered out
      isa::Instruction inst = base.program.instructions[i];
      trace::Timing tm = base.timing[i];
      tm.inst_idx = int64_t(t.size()) + 1;
      if (round % 3 == 1) inst.mapping.core = int32_t(pick(0, 2));
      if (round % 4 == 2) inst.mapping.slyr = int32_t(pick(-3, 90));
      if (round % 2 == 1) {
        int64_t limit = round % 6 == 5 ? (int64_t(1) << 62) : 1000000;
        tm.start = pick(0, limit);
        tm.end = tm.start + pick(0, round % 6 == 5 ? limit : 5000);
      }
      t.program.instructions.push_back(inst);
      t.timing.push_back(tm);
    }
    REQUIRE(t.size() > 0);
    traceview::Analysis an = analyze(t, a);
    check_invariants(t, an);
    CHECK(!traceview::format_summary(an, "random", 0).empty());
    CHECK(!traceview::format_html(t, an, {}).empty());
    CHECK(!traceview::format_svg(t, an, {}).empty());
    CHECK(!traceview::format_chrome_trace(t, an, true, "random", "random.json").empty());
    traceview::Comparison c = traceview::compare_traces(t, t, an, an, 5);
    CHECK(c.comparable);
    CHECK(c.top.empty());
    CHECK(c.first_divergence == -1);
  }
}

TEST_CASE("a multicast group: every member starts with the last one ready and links round the group") {
  using isa::Opcode;
  using isa::Param;
  using isa::Queue;
  isa::Program p;
  auto add = [&](Opcode op, int core, std::initializer_list<Queue> prev, std::initializer_list<Queue> next) -> isa::Instruction& {
    return append(p, op, core, prev, next);
  };
  auto member = [&](int core) {
    add(Opcode::ldw_cfg, core, {}, {}).set_list(Param::SWsize, {64, 3, 3});
    auto& m = add(Opcode::ldw_mc, core, {Queue::CT}, {});
    m.set(Param::TAG, 5);
    m.set(Param::MEMBERS, 2);
    m.set_list(Param::Wsize, {64, 64, 3, 3});
  };
  add(Opcode::ct_st, 0, {}, {Queue::LD});                 // 0
  member(0);                                              // 1, 2
  add(Opcode::ct_st, 1, {}, {});                          // 3: core 1's CT queue runs three
  add(Opcode::ct_bc, 1, {}, {}).set(Param::BCS, 0);       // 4  instructions before it releases
  add(Opcode::ct_bc, 1, {}, {Queue::LD}).set(Param::BCS, 1);  // 5  its member: it starts late
  member(1);                                              // 6, 7
  arch::Architecture a = arch::load_architecture("chip-64tops");
  trace::Trace t;
  t.program = p;
  t.timing = sim::simulate(p, a).timing;
  REQUIRE(t.timing[2].start == t.timing[7].start);
  REQUIRE(t.timing[7].start == t.timing[5].end);
  traceview::Analysis an = analyze(t, a);
  check_invariants(t, an);
  // Core 0's member waited for core 1's ct_bc through its group.
  CHECK(an.dep_of[2].pred == 5);
  CHECK(an.dep_of[2].kind == traceview::EdgeKind::Transfer);
  CHECK(an.transfer_partner[2] == 7);
  CHECK(an.transfer_partner[7] == 2);
  // The group reads DRAM once.
  CHECK(an.dram_read_of[2] > 0);
  CHECK(an.dram_read_of[7] == 0);
  // Its energy splits by component, the DRAM read priced once as zebusim prices it.
  REQUIRE(an.energy.available);
  CHECK(an.energy.components);
  CHECK(an.energy.split.dram == doctest::Approx(timing::dram_transfer_energy(a, an.dram_read_of[2]).dram).epsilon(1e-9));
  const std::string dir = cct::testing::temp_dir("traceview_multicast");
  cct::testing::write_file(dir + "/mc.html", traceview::format_html(t, an, {}));
  html_check::check_hover_every_class(dir + "/mc.html", t, dir);
}
