// The host's share of a network: which cpu layers run on the host, grouped
// into host steps, and which are pass-throughs the accelerator reads through
// (formats/Frontend_IR_Format.md, "Host layers"). irgen, gemini, asm and the
// functional simulator all take this one answer.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fir/fir.hpp"

namespace cct::fir {

struct HostStep {
  std::vector<const Layer*> layers;   // the cpu layers it runs, in layer_index order
  std::vector<std::string> inputs;    // accelerator layers (or graph inputs) it reads, through pass-throughs; index order
  std::vector<const Layer*> results;  // its layers read by accelerator layers or graph outputs, in layer order
  bool host_graph = false;            // it also runs the FIR's host graph (after its layers)
  int64_t ops = 0;                    // host_ops of its layers (and host_graph_cost's ops)
  // DRAM bytes it moves outside the chip's loads and stores: the graph
  // inputs it reads and what it writes whole for the graph outputs (its
  // results, the host graph's outputs).
  int64_t graph_io_bytes = 0;
  // The names the Scheduler IR lists for it: its layers, then kHostGraphKey.
  std::vector<std::string> names() const;
};

struct HostPlan {
  std::vector<HostStep> steps;           // in order of their first layer
  std::map<std::string, int> step_of;    // host layer -> index into steps
  std::map<std::string, bool> pass;      // cpu layers read through (reshapes of accelerator data)
  bool is_pass_through(const std::string& name) const { return pass.count(name) > 0; }
  // The step a layer belongs to, or -1.
  int step(const std::string& name) const {
    auto it = step_of.find(name);
    return it == step_of.end() ? -1 : it->second;
  }
};

// A cpu layer is a pass-through when it is a reshape whose input is an
// accelerator layer, a graph input or another pass-through, and which moves
// no data an accelerator layer reads (the chip stores [N, K, 1, 1] and
// [N, K] alike; host layers and graph outputs read the model's row-major
// order whatever the box), so readers read its input. A reshape that
// reorders the chip's bytes for an accelerator reader ([N, C, L], stored as
// the box [N, L, C, 1], to [N, C, 1, L]) is a host layer.
// The other cpu layers form host steps: each connected group of them (joined
// by cpu-to-cpu edges) is one step, which reads accelerator results from DRAM
// and writes its results back for the accelerator or the graph outputs. The
// host graph (fir/host_graph.hpp) joins the step of the host layers whose
// graph outputs it reads, or is a step of its own, the last.
// Errors name `file` and the layer (a step that feeds itself through the
// accelerator).
HostPlan host_plan(const Graph& g, const std::string& file);

// The name an accelerator layer's input resolves to through pass-throughs:
// an accelerator layer, a graph input, a constant or a host-step layer.
std::string resolve_through(const Graph& g, const HostPlan& plan, const std::string& name);

// The work of a host layer in element operations, as the timing model counts
// it: one per element read and one per element written, plus the
// multiply-accumulates of a matmul or dense layer.
int64_t host_ops(const Layer& l);

}  // namespace cct::fir
