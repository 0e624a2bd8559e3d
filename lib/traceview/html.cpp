// The self-contained HTML viewer (traceview --html).
//
// The page (viewer.html, embedded in the binary) holds the styles and the
// script; this file fills in the data. Per-instruction data travel as
// base64-coded byte streams of LEB128 varints (zigzag for signed values),
// a few bytes per instruction, decoded by the page into typed arrays:
//   main stream, per instruction in program order:
//     lane, opcode (byte), slyr (s), start - previous start in the lane (s),
//     duration, line distance to the binding predecessor (s; 0 = none;
//     negative when it comes later in the program, as the sending partner of
//     a receive on another core may)
//     [, edge byte: kind * 16 + token queue], wkl (s), tile (s),
//     presence byte of the optional timing fields
//     [, start - issue][, bytes][, ops][, energy as float32 little-endian]
//   parameter stream (when the trace has at most param_limit instructions),
//     per instruction: byte length, then s_flyr (s), clyr and c_flyr (count,
//     values (s)), and each parameter of the opcode in table order: integers,
//     enums (s); bools (byte); numbers (byte 0 + s, or byte 1 + float64 LE);
//     lists (their fixed count of (s)); queue lists (count, queue bytes).
#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cstring>

#include "support/embedded.hpp"
#include "support/error.hpp"
#include "support/json.hpp"
#include "traceview/text_table.hpp"
#include "traceview/views.hpp"

namespace cct {
extern const EmbeddedFile traceview_asset_files[];
extern const std::size_t traceview_asset_count;
}  // namespace cct

namespace cct::traceview {
namespace {

using isa::ParamKind;

std::string_view asset(std::string_view name) {
  for (std::size_t i = 0; i < traceview_asset_count; ++i)
    if (name == traceview_asset_files[i].name) return traceview_asset_files[i].data;
  throw Error(kExitInternal, "traceview: embedded asset " + std::string(name) + " is missing");
}

void put_uv(std::string& s, uint64_t v) {
  while (v >= 0x80) {
    s += char(uint8_t(v) | 0x80);
    v >>= 7;
  }
  s += char(uint8_t(v));
}
void put_sv(std::string& s, int64_t v) { put_uv(s, (uint64_t(v) << 1) ^ uint64_t(v >> 63)); }
template <class T>
void put_le(std::string& s, T v) {
  static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big);
  unsigned char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  if constexpr (std::endian::native == std::endian::big) std::reverse(b, b + sizeof(T));
  s.append(reinterpret_cast<const char*>(b), sizeof(T));
}

void append_base64(std::string& out, std::string_view in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t i = 0;
  out.reserve(out.size() + (in.size() + 2) / 3 * 4);
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8 | uint8_t(in[i + 2]);
    out += kAlphabet[v >> 18], out += kAlphabet[(v >> 12) & 63], out += kAlphabet[(v >> 6) & 63], out += kAlphabet[v & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16 | (i + 1 < in.size() ? uint32_t(uint8_t(in[i + 1])) << 8 : 0u);
    out += kAlphabet[v >> 18], out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
}

int kind_code(ParamKind k) {
  switch (k) {
    case ParamKind::Int: return 0;
    case ParamKind::Number: return 1;
    case ParamKind::Bool: return 2;
    case ParamKind::Enum: return 3;
    case ParamKind::IntList: return 4;
    case ParamKind::EnumList: return 5;
    case ParamKind::QueueList: return 6;
  }
  return 0;
}

Json opcode_table() {
  Json ops = Json::array();
  for (const auto& info : isa::all_opcodes()) {
    Json params = Json::array();
    for (const auto& p : info.params) {
      Json enums = Json::array();
      if (p.kind == ParamKind::Enum) enums.push(int(p.enums[0]));
      if (p.kind == ParamKind::EnumList)
        for (int k = 0; k < p.length; ++k) enums.push(int(p.enums[std::min(k, 1)]));
      params.push(Json::array({Json(isa::param_name(p.id)), Json(kind_code(p.kind)), Json(int(p.length)), enums}));
    }
    ops.push(Json::array({Json(info.mnemonic), Json(int(info.queue)), Json(info.is_config), params}));
  }
  return ops;
}

Json enum_table() {
  Json classes = Json::array();
  for (int c = 0; c < isa::kEnumClassCount; ++c) {
    Json members = Json::array();
    for (const auto& m : isa::enum_members(isa::EnumClass(c))) members.push(Json::array({Json(m.value), Json(m.name)}));
    classes.push(Json::array({Json(isa::enum_class_name(isa::EnumClass(c))), members}));
  }
  return classes;
}

void encode_params(std::string& s, const isa::Instruction& inst) {
  std::string rec;
  put_sv(rec, inst.mapping.s_flyr);
  put_uv(rec, uint64_t(inst.mapping.clyr.size()));
  for (int32_t v : inst.mapping.clyr) put_sv(rec, v);
  put_uv(rec, uint64_t(inst.mapping.c_flyr.size()));
  for (int32_t v : inst.mapping.c_flyr) put_sv(rec, v);
  const auto& specs = inst.info().params;
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto& p = specs[i];
    switch (p.kind) {
      case ParamKind::Int: put_sv(rec, inst.raw_int(int(i))); break;
      // Enums and bools take one cell: get() reads them at their width.
      case ParamKind::Enum: put_sv(rec, inst.get(p.id)); break;
      case ParamKind::Bool: rec += char(inst.get(p.id) ? 1 : 0); break;
      case ParamKind::Number:
        if (inst.raw_is_float(int(i))) {
          rec += char(1);
          put_le(rec, inst.raw_double(int(i)));
        } else {
          rec += char(0);
          put_sv(rec, inst.raw_int(int(i)));
        }
        break;
      case ParamKind::IntList:
      case ParamKind::EnumList:
        for (int k = 0; k < p.length; ++k) put_sv(rec, inst.raw_cell(int(i), k));
        break;
      case ParamKind::QueueList: {
        const isa::QueueList& ql = p.id == isa::Param::Prev_Insts ? inst.prev : inst.next;
        put_uv(rec, uint64_t(ql.size()));
        for (isa::Queue q : ql) rec += char(int(q));
        break;
      }
    }
  }
  put_uv(s, rec.size());
  s += rec;
}

}  // namespace

std::string format_html(const trace::Trace& t, const Analysis& a, const HtmlOptions& o) {
  const size_t n = t.size();
  const bool with_params = n <= o.param_limit;

  // ---- Streams.
  std::string main, params;
  main.reserve(n * 12);
  if (with_params) params.reserve(n * 32);
  std::vector<int64_t> last_start(a.lanes.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    const auto& inst = t.program.instructions[i];
    const auto& tm = t.timing[i];
    size_t lane = size_t(a.lane_of[i]);
    put_uv(main, lane);
    main += char(int(inst.op()));
    put_sv(main, inst.mapping.slyr);
    put_sv(main, tm.start - last_start[lane]);
    last_start[lane] = tm.start;
    put_uv(main, uint64_t(tm.duration()));
    const Dependence& d = a.dep_of[i];
    if (d.pred >= 0) {
      put_sv(main, int64_t(i) - d.pred);
      main += char(int(d.kind) * 16 + int(d.token_from));
    } else {
      put_uv(main, 0);
    }
    put_sv(main, inst.mapping.wkl);
    put_sv(main, inst.mapping.tile);
    main += char(tm.present);
    if (tm.has(trace::Timing::kIssue)) put_uv(main, uint64_t(tm.start - tm.issue));
    if (tm.has(trace::Timing::kBytes)) put_uv(main, uint64_t(tm.bytes));
    if (tm.has(trace::Timing::kOps)) put_uv(main, uint64_t(tm.ops));
    if (tm.has(trace::Timing::kEnergy)) put_le(main, float(tm.energy));
    if (with_params) encode_params(params, inst);
  }

  // ---- The small tables, as JSON.
  Json meta = Json::object();
  meta.set("title", o.title);
  meta.set("architecture", a.arch_name);
  meta.set("clock_ghz", a.clock_ghz);
  meta.set("macs_per_cycle_per_core", a.macs_per_cycle_per_core);
  meta.set("peak_macs_per_cycle", a.peak_macs_per_cycle());
  meta.set("instructions", a.instructions);
  meta.set("total_cycles", a.total_cycles);
  meta.set("macs", a.macs);
  meta.set("dram_read", a.dram_read);
  meta.set("dram_write", a.dram_write);
  meta.set("cores", int64_t(a.cores.size()));
  meta.set("has_params", with_params);
  meta.set("param_limit", int64_t(o.param_limit));
  meta.set("has_energy", a.energy.available);
  // The host's share (host steps: ct_hs / ct_hw round trips).
  meta.set("host_steps", a.host.steps);
  meta.set("host_cycles", a.host.cycles);
  meta.set("host_wait_cycles", a.host.wait_cycles);
  meta.set("host_path_cycles", a.host.path_cycles);
  Json queues = Json::array(), colors = Json::array();
  for (int q = 0; q < isa::kQueueCount; ++q) {
    queues.push(isa::queue_name(isa::Queue(q)));
    colors.push(queue_color(isa::Queue(q)));
  }
  Json lanes = Json::array();
  for (const Lane& l : a.lanes)
    lanes.push(Json::array({Json(l.core), Json(int(l.queue)), Json(l.instructions), Json(l.busy_cycles)}));
  Json layers = Json::array();
  for (const LayerRow& l : a.layers)
    layers.push(Json::array({Json(l.layer), Json(l.name), Json(l.op), Json(l.instructions), Json(l.cycles), Json(l.first_start),
                             Json(l.last_end), Json(l.macs), Json(l.pe_busy_cycles), Json(l.dram_read), Json(l.dram_write),
                             Json(l.energy_pj)}));
  Json path = Json::array();
  for (const PathRun& r : a.path_runs)
    path.push(Json::array({Json(r.begin), Json(r.end), Json(r.layer), Json(int(r.queue)), Json(r.core), Json(r.instructions),
                           Json(r.first)}));

  std::string data = "{\"meta\": ";
  append_json_compact(data, meta);
  data += ",\n\"queues\": ";
  append_json_compact(data, queues);
  data += ", \"colors\": ";
  append_json_compact(data, colors);
  data += ",\n\"edge_kinds\": [\"start\", \"queue order\", \"token\", \"transfer partner\"]";
  data += ",\n\"opcodes\": ";
  append_json_compact(data, opcode_table());
  data += ",\n\"enums\": ";
  append_json_compact(data, enum_table());
  data += ",\n\"lanes\": ";
  append_json_compact(data, lanes);
  data += ",\n\"layers\": ";
  append_json_compact(data, layers);
  data += ",\n\"path\": ";
  append_json_compact(data, path);
  data += ",\n\"main\": \"";
  append_base64(data, main);
  data += "\",\n\"params\": \"";
  append_base64(data, params);
  data += "\"}";
  // Inside <script>, "</" could close the element: escape it (JSON allows "\/").
  for (size_t p = data.find("</"); p != std::string::npos; p = data.find("</", p + 3)) data.replace(p, 2, "<\\/");

  std::string_view page = asset("viewer.html");
  static constexpr std::string_view kTitleMark = "__TRACEVIEW_TITLE__", kDataMark = "__TRACEVIEW_DATA__";
  std::string out;
  out.reserve(page.size() + data.size() + 256);
  size_t pos = 0;
  for (;;) {
    size_t tp = page.find(kTitleMark, pos), dp = page.find(kDataMark, pos);
    size_t next = std::min(tp, dp);
    out.append(page.substr(pos, next == std::string_view::npos ? std::string_view::npos : next - pos));
    if (next == std::string_view::npos) break;
    if (next == tp) {
      append_markup_escaped(out, o.title);
      pos = tp + kTitleMark.size();
    } else {
      out += data;
      pos = dp + kDataMark.size();
    }
  }
  return out;
}

}  // namespace cct::traceview
