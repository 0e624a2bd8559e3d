// Chrome Trace Event JSON (traceview --chrome).
#include <algorithm>
#include <charconv>

#include "isa/line_syntax.hpp"
#include "support/json.hpp"
#include "support/schema_parse.hpp"
#include "traceview/views.hpp"

namespace cct::traceview {
namespace {

void append_num(std::string& out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// Microseconds at the clock, shortest round-trip text.
void append_us(std::string& out, int64_t cycles, double cycles_per_us) { isa::append_float(out, double(cycles) / cycles_per_us); }

void append_meta(std::string& out, const char* name, int64_t pid, int64_t tid, std::string_view key, const std::string& value,
                 bool string_value) {
  out += "{\"name\": \"";
  out += name;
  out += "\", \"ph\": \"M\", \"pid\": ";
  append_num(out, pid);
  out += ", \"tid\": ";
  append_num(out, tid);
  out += ", \"args\": {\"";
  out += key;
  out += "\": ";
  if (string_value)
    append_json_string(out, value);
  else
    out += value;
  out += "}},\n";
}

}  // namespace

std::string format_chrome_trace(const trace::Trace& t, const Analysis& a, bool validate, const std::string& trace_name,
                                const std::string& out_name) {
  const double cycles_per_us = a.clock_ghz * 1e3;
  std::string out;
  out.reserve(t.size() * 420 + 4096);
  out += "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"format\": \"traceview-chrome\", \"version\": 1, \"trace\": ";
  append_json_string(out, trace_name);
  out += ", \"architecture\": ";
  append_json_string(out, a.arch_name);
  out += ", \"clock_ghz\": ";
  isa::append_float(out, a.clock_ghz);
  out += ", \"instructions\": ";
  append_num(out, a.instructions);
  out += ", \"total_cycles\": ";
  append_num(out, a.total_cycles);
  out += "},\n\"traceEvents\": [\n";

  // Processes are cores, threads are queues (sorted in queue order).
  int32_t last_core = -1;
  for (const Lane& l : a.lanes) {
    if (l.core != last_core) {
      append_meta(out, "process_name", l.core, 0, "name", "core " + std::to_string(l.core), true);
      append_meta(out, "process_sort_index", l.core, 0, "sort_index", std::to_string(l.core), false);
      last_core = l.core;
    }
    append_meta(out, "thread_name", l.core, int64_t(l.queue), "name", std::string(isa::queue_name(l.queue)), true);
    append_meta(out, "thread_sort_index", l.core, int64_t(l.queue), "sort_index", std::to_string(int(l.queue)), false);
  }

  // The host, a process after the cores: one event per host step, while it computes.
  int64_t host_pid = 0;
  for (const Lane& l : a.lanes) host_pid = std::max<int64_t>(host_pid, l.core + 1);
  if (!a.host.runs.empty()) {
    append_meta(out, "process_name", host_pid, 0, "name", "host", true);
    append_meta(out, "process_sort_index", host_pid, 0, "sort_index", std::to_string(host_pid), false);
    append_meta(out, "thread_name", host_pid, 0, "name", "host steps", true);
  }
  for (const HostStepRun& r : a.host.runs) {
    out += "{\"name\": \"host step ";
    append_num(out, r.tag);
    out += "\", \"cat\": \"host\", \"ph\": \"X\", \"ts\": ";
    append_us(out, r.start, cycles_per_us);
    out += ", \"dur\": ";
    append_us(out, r.end - r.start, cycles_per_us);
    out += ", \"pid\": ";
    append_num(out, host_pid);
    out += ", \"tid\": 0, \"args\": {\"host_step\": ";
    append_num(out, r.tag);
    out += ", \"start\": ";
    append_num(out, r.start);
    out += ", \"end\": ";
    append_num(out, r.end);
    out += ", \"cycles\": ";
    append_num(out, r.cycles);
    out += ", \"ops\": ";
    append_num(out, r.ops);
    out += ", \"bytes\": ";
    append_num(out, r.bytes);
    out += "}}";
    out += t.size() > 0 ? ",\n" : "\n";
  }

  for (size_t i = 0; i < t.size(); ++i) {
    const auto& inst = t.program.instructions[i];
    const auto& tm = t.timing[i];
    out += "{\"name\": \"";
    out += inst.mnemonic();
    out += "\", \"cat\": \"";
    out += isa::queue_name(inst.queue());
    out += "\", \"ph\": \"X\", \"ts\": ";
    append_us(out, tm.start, cycles_per_us);
    out += ", \"dur\": ";
    append_us(out, tm.duration(), cycles_per_us);
    out += ", \"pid\": ";
    append_num(out, inst.mapping.core);
    out += ", \"tid\": ";
    append_num(out, int64_t(inst.queue()));
    out += ", \"args\": {\"line\": ";
    append_num(out, int64_t(i) + 1);
    out += ", \"inst_idx\": ";
    append_num(out, tm.inst_idx);
    out += ", \"slyr\": ";
    append_num(out, inst.mapping.slyr);
    out += ", \"layer\": ";
    append_json_string(out, a.layer_label(inst.mapping.slyr));
    out += ", \"wkl\": ";
    append_num(out, inst.mapping.wkl);
    out += ", \"tile\": ";
    append_num(out, inst.mapping.tile);
    out += ", \"start\": ";
    append_num(out, tm.start);
    out += ", \"end\": ";
    append_num(out, tm.end);
    const Dependence& d = a.dep_of[i];
    if (d.pred >= 0) {
      out += ", \"waited_for\": \"line ";
      append_num(out, d.pred + 1);
      out += " (";
      if (d.kind == EdgeKind::Token) {
        out += "token ";
        out += isa::queue_name(d.token_from);
        out += "->";
        out += isa::queue_name(inst.queue());
      } else {
        out += edge_kind_name(d.kind);
      }
      out += ")\"";
    }
    if (tm.has(trace::Timing::kIssue)) out += ", \"issue\": ", append_num(out, tm.issue);
    if (tm.has(trace::Timing::kEnergy)) out += ", \"energy_pj\": ", isa::append_float(out, tm.energy);
    if (tm.has(trace::Timing::kBytes)) out += ", \"bytes\": ", append_num(out, tm.bytes);
    if (tm.has(trace::Timing::kOps)) out += ", \"ops\": ", append_num(out, tm.ops);
    out += ", \"params\": ";
    isa::append_params(out, inst, isa::Syntax::JsonLines);
    out += "}}";
    if (i + 1 < t.size()) out += ',';
    out += '\n';
  }
  if (t.size() == 0 && out.size() >= 2 && out[out.size() - 2] == ',') out.erase(out.size() - 2, 1);
  out += "]}\n";
  if (validate) validate_output_text_streaming(out, "traceview_chrome", out_name);
  return out;
}

}  // namespace cct::traceview
