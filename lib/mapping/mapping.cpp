// Mapping types, reader and writer.
#include "mapping/mapping.hpp"

#include <algorithm>

#include "support/error.hpp"
#include "support/io.hpp"
#include "support/json_cursor.hpp"
#include "support/schema.hpp"

namespace cct::mapping {

namespace {

void reject_unknown_keys(const JsonCursor& c, std::initializer_list<std::string_view> known) {
  for (const auto& [key, member] : c.members())
    if (std::find(known.begin(), known.end(), key) == known.end()) member.fail("unknown key \"" + key + "\"");
}

LayerMapping read_layer(const JsonCursor& c) {
  c.expect_object();
  reject_unknown_keys(c, {"layer", "cores", "partition", "dram"});
  LayerMapping l;
  l.layer = c.at("layer").as_string();
  l.cores = c.at("cores").as_int_vector();
  if (auto p = c.find("partition")) {
    reject_unknown_keys(*p, {"b", "k", "h", "w"});
    l.partition.b = p->int_or("b", 1);
    l.partition.k = p->int_or("k", 1);
    l.partition.h = p->int_or("h", 1);
    l.partition.w = p->int_or("w", 1);
  }
  if (auto d = c.find("dram")) {
    reject_unknown_keys(*d, {"ifmap", "weights", "ofmap"});
    l.dram.ifmap = d->int_or("ifmap", 0);
    l.dram.weights = d->int_or("weights", 0);
    l.dram.ofmap = d->int_or("ofmap", 0);
  }
  return l;
}

}  // namespace

const LayerMapping* Mapping::find(std::string_view layer, Place* where) const {
  for (size_t s = 0; s < segments.size(); ++s)
    for (size_t i = 0; i < segments[s].layers.size(); ++i)
      if (segments[s].layers[i].layer == layer) {
        if (where) *where = {s, i};
        return &segments[s].layers[i];
      }
  return nullptr;
}

size_t Mapping::layer_count() const {
  size_t n = 0;
  for (const auto& s : segments) n += s.layers.size();
  return n;
}

std::array<int64_t, 4> part_coords(const Partition& p, int64_t part) {
  if (part < 0 || part >= p.product())
    throw Error(kExitInternal, "part " + std::to_string(part) + " out of range 0.." + std::to_string(p.product() - 1));
  std::array<int64_t, 4> c{};
  c[3] = part % p.w;
  part /= p.w;
  c[2] = part % p.h;
  part /= p.h;
  c[1] = part % p.k;
  c[0] = part / p.k;
  return c;
}

Box part_box(const Partition& p, const Dims& dims, int64_t part) {
  std::array<int64_t, 4> c = part_coords(p, part);
  std::array<int64_t, 4> f = p.factors();
  Box b;
  for (int i = 0; i < 4; ++i) {
    if (f[size_t(i)] < 1 || dims[size_t(i)] % f[size_t(i)] != 0)
      throw Error(kExitInternal, "partition factor " + std::to_string(f[size_t(i)]) + " does not divide dimension " +
                                     std::to_string(dims[size_t(i)]));
    int64_t size = dims[size_t(i)] / f[size_t(i)];
    b.lower[size_t(i)] = c[size_t(i)] * size;
    b.upper[size_t(i)] = b.lower[size_t(i)] + size - 1;
  }
  return b;
}

std::vector<std::vector<int64_t>> row_stripes(
    const std::vector<int64_t>& rows, const std::vector<std::vector<size_t>>& consumers, int64_t groups,
    const std::function<int64_t(size_t, size_t, int64_t)>& rows_read) {
  const size_t n = rows.size();
  const size_t G = size_t(std::max<int64_t>(1, groups));
  std::vector<std::vector<int64_t>> ends(n, std::vector<int64_t>(G, 0));
  for (size_t l = n; l-- > 0;) {
    auto& e = ends[l];
    for (size_t g = 0; g < G; ++g) {
      if (consumers[l].empty()) {
        e[g] = (rows[l] * int64_t(g + 1) + int64_t(G) - 1) / int64_t(G);  // rounded up: early stripes get the rows
        continue;
      }
      int64_t end = 0;
      for (size_t c : consumers[l]) end = std::max(end, rows_read(c, l, ends[c][g]));
      e[g] = std::clamp(end, g > 0 ? e[g - 1] : int64_t(0), rows[l]);
    }
    e[G - 1] = rows[l];
  }
  return ends;
}

Mapping parse_mapping(std::string_view text, const std::string& file, bool validate_schema) {
  Json doc = parse_json_validated(text, file, validate_schema ? "mapping" : "");
  JsonCursor root(doc, file);
  root.expect_object();
  reject_unknown_keys(root, {"format", "version", "arch", "fir", "batch", "segments"});
  if (root.at("format").as_string() != kFormatName)
    root.at("format").fail("expected \"" + std::string(kFormatName) + "\" (is this a mapping file?)");
  if (root.at("version").as_int() != kFormatVersion)
    root.at("version").fail("unsupported version (this build reads version " + std::to_string(kFormatVersion) + ")");
  Mapping m;
  m.arch = root.at("arch").as_string();
  m.fir = root.string_or("fir", "");
  m.batch = root.at("batch").as_int();
  for (const JsonCursor& s : root.at("segments").elements()) {
    s.expect_object();
    reject_unknown_keys(s, {"batch_groups", "row_groups", "layers"});
    Segment seg;
    seg.batch_groups = s.int_or("batch_groups", 1);
    seg.row_groups = s.int_or("row_groups", 1);
    for (const JsonCursor& l : s.at("layers").elements()) seg.layers.push_back(read_layer(l));
    m.segments.push_back(std::move(seg));
  }
  throw_if_problems(check_structure(m, file));
  return m;
}

Mapping read_mapping(const std::string& path, bool validate_schema) {
  return parse_mapping(read_input(path), display_name(path), validate_schema);
}

Json to_json(const Mapping& m) {
  Json j = Json::object();
  j.set("format", std::string(kFormatName));
  j.set("version", kFormatVersion);
  j.set("arch", m.arch);
  j.set("fir", m.fir);
  j.set("batch", m.batch);
  Json segments = Json::array();
  for (const Segment& s : m.segments) {
    Json sj = Json::object();
    sj.set("batch_groups", s.batch_groups);
    if (s.row_groups != 1) sj.set("row_groups", s.row_groups);  // absent: 1 (files without stripes stay as they were)
    Json layers = Json::array();
    for (const LayerMapping& l : s.layers) {
      Json lj = Json::object();
      lj.set("layer", l.layer);
      lj.set("cores", Json(l.cores));
      Json p = Json::object();
      p.set("b", l.partition.b).set("k", l.partition.k).set("h", l.partition.h).set("w", l.partition.w);
      lj.set("partition", std::move(p));
      Json d = Json::object();
      d.set("ifmap", l.dram.ifmap).set("weights", l.dram.weights).set("ofmap", l.dram.ofmap);
      lj.set("dram", std::move(d));
      layers.push(std::move(lj));
    }
    sj.set("layers", std::move(layers));
    segments.push(std::move(sj));
  }
  j.set("segments", std::move(segments));
  return j;
}

std::string format_mapping(const Mapping& m, bool validate) {
  std::string text = format_json(to_json(m));
  if (validate) {
    validate_output_text(text, "mapping", "mapping");
    auto problems = check_structure(m, "mapping");
    if (!problems.empty())
      throw Error(kExitInternal, "output failed validation (a bug, please report): " + problems.front());
  }
  return text;
}

void write_mapping(const std::string& path, const Mapping& m, bool validate) {
  write_output(path, format_mapping(m, validate));
}

}  // namespace cct::mapping
