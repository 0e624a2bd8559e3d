// Semantic checks of a mapping: alone, against an architecture, against a network.
#include <map>

#include "arch/arch.hpp"
#include "mapping/mapping.hpp"
#include "support/error.hpp"
#include "support/json_cursor.hpp"

namespace cct::mapping {

namespace {

std::string layer_ptr(size_t s, size_t i) {
  return "/segments/" + std::to_string(s) + "/layers/" + std::to_string(i);
}

const char* const kFactorKeys[4] = {"b", "k", "h", "w"};

// Collects problems as "file: /pointer: what".
struct Problems {
  const std::string& file;
  std::vector<std::string> list;
  void add(const std::string& pointer, const std::string& what) { list.push_back(at_pointer(file, pointer, what)); }
};

std::string factor_text(const Partition& p) {
  return std::to_string(p.b) + "*" + std::to_string(p.k) + "*" + std::to_string(p.h) + "*" + std::to_string(p.w);
}

}  // namespace

void throw_if_problems(const std::vector<std::string>& problems) {
  if (problems.empty()) return;
  std::string msg = problems.front();
  for (size_t i = 1; i < problems.size(); ++i) msg += "\n" + problems[i];
  throw_input_error(msg);
}

std::vector<std::string> check_structure(const Mapping& m, const std::string& file) {
  Problems out{file, {}};
  if (m.batch < 1) out.add("/batch", "the batch must be >= 1, got " + std::to_string(m.batch));
  std::map<std::string, std::string> mapped_at;  // layer -> pointer of its first mapping
  for (size_t s = 0; s < m.segments.size(); ++s) {
    const Segment& seg = m.segments[s];
    const std::string sp = "/segments/" + std::to_string(s);
    bool groups_ok = seg.batch_groups >= 1 && m.batch >= 1 && m.batch % seg.batch_groups == 0;
    if (!groups_ok)
      out.add(sp + "/batch_groups", "batch_groups must be >= 1 and divide the batch of " + std::to_string(m.batch) +
                                        ", got " + std::to_string(seg.batch_groups));
    if (seg.row_groups < 1) out.add(sp + "/row_groups", "row_groups must be >= 1, got " + std::to_string(seg.row_groups));
    if (seg.layers.empty()) out.add(sp + "/layers", "a segment needs at least one layer");
    for (size_t i = 0; i < seg.layers.size(); ++i) {
      const LayerMapping& l = seg.layers[i];
      const std::string lp = layer_ptr(s, i);
      if (l.layer.empty()) out.add(lp + "/layer", "the layer name is empty");
      auto [it, fresh] = mapped_at.emplace(l.layer, lp);
      if (!fresh) out.add(lp + "/layer", "layer \"" + l.layer + "\" is mapped twice (also at " + it->second + ")");
      if (l.cores.empty()) out.add(lp + "/cores", "a layer needs at least one core");
      // Several layers of a segment may share a core (it runs them one after
      // another for each batch group); the parts of one layer may not.
      std::map<int64_t, std::string> core_user;  // core -> pointer where the layer first uses it
      for (size_t c = 0; c < l.cores.size(); ++c) {
        const std::string cp = lp + "/cores/" + std::to_string(c);
        if (l.cores[c] < 0) {
          out.add(cp, "core ids are >= 0, got " + std::to_string(l.cores[c]));
          continue;
        }
        auto [u, first] = core_user.emplace(l.cores[c], cp);
        if (!first)
          out.add(cp, "core " + std::to_string(l.cores[c]) + " is used twice by layer \"" + l.layer + "\" (also at " +
                          u->second + "): each part of a layer needs its own core");
      }
      std::array<int64_t, 4> f = l.partition.factors();
      bool factors_ok = true;
      for (size_t d = 0; d < 4; ++d)
        if (f[d] < 1) {
          out.add(lp + "/partition/" + kFactorKeys[d], "partition factors must be >= 1, got " + std::to_string(f[d]));
          factors_ok = false;
        }
      if (factors_ok && l.partition.product() != int64_t(l.cores.size()))
        out.add(lp + "/partition", "factors b*k*h*w = " + factor_text(l.partition) + " = " +
                                       std::to_string(l.partition.product()) + " but the layer has " +
                                       std::to_string(l.cores.size()) + " cores");
      if (factors_ok && seg.row_groups > 1 && l.partition.h != 1)
        out.add(lp + "/partition/h", "a segment with row_groups cuts the rows itself: h must be 1, got " +
                                         std::to_string(l.partition.h));
      if (factors_ok && groups_ok && (m.batch / seg.batch_groups) % l.partition.b != 0)
        out.add(lp + "/partition/b", std::to_string(l.partition.b) + " does not divide the " +
                                         std::to_string(m.batch / seg.batch_groups) + " samples of a batch group");
      const std::pair<const char*, int64_t> channels[] = {
          {"ifmap", l.dram.ifmap}, {"weights", l.dram.weights}, {"ofmap", l.dram.ofmap}};
      for (const auto& [key, ch] : channels)
        if (ch < 0) out.add(lp + "/dram/" + key, "DRAM channels are >= 0, got " + std::to_string(ch));
    }
  }
  return out.list;
}

std::vector<std::string> check_against_arch(const Mapping& m, const arch::Architecture& a, const std::string& file) {
  Problems out{file, {}};
  if (m.arch != a.name)
    out.add("/arch", "the mapping was made for architecture \"" + m.arch + "\", not \"" + a.name + "\"");
  const int64_t channels = int64_t(a.dram_channels.size());
  for (size_t s = 0; s < m.segments.size(); ++s)
    for (size_t i = 0; i < m.segments[s].layers.size(); ++i) {
      const LayerMapping& l = m.segments[s].layers[i];
      const std::string lp = layer_ptr(s, i);
      for (size_t c = 0; c < l.cores.size(); ++c)
        if (l.cores[c] >= 0 && !a.valid_core(l.cores[c]))
          out.add(lp + "/cores/" + std::to_string(c),
                  "core " + std::to_string(l.cores[c]) + " does not exist (" + a.name + " has cores 0.." +
                      std::to_string(a.core_count() - 1) + ")");
      const std::pair<const char*, int64_t> used[] = {
          {"ifmap", l.dram.ifmap}, {"weights", l.dram.weights}, {"ofmap", l.dram.ofmap}};
      for (const auto& [key, ch] : used)
        if (ch >= channels)
          out.add(lp + "/dram/" + key, "DRAM channel " + std::to_string(ch) + " does not exist (" + a.name +
                                           " has channels 0.." + std::to_string(channels - 1) + ")");
    }
  return out.list;
}

std::vector<std::string> check_against_network(const Mapping& m, const Network& net, const std::string& file) {
  Problems out{file, {}};
  if (m.batch != net.batch)
    out.add("/batch", "the mapping is for batch " + std::to_string(m.batch) + " but the network's batch is " +
                          std::to_string(net.batch));
  std::map<std::string, size_t, std::less<>> index;  // network layer name -> position in net.layers
  for (size_t i = 0; i < net.layers.size(); ++i) index.emplace(net.layers[i].name, i);

  // Where each network layer runs: (segment, index) packed as one ordinal.
  constexpr int64_t kUnmapped = -1;
  std::vector<int64_t> ordinal(net.layers.size(), kUnmapped);
  std::vector<std::string> pointer(net.layers.size());
  int64_t next = 0;
  for (size_t s = 0; s < m.segments.size(); ++s) {
    const Segment& seg = m.segments[s];
    for (size_t i = 0; i < seg.layers.size(); ++i, ++next) {
      const LayerMapping& l = seg.layers[i];
      const std::string lp = layer_ptr(s, i);
      auto it = index.find(l.layer);
      if (it == index.end()) {
        out.add(lp + "/layer", "the network has no layer \"" + l.layer + "\"");
        continue;
      }
      const NetworkLayer& nl = net.layers[it->second];
      if (!nl.on_npu) {
        out.add(lp + "/layer", "layer \"" + l.layer + "\" runs on the cpu and is not mapped");
        continue;
      }
      if (ordinal[it->second] == kUnmapped) {
        ordinal[it->second] = next;
        pointer[it->second] = lp;
      }
      // Partition factors against the output dimensions.
      std::array<int64_t, 4> f = l.partition.factors();
      if (nl.rank > 4 && l.partition.product() > 1) {
        out.add(lp + "/partition", "the rank-" + std::to_string(nl.rank) + " output of \"" + l.layer +
                                       "\" cannot be partitioned (only N, C, H, W outputs can)");
        continue;
      }
      Dims dims = nl.dims;
      if (seg.batch_groups >= 1 && dims[0] % seg.batch_groups != 0) {
        out.add("/segments/" + std::to_string(s) + "/batch_groups",
                std::to_string(seg.batch_groups) + " batch groups do not divide the " + std::to_string(dims[0]) +
                    " samples of \"" + l.layer + "\"");
        continue;
      }
      if (seg.batch_groups >= 1) dims[0] /= seg.batch_groups;
      static const char* const what[4] = {"samples of a batch group", "output channels", "output rows",
                                          "output columns"};
      for (size_t d = 0; d < 4; ++d)
        if (f[d] >= 1 && dims[d] % f[d] != 0)
          out.add(lp + "/partition/" + kFactorKeys[d], std::to_string(f[d]) + " does not divide the " +
                                                           std::to_string(dims[d]) + " " + what[d] + " of \"" +
                                                           l.layer + "\"");
      // A grouped convolution's parts hold whole groups.
      if (f[1] >= 1 && dims[1] % f[1] == 0 && nl.k_unit > 1 && (dims[1] / f[1]) % nl.k_unit != 0)
        out.add(lp + "/partition/k", std::to_string(f[1]) + " parts of the " + std::to_string(dims[1] / nl.k_unit) +
                                         " groups of \"" + l.layer + "\" would split a group");
    }
  }

  // Every npu layer mapped; every layer after its producers. Cpu layers take
  // the latest position of their producers, so order flows through them.
  std::vector<int64_t> ready(net.layers.size(), kUnmapped);
  for (size_t i = 0; i < net.layers.size(); ++i) {
    const NetworkLayer& nl = net.layers[i];
    int64_t latest = kUnmapped;
    std::string latest_name;
    for (const std::string& p : nl.producers) {
      auto it = index.find(p);
      if (it == index.end() || it->second >= i) continue;  // graph inputs; order is the network's own business
      if (ready[it->second] > latest) {
        latest = ready[it->second];
        latest_name = p;
      }
    }
    if (!nl.on_npu) {
      ready[i] = latest;
      continue;
    }
    if (ordinal[i] == kUnmapped) {
      out.add("/segments", "layer \"" + nl.name + "\" is not mapped");
      continue;
    }
    ready[i] = ordinal[i];
    if (latest != kUnmapped && latest >= ordinal[i])
      out.add(pointer[i] + "/layer", "layer \"" + nl.name + "\" is mapped before (or with) its producer \"" +
                                         latest_name + "\"; list layers in dependency order");
  }
  return out.list;
}

}  // namespace cct::mapping
