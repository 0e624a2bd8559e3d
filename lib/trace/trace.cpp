#include "trace/trace.hpp"

#include <array>
#include <deque>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "isa/line_schema.hpp"
#include "isa/schema_gen.hpp"
#include "support/error.hpp"
#include "support/io.hpp"

namespace cct::trace {

using isa::LineReader;

namespace {

// Reads the timing dictionary; `previous_idx` is the inst_idx of the line before (0 at the start).
void read_timing(LineReader& r, Timing& t, int64_t previous_idx) {
  enum : unsigned { kIdx = 1, kTime = 2, kIssue = 4, kEnergy = 8, kBytes = 16, kOps = 32 };
  unsigned seen = 0;
  t = Timing{};
  r.set_key_kind("timing key");
  r.read_object("the timing dictionary", [&](std::string_view key) {
    unsigned bit = 0;
    if (key == "inst_idx") {
      bit = kIdx;
      t.inst_idx = r.read_int();
      if (t.inst_idx <= previous_idx)
        r.fail_value("inst_idx " + std::to_string(t.inst_idx) + " does not follow " + std::to_string(previous_idx) +
                     " (it must increase from line to line, starting at 1 or more)");
    } else if (key == "time") {
      bit = kTime;
      int64_t v[2];
      r.read_int_array(v, 2);
      t.start = v[0];
      t.end = v[1];
      if (t.start < 0) r.fail_value("a start cycle cannot be negative");
      if (t.end < t.start)
        r.fail_value("[" + std::to_string(t.start) + ", " + std::to_string(t.end) + "] ends before it starts");
    } else if (key == "issue") {
      bit = kIssue;
      t.set_issue(r.read_int());
      if (t.issue < 0) r.fail_value("a cycle cannot be negative");
    } else if (key == "energy") {
      bit = kEnergy;
      isa::NumberToken n = r.read_number();
      t.set_energy(n.is_float ? n.f : static_cast<double>(n.i));
      if (t.energy < 0) r.fail_value("energy cannot be negative");
    } else if (key == "bytes") {
      bit = kBytes;
      t.set_bytes(r.read_int());
      if (t.bytes < 0) r.fail_value("a byte count cannot be negative");
    } else if (key == "ops") {
      bit = kOps;
      t.set_ops(r.read_int());
      if (t.ops < 0) r.fail_value("an operation count cannot be negative");
    } else if (isa::find_param(key)) {
      r.fail("'" + std::string(key) +
             "' is a parameter: a trace line needs the timing dictionary {inst_idx, time} in third place");
    } else {
      r.fail("unknown timing key '" + std::string(key.substr(0, 40)) +
             "' (expected inst_idx, time, issue, energy, bytes, ops)");
    }
    if (seen & bit) r.fail("duplicate timing key '" + std::string(key) + "'");
    seen |= bit;
  });
  r.set_key_kind({});
  if (!(seen & kIdx)) r.fail("timing: missing key 'inst_idx'");
  if (!(seen & kTime)) r.fail("timing: missing key 'time'");
  if (t.has(Timing::kIssue) && t.issue > t.start)
    r.fail("timing: issue cycle " + std::to_string(t.issue) + " is after the start cycle " + std::to_string(t.start));
}

}  // namespace

int64_t Trace::total_cycles() const {
  int64_t total = 0;
  for (const Timing& t : timing) total = std::max(total, t.end);
  return total;
}

Trace parse_trace(std::string_view text, const std::string& file, bool validate, Syntax* syntax) {
  Trace trace;
  size_t estimate = text.size() / 220 + 16;
  trace.program.instructions.reserve(estimate);
  trace.timing.reserve(estimate);
  std::optional<isa::SchemaPass> schema;  // JSON Lines input: the schema pass runs alongside the table checks
  int64_t previous_idx = 0;
  std::optional<Syntax> found =
      isa::for_each_line(text, file, [&](std::string_view line, long line_no, Syntax s) {
        LineReader r(line, s, file, line_no);
        r.open_line();
        Instruction& inst = trace.program.instructions.emplace_back(r.mnemonic());
        Timing& t = trace.timing.emplace_back();
        r.separator();
        r.mapping(inst.mapping);
        r.separator();
        read_timing(r, t, previous_idx);
        previous_idx = t.inst_idx;
        r.separator();
        r.params(inst);
        r.close_line();
        if (validate && s == Syntax::JsonLines) {
          if (!schema) schema.emplace("trace", file);
          schema->add(line, inst.op(), line_no);
        }
      });
  if (!found) throw_input_error(at_line(file, 0, "no instructions (the trace is empty)"));
  if (schema) schema->finish();
  if (syntax) *syntax = *found;
  return trace;
}

Trace read_trace(const std::string& path, bool validate, Syntax* syntax) {
  std::string text = read_input(path);
  return parse_trace(text, display_name(path), validate, syntax);
}

void append_timing(std::string& out, const Timing& t, Syntax s) {
  out += '{';
  isa::append_key(out, "inst_idx", s);
  isa::append_int(out, t.inst_idx);
  out += ", ";
  isa::append_key(out, "time", s);
  out += '[';
  isa::append_int(out, t.start);
  out += ", ";
  isa::append_int(out, t.end);
  out += ']';
  if (t.has(Timing::kIssue)) {
    out += ", ";
    isa::append_key(out, "issue", s);
    isa::append_int(out, t.issue);
  }
  if (t.has(Timing::kEnergy)) {
    out += ", ";
    isa::append_key(out, "energy", s);
    isa::append_float(out, t.energy);
  }
  if (t.has(Timing::kBytes)) {
    out += ", ";
    isa::append_key(out, "bytes", s);
    isa::append_int(out, t.bytes);
  }
  if (t.has(Timing::kOps)) {
    out += ", ";
    isa::append_key(out, "ops", s);
    isa::append_int(out, t.ops);
  }
  out += '}';
}

void append_trace_line(std::string& out, const Instruction& inst, const Timing& t, Syntax s) {
  isa::append_line_start(out, inst.op(), s);
  isa::append_mapping(out, inst.mapping, s);
  out += ", ";
  append_timing(out, t, s);
  out += ", ";
  isa::append_params(out, inst, s);
  out += "]\n";
}

std::string format_trace(const Trace& trace, Syntax syntax) {
  if (trace.timing.size() != trace.program.instructions.size())
    throw Error(kExitInternal, "trace has " + std::to_string(trace.program.size()) + " instructions but " +
                                   std::to_string(trace.timing.size()) + " timings");
  std::string out;
  out.reserve(trace.timing.size() * 360);
  for (size_t i = 0; i < trace.timing.size(); ++i)
    append_trace_line(out, trace.program.instructions[i], trace.timing[i], syntax);
  return out;
}

std::string checked_trace_text(const std::string& path, const Trace& trace, Syntax syntax, bool validate) {
  std::string text = format_trace(trace, syntax);
  if (validate) {
    // Re-read what we are about to write: the same checks as for inputs
    // (the schema pass included for JSON Lines). A failure is a writer bug.
    try {
      parse_trace(text, display_name(path), true);
    } catch (const Error& e) {
      throw Error(kExitInternal, std::string("output failed validation (a bug, please report): ") + e.what());
    }
  }
  return text;
}

void write_trace(const std::string& path, const Trace& trace, Syntax syntax, bool validate) {
  write_output(path, checked_trace_text(path, trace, syntax, validate));
}

isa::CheckReport check_trace(const Trace& trace, size_t max_diagnostics) {
  using isa::Opcode;
  using isa::Param;
  constexpr int kQ = isa::kQueueCount;
  isa::CheckReport report;
  auto add = [&](size_t index, std::string message) {
    if (report.diagnostics.size() < max_diagnostics) report.diagnostics.push_back({true, index, std::move(message)});
  };
  if (trace.timing.size() != trace.program.size()) {
    add(0, "the trace has " + std::to_string(trace.program.size()) + " instructions but " +
               std::to_string(trace.timing.size()) + " timings");
    return report;
  }
  struct CoreState {
    std::array<int64_t, kQ> last{};  // index + 1 of the last instruction seen per queue (0: none)
    // Pending tokens per (X, Y): instruction indices of the pushes, in order.
    std::array<std::array<std::deque<size_t>, kQ>, kQ> pushed;
  };
  std::map<int32_t, CoreState> cores;
  // Sends and receives wait here for their partner: key (sender, receiver, tag).
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::deque<size_t>> sends, receives;
  const auto& insts = trace.program.instructions;
  for (size_t i = 0; i < insts.size(); ++i) {
    const Instruction& inst = insts[i];
    const Timing& t = trace.timing[i];
    CoreState& c = cores[inst.mapping.core];
    const int q = static_cast<int>(inst.queue());
    auto name = [&] { return std::string(inst.mnemonic()) + " on core " + std::to_string(inst.mapping.core); };
    if (c.last[q] > 0) {
      const Timing& prev = trace.timing[static_cast<size_t>(c.last[q] - 1)];
      if (t.start < prev.end)
        add(i, name() + " starts at " + std::to_string(t.start) + ", before the previous instruction of queue " +
                   std::string(isa::queue_name(inst.queue())) + " (instruction " + std::to_string(c.last[q]) +
                   ") ended at " + std::to_string(prev.end));
    }
    c.last[q] = static_cast<int64_t>(i) + 1;
    for (isa::Queue x : inst.prev) {
      auto& fifo = c.pushed[static_cast<int>(x)][q];
      std::string pair = std::string(isa::queue_name(x)) + "->" + std::string(isa::queue_name(inst.queue()));
      if (fifo.empty()) {
        add(i, name() + " pops a " + pair + " token that was never pushed before it");
        continue;
      }
      size_t producer = fifo.front();
      fifo.pop_front();
      if (t.start < trace.timing[producer].end)
        add(i, name() + " starts at " + std::to_string(t.start) + ", before the " + pair + " token it pops was pushed (" +
                   std::string(insts[producer].mnemonic()) + ", instruction " + std::to_string(producer + 1) +
                   ", ended at " + std::to_string(trace.timing[producer].end) + ")");
    }
    for (isa::Queue y : inst.next) c.pushed[q][static_cast<int>(y)].push_back(i);
    if (inst.op() == Opcode::so_mov || inst.op() == Opcode::si_mov) {
      bool sending = inst.op() == Opcode::so_mov;
      int64_t self = inst.mapping.core;
      int64_t peer = inst.get(sending ? Param::DCORE : Param::SCORE);
      auto key = sending ? std::make_tuple(self, peer, inst.get(Param::TAG))
                         : std::make_tuple(peer, self, inst.get(Param::TAG));
      auto& mine = sending ? sends[key] : receives[key];
      auto& theirs = sending ? receives[key] : sends[key];
      if (theirs.empty()) {
        mine.push_back(i);
      } else {
        size_t other = theirs.front();
        theirs.pop_front();
        size_t send = sending ? i : other, recv = sending ? other : i;
        if (trace.timing[recv].end < trace.timing[send].start)
          add(recv, "si_mov on core " + std::to_string(insts[recv].mapping.core) + " ends at " +
                        std::to_string(trace.timing[recv].end) + ", before its so_mov (instruction " +
                        std::to_string(send + 1) + ") started at " + std::to_string(trace.timing[send].start));
      }
    }
  }
  return report;
}

std::string trace_schema_text() {
  Json cycle = Json::object().set("type", "integer").set("minimum", 0);
  Json count = Json::object().set("type", "integer").set("minimum", 0);
  Json props = Json::object()
                   .set("inst_idx", Json::object().set("type", "integer").set("minimum", 1))
                   .set("time", Json::object()
                                    .set("type", "array")
                                    .set("items", cycle)
                                    .set("minItems", 2)
                                    .set("maxItems", 2))
                   .set("issue", cycle)
                   .set("energy", Json::object().set("type", "number").set("minimum", 0))
                   .set("bytes", count)
                   .set("ops", count);
  Json timing = Json::object()
                    .set("type", "object")
                    .set("properties", std::move(props))
                    .set("required", Json::array({"inst_idx", "time"}))
                    .set("additionalProperties", false);
  Json schema = isa::instruction_line_schema(
      "Trace line (JSON Lines syntax)",
      "One line of an execution trace: [mnemonic, mapping, timing, parameters]. Generated from the opcode table in "
      "lib/isa/isa.cpp and lib/trace/trace.cpp; see formats/Trace_Format.md.",
      {isa::ExtraElement{"timing", std::move(timing)}});
  return format_json(schema) + "\n";
}

}  // namespace cct::trace
