// SIR reader (typed structs straight from the RapidJSON DOM) and writer.
#include <algorithm>
#include <bit>
#include <charconv>

#include "sir/sir.hpp"
#include "support/error.hpp"
#include "support/io.hpp"
#include "support/json_emit.hpp"
#include "support/json_rapid.hpp"
#include "support/rapid_cursor.hpp"
#include "support/schema.hpp"
#include "support/schema_parse.hpp"

namespace cct::sir {

namespace {

// ---- reading -------------------------------------------------------------------

// Visits the members of an object whose keys are all in `keys` (the format is
// closed): unknown, duplicate and missing required keys fail with the pointer.
// `on_key(index, cursor)` receives the index of the key in `keys`.
template <size_t N, class F>
void read_object(const RapidCursor& c, const std::array<std::string_view, N>& keys, uint32_t required, F&& on_key) {
  static_assert(N <= 32);
  c.expect_object();
  uint32_t seen = 0;
  const auto& obj = c.value();
  for (auto m = obj.MemberBegin(); m != obj.MemberEnd(); ++m) {
    std::string_view k(m->name.GetString(), m->name.GetStringLength());
    size_t i = 0;
    while (i < N && keys[i] != k) ++i;
    RapidCursor v = c.member(m);
    if (i == N) v.fail("unknown key \"" + std::string(k) + "\"");
    if (seen & (1u << i)) v.fail("duplicate key \"" + std::string(k) + "\"");
    seen |= 1u << i;
    on_key(i, v);
  }
  if (uint32_t missing = required & ~seen) c.fail("missing key \"" + std::string(keys[std::countr_zero(missing)]) + "\"");
}

template <class... I>
constexpr uint32_t bits(I... i) {
  return ((1u << i) | ... | 0u);
}

Coord read_coord(const RapidCursor& c) { return c.as_int_array<4>(); }

Endpoint read_endpoint(const RapidCursor& c) {
  std::string_view s = c.as_string_view();
  if (s == "core") return Endpoint::Core;
  if (s == "DRAM") return Endpoint::Dram;
  c.fail("expected \"core\" or \"DRAM\", got \"" + std::string(s) + "\"");
}

template <class T, class F>
std::vector<T> read_list(const RapidCursor& c, F&& read_one) {
  c.expect_array();
  std::vector<T> out;
  size_t n = c.array_size();
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    RapidCursor e = c.at(i);
    out.push_back(read_one(e));
  }
  return out;
}

std::string read_name(const RapidCursor& c) {
  std::string s = c.as_string();
  if (s.empty()) c.fail("empty layer name");
  return s;
}

Destination read_destination(const RapidCursor& c) {
  static constexpr std::array<std::string_view, 4> keys = {"core_id", "layer_name", "type", "workload_id"};
  Destination d;
  read_object(c, keys, bits(0, 2), [&](size_t k, const RapidCursor& v) {
    switch (k) {
      case 0: d.core_id = v.as_int(); break;
      case 1: d.layer_name = read_name(v); break;
      case 2: d.type = read_endpoint(v); break;
      case 3: d.workload_id = v.as_int(); break;
    }
  });
  return d;
}

DramStore read_dram_store(const RapidCursor& c) {
  static constexpr std::array<std::string_view, 7> keys = {"core_id",     "layer_name",  "lower",      "related_ofmap",
                                                           "transfer_id", "upper",       "workload_id"};
  DramStore s;
  read_object(c, keys, bits(0, 1, 2, 4, 5, 6), [&](size_t k, const RapidCursor& v) {
    switch (k) {
      case 0: s.core_id = v.as_int(); break;
      case 1: s.layer_name = read_name(v); break;
      case 2: s.lower = read_coord(v); break;
      case 3: s.related_ofmap = v.as_int_vector(); break;
      case 4: s.transfer_id = v.as_int(); break;
      case 5: s.upper = read_coord(v); break;
      case 6: s.workload_id = v.as_int(); break;
    }
  });
  return s;
}

DramLoad read_dram_load(const RapidCursor& c) {
  static constexpr std::array<std::string_view, 7> keys = {"destination", "lower",       "related_ifmap", "size",
                                                           "transfer_id", "type",        "upper"};
  DramLoad l;
  read_object(c, keys, bits(0, 1, 2, 3, 4, 5, 6), [&](size_t k, const RapidCursor& v) {
    switch (k) {
      case 0: l.destination = read_list<Destination>(v, read_destination); break;
      case 1: l.lower = read_coord(v); break;
      case 2: l.related_ifmap = v.as_int_vector(); break;
      case 3: l.size = v.as_int(); break;
      case 4: l.transfer_id = v.as_int(); break;
      case 5: {
        std::string_view t = v.as_string_view();
        if (t == "weight") l.type = DramLoadType::Weight;
        else if (t == "fmap") l.type = DramLoadType::Fmap;
        else v.fail("expected \"weight\" or \"fmap\", got \"" + std::string(t) + "\"");
        break;
      }
      case 6: l.upper = read_coord(v); break;
    }
  });
  return l;
}

HostStep read_host_step(const RapidCursor& c) {
  static constexpr std::array<std::string_view, 7> keys = {"layers", "ops",  "related_ifmap", "related_ofmap",
                                                           "size",   "time", "transfer_id"};
  HostStep h;
  read_object(c, keys, bits(0, 1, 2, 3, 4, 5, 6), [&](size_t k, const RapidCursor& v) {
    switch (k) {
      case 0: h.layers = read_list<std::string>(v, read_name); break;
      case 1: h.ops = v.as_int(); break;
      case 2: h.related_ifmap = v.as_int_vector(); break;
      case 3: h.related_ofmap = v.as_int_vector(); break;
      case 4: h.size = v.as_int(); break;
      case 5: h.time = v.as_int(); break;
      case 6: h.transfer_id = v.as_int(); break;
    }
  });
  return h;
}

Dram read_dram(const RapidCursor& c) {
  static constexpr std::array<std::string_view, 3> keys = {"host", "in", "out"};
  Dram d;
  read_object(c, keys, bits(1, 2), [&](size_t k, const RapidCursor& v) {
    if (k == 0) d.host = read_list<HostStep>(v, read_host_step);
    else if (k == 1) d.in = read_list<DramStore>(v, read_dram_store);
    else d.out = read_list<DramLoad>(v, read_dram_load);
  });
  return d;
}

Ifmap read_ifmap(const RapidCursor& c) {
  static constexpr std::array<std::string_view, 6> keys = {"align", "bitwidth", "lower", "size", "transfer_id", "upper"};
  Ifmap f;
  read_object(c, keys, bits(0, 1, 2, 3, 4, 5), [&](size_t k, const RapidCursor& v) {
    switch (k) {
      case 0: f.align = v.as_int(); break;
      case 1: f.bitwidth = v.as_int(); break;
      case 2: f.lower = read_coord(v); break;
      case 3: f.size = v.as_int(); break;
      case 4: f.transfer_id = v.as_int_vector(); break;
      case 5: f.upper = read_coord(v); break;
    }
  });
  return f;
}

Ofmap read_ofmap(const RapidCursor& c) {
  static constexpr std::array<std::string_view, 5> keys = {"destination", "lower", "size", "transfer_id", "upper"};
  Ofmap f;
  read_object(c, keys, bits(0, 1, 2, 3, 4), [&](size_t k, const RapidCursor& v) {
    switch (k) {
      case 0: f.destination = read_list<Destination>(v, read_destination); break;
      case 1: f.lower = read_coord(v); break;
      case 2: f.size = v.as_int(); break;
      case 3: f.transfer_id = v.as_int(); break;
      case 4: f.upper = read_coord(v); break;
    }
  });
  return f;
}

Weight read_weight(const RapidCursor& c) {
  static constexpr std::array<std::string_view, 4> keys = {"lower", "size", "transfer_id", "upper"};
  Weight w;
  read_object(c, keys, bits(0, 1, 2, 3), [&](size_t k, const RapidCursor& v) {
    switch (k) {
      case 0: w.lower = read_coord(v); break;
      case 1: w.size = v.as_int(); break;
      case 2: w.transfer_id = v.as_int_vector(); break;
      case 3: w.upper = read_coord(v); break;
    }
  });
  return w;
}

Source read_source(const RapidCursor& c) {
  static constexpr std::array<std::string_view, 8> keys = {"core_id", "layer_name", "lower", "place", "size",
                                                           "transfer_id", "type", "upper"};
  Source s;
  read_object(c, keys, bits(0, 2, 4, 5, 6, 7), [&](size_t k, const RapidCursor& v) {
    switch (k) {
      case 0: s.core_id = v.as_int(); break;
      case 1: s.layer_name = read_name(v); break;
      case 2: s.lower = read_coord(v); break;
      case 3: s.place = read_coord(v); break;
      case 4: s.size = v.as_int(); break;
      case 5: s.transfer_id = v.as_int(); break;
      case 6: s.type = read_endpoint(v); break;
      case 7: s.upper = read_coord(v); break;
    }
  });
  return s;
}

BufferTensor read_buffer_tensor(const RapidCursor& c) {
  static constexpr std::array<std::string_view, 15> keys = {
      "address", "align", "bitwidth", "cur_wl_ifmap", "layer_name", "lower", "newly_added", "size",
      "source", "start_send", "tensor_id", "tensor_order", "transfer_id", "type", "upper"};
  BufferTensor b;
  read_object(c, keys, bits(0, 1, 2, 5, 7, 10, 11, 13, 14), [&](size_t k, const RapidCursor& v) {
    switch (k) {
      case 0: b.address = v.as_int(); break;
      case 1: b.align = v.as_int(); break;
      case 2: b.bitwidth = v.as_int(); break;
      case 3: b.cur_wl_ifmap = v.as_bool(); break;
      case 4: b.layer_name = read_name(v); break;
      case 5: b.lower = read_coord(v); break;
      case 6: b.newly_added = v.as_bool(); break;
      case 7: b.size = v.as_int(); break;
      case 8: b.source = read_list<Source>(v, read_source); break;
      case 9: b.start_send = v.as_bool(); break;
      case 10: b.tensor_id = v.as_int(); break;
      case 11: b.tensor_order = v.as_int(); break;
      case 12: b.transfer_id = v.as_int_vector(); break;
      case 13: {
        std::string_view t = v.as_string_view();
        if (t == "ifmap") b.type = TensorType::Ifmap;
        else if (t == "ofmap") b.type = TensorType::Ofmap;
        else if (t == "weight") b.type = TensorType::Weight;
        else v.fail("expected \"ifmap\", \"ofmap\" or \"weight\", got \"" + std::string(t) + "\"");
        break;
      }
      case 14: b.upper = read_coord(v); break;
    }
  });
  return b;
}

WeightBufferEntry read_weight_buffer_entry(const RapidCursor& c) {
  static constexpr std::array<std::string_view, 10> keys = {"address", "align", "bitwidth", "layer_name",
                                                            "lower", "size", "source", "tensor_order",
                                                            "transfer_id", "upper"};
  WeightBufferEntry e;
  read_object(c, keys, bits(0, 1, 2, 3, 5, 6, 7, 8), [&](size_t k, const RapidCursor& v) {
    switch (k) {
      case 0: e.address = v.as_int(); break;
      case 1: e.align = v.as_int(); break;
      case 2: e.bitwidth = v.as_int(); break;
      case 3: e.layer_name = read_name(v); break;
      case 4: e.lower = read_coord(v); break;
      case 5: e.size = v.as_int(); break;
      case 6: {
        std::string_view s = v.as_string_view();
        if (s == "DDR") e.source = WeightSource::Ddr;
        else if (s == "CORE") e.source = WeightSource::Core;
        else v.fail("expected \"DDR\" or \"CORE\", got \"" + std::string(s) + "\"");
        break;
      }
      case 7:
        if (!v.is_null()) e.tensor_order = v.as_int();
        break;
      case 8: e.transfer_id = v.as_int_vector(); break;
      case 9: e.upper = read_coord(v); break;
    }
  });
  if (e.lower.has_value() != e.upper.has_value()) c.fail("lower and upper go together");
  return e;
}

WeightBuffer read_weight_buffer(const RapidCursor& c) {
  WeightBuffer b;
  if (c.is_null()) {
    b.when_empty = EmptyForm::Null;
    return b;
  }
  b.entries = read_list<WeightBufferEntry>(c, read_weight_buffer_entry);
  b.when_empty = EmptyForm::EmptyArray;
  return b;
}

// "tile_num_<i>" -> i
std::optional<size_t> tile_number(std::string_view key) {
  constexpr std::string_view prefix = "tile_num_";
  if (key.size() <= prefix.size() || key.substr(0, prefix.size()) != prefix) return std::nullopt;
  std::string_view digits = key.substr(prefix.size());
  if (digits.size() > 1 && digits[0] == '0') return std::nullopt;
  size_t n = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || p != digits.data() + digits.size() || n > 1000000) return std::nullopt;
  return n;
}

Tile read_tile(const RapidCursor& c) {
  static constexpr std::array<std::string_view, 15> keys = {
      "act_mini_tile", "ci_cut_num", "cut_mode",   "ifmap_lower",   "ifmap_lower2",
      "ifmap_upper",   "ifmap_upper2", "layer_name", "loop_order",  "mtc0_mtk0",
      "ofmap_lower",   "ofmap_upper", "out_mini_tile", "single_tile_time_pred", "tile_padding_tblr"};
  Tile t;
  read_object(c, keys, bits(3, 5, 10, 11, 13, 14), [&](size_t k, const RapidCursor& v) {
    switch (k) {
      case 0: t.act_mini_tile = read_coord(v); break;
      case 1: t.ci_cut_num = v.as_int(); break;
      case 2: t.cut_mode = v.as_string(); break;
      case 3: t.ifmap_lower = read_coord(v); break;
      case 4: t.ifmap_lower2 = read_coord(v); break;
      case 5: t.ifmap_upper = read_coord(v); break;
      case 6: t.ifmap_upper2 = read_coord(v); break;
      case 7: t.layer_name = read_name(v); break;
      case 8: t.loop_order = v.as_string(); break;
      case 9: t.mtc0_mtk0 = v.as_int_array<2>(); break;
      case 10: t.ofmap_lower = read_coord(v); break;
      case 11: t.ofmap_upper = read_coord(v); break;
      case 12: t.out_mini_tile = read_coord(v); break;
      case 13: t.single_tile_time_pred = v.as_double(); break;
      case 14: t.tile_padding_tblr = v.as_int_array<4>(); break;
    }
  });
  if (t.ifmap_lower2.has_value() != t.ifmap_upper2.has_value()) c.fail("ifmap_lower2 and ifmap_upper2 go together");
  return t;
}

std::vector<Tile> read_tiles(const RapidCursor& c) {
  c.expect_object();
  size_t n = c.member_count();
  if (n == 0) c.fail("a workload needs at least one tile");
  std::vector<std::optional<Tile>> tiles(n);
  const auto& obj = c.value();
  for (auto m = obj.MemberBegin(); m != obj.MemberEnd(); ++m) {
    std::string_view k(m->name.GetString(), m->name.GetStringLength());
    RapidCursor v = c.member(m);
    auto i = tile_number(k);
    if (!i) v.fail("tile keys are tile_num_<i>, got \"" + std::string(k) + "\"");
    if (*i >= n) v.fail("tiles are numbered 0.." + std::to_string(n - 1) + " without gaps");
    if (tiles[*i]) v.fail("duplicate tile \"" + std::string(k) + "\"");
    tiles[*i] = read_tile(v);
  }
  std::vector<Tile> out;
  out.reserve(n);
  for (auto& t : tiles) out.push_back(std::move(*t));
  return out;
}

Workload read_workload(const RapidCursor& c) {
  static constexpr std::array<std::string_view, 15> keys = {
      "buffer",    "ifmap",             "layer_name", "layer_type", "ofmap",      "ofmap_size",
      "ring_buffer_info", "tile_info",  "tile_padding_tblr", "time", "weight",    "wl0_buffer",
      "wl1_buffer", "workload",         "workload_id"};
  Workload w;
  read_object(c, keys, bits(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 14), [&](size_t k, const RapidCursor& v) {
    switch (k) {
      case 0: w.buffer = read_list<BufferTensor>(v, read_buffer_tensor); break;
      case 1: w.ifmap = read_list<Ifmap>(v, read_ifmap); break;
      case 2: w.layer_name = read_name(v); break;
      case 3: {
        std::string_view t = v.as_string_view();
        if (t == "pe") w.layer_type = LayerType::Pe;
        else if (t == "vp") w.layer_type = LayerType::Vp;
        else v.fail("expected \"pe\" or \"vp\", got \"" + std::string(t) + "\"");
        break;
      }
      case 4: w.ofmap = read_list<Ofmap>(v, read_ofmap); break;
      case 5: w.ofmap_size = v.as_int(); break;
      case 6:
        w.ring_buffer_info = read_list<std::array<int64_t, 2>>(v, [](const RapidCursor& e) { return e.as_int_array<2>(); });
        break;
      case 7: w.tile_info = read_tiles(v); break;
      case 8: w.tile_padding_tblr = v.as_int_array<4>(); break;
      case 9: w.time = v.as_int(); break;
      case 10: w.weight = read_weight(v); break;
      case 11: w.wl0_buffer = read_weight_buffer(v); break;
      case 12: w.wl1_buffer = read_weight_buffer(v); break;
      case 13: {
        v.expect_array();
        if (v.array_size() != 2) v.fail("expected [lower, upper]");
        RapidCursor lo = v.at(size_t{0}), hi = v.at(size_t{1});
        w.lower = read_coord(lo);
        w.upper = read_coord(hi);
        break;
      }
      case 14: w.workload_id = v.as_int(); break;
    }
  });
  return w;
}

// A core key: "0", "1", ... (canonical decimal, no sign or leading zeros).
std::optional<int64_t> core_number(std::string_view key) {
  if (key.empty() || key.size() > 9 || (key.size() > 1 && key[0] == '0')) return std::nullopt;
  int64_t n = 0;
  for (char ch : key) {
    if (ch < '0' || ch > '9') return std::nullopt;
    n = n * 10 + (ch - '0');
  }
  return n;
}

// ---- writing -------------------------------------------------------------------

Json coord_json(const Coord& c) { return Json(Json::Array{Json(c[0]), Json(c[1]), Json(c[2]), Json(c[3])}); }

Json ints_json(const std::vector<int64_t>& v) {
  Json::Array a;
  a.reserve(v.size());
  for (int64_t x : v) a.emplace_back(x);
  return Json(std::move(a));
}

Json destination_json(const Destination& d) {
  Json::Object o;
  o.reserve(4);
  o.emplace_back("core_id", d.core_id);
  if (d.layer_name) o.emplace_back("layer_name", *d.layer_name);
  o.emplace_back("type", endpoint_name(d.type));
  if (d.workload_id) o.emplace_back("workload_id", *d.workload_id);
  return Json(std::move(o));
}

Json destinations_json(const std::vector<Destination>& ds) {
  Json::Array a;
  a.reserve(ds.size());
  for (const auto& d : ds) a.push_back(destination_json(d));
  return Json(std::move(a));
}

Json dram_json(const Dram& d) {
  Json::Array in, out;
  in.reserve(d.in.size());
  for (const auto& s : d.in) {
    Json::Object o;
    o.reserve(7);
    o.emplace_back("core_id", s.core_id);
    o.emplace_back("layer_name", s.layer_name);
    o.emplace_back("lower", coord_json(s.lower));
    if (s.related_ofmap) o.emplace_back("related_ofmap", ints_json(*s.related_ofmap));
    o.emplace_back("transfer_id", s.transfer_id);
    o.emplace_back("upper", coord_json(s.upper));
    o.emplace_back("workload_id", s.workload_id);
    in.emplace_back(std::move(o));
  }
  out.reserve(d.out.size());
  for (const auto& l : d.out) {
    Json::Object o;
    o.reserve(7);
    o.emplace_back("destination", destinations_json(l.destination));
    o.emplace_back("lower", coord_json(l.lower));
    o.emplace_back("related_ifmap", ints_json(l.related_ifmap));
    o.emplace_back("size", l.size);
    o.emplace_back("transfer_id", l.transfer_id);
    o.emplace_back("type", dram_load_type_name(l.type));
    o.emplace_back("upper", coord_json(l.upper));
    out.emplace_back(std::move(o));
  }
  Json::Object o;
  if (d.host) {
    Json::Array host;
    for (const auto& h : *d.host) {
      Json::Object x;
      Json::Array names;
      for (const auto& n : h.layers) names.emplace_back(n);
      x.emplace_back("layers", Json(std::move(names)));
      x.emplace_back("ops", h.ops);
      x.emplace_back("related_ifmap", ints_json(h.related_ifmap));
      x.emplace_back("related_ofmap", ints_json(h.related_ofmap));
      x.emplace_back("size", h.size);
      x.emplace_back("time", h.time);
      x.emplace_back("transfer_id", h.transfer_id);
      host.emplace_back(std::move(x));
    }
    o.emplace_back("host", Json(std::move(host)));
  }
  o.emplace_back("in", Json(std::move(in)));
  o.emplace_back("out", Json(std::move(out)));
  return Json(std::move(o));
}

Json source_json(const Source& s) {
  Json::Object o;
  o.reserve(8);
  o.emplace_back("core_id", s.core_id);
  if (s.layer_name) o.emplace_back("layer_name", *s.layer_name);
  o.emplace_back("lower", coord_json(s.lower));
  if (s.place) o.emplace_back("place", coord_json(*s.place));
  o.emplace_back("size", s.size);
  o.emplace_back("transfer_id", s.transfer_id);
  o.emplace_back("type", endpoint_name(s.type));
  o.emplace_back("upper", coord_json(s.upper));
  return Json(std::move(o));
}

Json buffer_tensor_json(const BufferTensor& b) {
  Json::Object o;
  o.reserve(15);
  o.emplace_back("address", b.address);
  o.emplace_back("align", b.align);
  o.emplace_back("bitwidth", b.bitwidth);
  if (b.cur_wl_ifmap) o.emplace_back("cur_wl_ifmap", *b.cur_wl_ifmap);
  if (b.layer_name) o.emplace_back("layer_name", *b.layer_name);
  o.emplace_back("lower", coord_json(b.lower));
  if (b.newly_added) o.emplace_back("newly_added", *b.newly_added);
  o.emplace_back("size", b.size);
  if (b.source) {
    Json::Array a;
    a.reserve(b.source->size());
    for (const auto& s : *b.source) a.push_back(source_json(s));
    o.emplace_back("source", Json(std::move(a)));
  }
  if (b.start_send) o.emplace_back("start_send", *b.start_send);
  o.emplace_back("tensor_id", b.tensor_id);
  o.emplace_back("tensor_order", b.tensor_order);
  if (b.transfer_id) o.emplace_back("transfer_id", ints_json(*b.transfer_id));
  o.emplace_back("type", tensor_type_name(b.type));
  o.emplace_back("upper", coord_json(b.upper));
  return Json(std::move(o));
}

Json weight_buffer_json(const WeightBuffer& b) {
  if (b.entries.empty() && b.when_empty == EmptyForm::Null) return Json();
  Json::Array a;
  a.reserve(b.entries.size());
  for (const auto& e : b.entries) {
    Json::Object o;
    o.reserve(10);
    o.emplace_back("address", e.address);
    o.emplace_back("align", e.align);
    o.emplace_back("bitwidth", e.bitwidth);
    o.emplace_back("layer_name", e.layer_name);
    if (e.lower) o.emplace_back("lower", coord_json(*e.lower));
    o.emplace_back("size", e.size);
    o.emplace_back("source", weight_source_name(e.source));
    o.emplace_back("tensor_order", e.tensor_order ? Json(*e.tensor_order) : Json());
    o.emplace_back("transfer_id", ints_json(e.transfer_id));
    if (e.upper) o.emplace_back("upper", coord_json(*e.upper));
    a.emplace_back(std::move(o));
  }
  return Json(std::move(a));
}

Json tile_json(const Tile& t) {
  Json::Object o;
  o.reserve(15);
  if (t.act_mini_tile) o.emplace_back("act_mini_tile", coord_json(*t.act_mini_tile));
  if (t.ci_cut_num) o.emplace_back("ci_cut_num", *t.ci_cut_num);
  if (t.cut_mode) o.emplace_back("cut_mode", *t.cut_mode);
  o.emplace_back("ifmap_lower", coord_json(t.ifmap_lower));
  if (t.ifmap_lower2) o.emplace_back("ifmap_lower2", coord_json(*t.ifmap_lower2));
  o.emplace_back("ifmap_upper", coord_json(t.ifmap_upper));
  if (t.ifmap_upper2) o.emplace_back("ifmap_upper2", coord_json(*t.ifmap_upper2));
  if (t.layer_name) o.emplace_back("layer_name", *t.layer_name);
  if (t.loop_order) o.emplace_back("loop_order", *t.loop_order);
  if (t.mtc0_mtk0) o.emplace_back("mtc0_mtk0", Json(Json::Array{Json((*t.mtc0_mtk0)[0]), Json((*t.mtc0_mtk0)[1])}));
  o.emplace_back("ofmap_lower", coord_json(t.ofmap_lower));
  o.emplace_back("ofmap_upper", coord_json(t.ofmap_upper));
  if (t.out_mini_tile) o.emplace_back("out_mini_tile", coord_json(*t.out_mini_tile));
  o.emplace_back("single_tile_time_pred", t.single_tile_time_pred);
  o.emplace_back("tile_padding_tblr", coord_json(t.tile_padding_tblr));
  return Json(std::move(o));
}

Json workload_json(const Workload& w) {
  Json::Object o;
  o.reserve(16);
  {
    Json::Array a;
    a.reserve(w.buffer.size());
    for (const auto& b : w.buffer) a.push_back(buffer_tensor_json(b));
    o.emplace_back("buffer", Json(std::move(a)));
  }
  {
    Json::Array a;
    a.reserve(w.ifmap.size());
    for (const auto& f : w.ifmap) {
      Json::Object x;
      x.reserve(6);
      x.emplace_back("align", f.align);
      x.emplace_back("bitwidth", f.bitwidth);
      x.emplace_back("lower", coord_json(f.lower));
      x.emplace_back("size", f.size);
      x.emplace_back("transfer_id", ints_json(f.transfer_id));
      x.emplace_back("upper", coord_json(f.upper));
      a.emplace_back(std::move(x));
    }
    o.emplace_back("ifmap", Json(std::move(a)));
  }
  o.emplace_back("layer_name", w.layer_name);
  o.emplace_back("layer_type", layer_type_name(w.layer_type));
  {
    Json::Array a;
    a.reserve(w.ofmap.size());
    for (const auto& f : w.ofmap) {
      Json::Object x;
      x.reserve(5);
      x.emplace_back("destination", destinations_json(f.destination));
      x.emplace_back("lower", coord_json(f.lower));
      x.emplace_back("size", f.size);
      x.emplace_back("transfer_id", f.transfer_id);
      x.emplace_back("upper", coord_json(f.upper));
      a.emplace_back(std::move(x));
    }
    o.emplace_back("ofmap", Json(std::move(a)));
  }
  o.emplace_back("ofmap_size", w.ofmap_size);
  {
    Json::Array a;
    a.reserve(w.ring_buffer_info.size());
    for (const auto& r : w.ring_buffer_info) a.emplace_back(Json::Array{Json(r[0]), Json(r[1])});
    o.emplace_back("ring_buffer_info", Json(std::move(a)));
  }
  {
    Json::Object tiles;
    tiles.reserve(w.tile_info.size());
    for (size_t i = 0; i < w.tile_info.size(); ++i)
      tiles.emplace_back("tile_num_" + std::to_string(i), tile_json(w.tile_info[i]));
    o.emplace_back("tile_info", Json(std::move(tiles)));
  }
  o.emplace_back("tile_padding_tblr", coord_json(w.tile_padding_tblr));
  o.emplace_back("time", w.time);
  if (w.weight) {
    Json::Object x;
    x.reserve(4);
    x.emplace_back("lower", coord_json(w.weight->lower));
    x.emplace_back("size", w.weight->size);
    x.emplace_back("transfer_id", ints_json(w.weight->transfer_id));
    x.emplace_back("upper", coord_json(w.weight->upper));
    o.emplace_back("weight", Json(std::move(x)));
  }
  if (w.wl0_buffer.present()) o.emplace_back("wl0_buffer", weight_buffer_json(w.wl0_buffer));
  if (w.wl1_buffer.present()) o.emplace_back("wl1_buffer", weight_buffer_json(w.wl1_buffer));
  o.emplace_back("workload", Json(Json::Array{coord_json(w.lower), coord_json(w.upper)}));
  o.emplace_back("workload_id", w.workload_id);
  return Json(std::move(o));
}

}  // namespace

// ---- fast writing: the same text as format_json(to_json(s)), via support/json_emit ----
//
// The member lists below mirror the *_json functions above key for key;
// tests/sir compares both writers byte for byte on every reference file.

using emit::Kind;

constexpr Kind json_kind(const Destination&) { return Kind::Object; }
template <class F>
void for_each_member(const Destination& d, F&& f) {
  f("core_id", d.core_id);
  if (d.layer_name) f("layer_name", *d.layer_name);
  f("type", endpoint_name(d.type));
  if (d.workload_id) f("workload_id", *d.workload_id);
}

constexpr Kind json_kind(const DramStore&) { return Kind::Object; }
template <class F>
void for_each_member(const DramStore& s, F&& f) {
  f("core_id", s.core_id);
  f("layer_name", s.layer_name);
  f("lower", s.lower);
  if (s.related_ofmap) f("related_ofmap", *s.related_ofmap);
  f("transfer_id", s.transfer_id);
  f("upper", s.upper);
  f("workload_id", s.workload_id);
}

constexpr Kind json_kind(const DramLoad&) { return Kind::Object; }
constexpr bool json_always_expanded(const DramLoad&) { return true; }
template <class F>
void for_each_member(const DramLoad& l, F&& f) {
  f("destination", l.destination);
  f("lower", l.lower);
  f("related_ifmap", l.related_ifmap);
  f("size", l.size);
  f("transfer_id", l.transfer_id);
  f("type", dram_load_type_name(l.type));
  f("upper", l.upper);
}

constexpr Kind json_kind(const HostStep&) { return Kind::Object; }
constexpr bool json_always_expanded(const HostStep&) { return true; }
template <class F>
void for_each_member(const HostStep& h, F&& f) {
  f("layers", h.layers);
  f("ops", h.ops);
  f("related_ifmap", h.related_ifmap);
  f("related_ofmap", h.related_ofmap);
  f("size", h.size);
  f("time", h.time);
  f("transfer_id", h.transfer_id);
}

constexpr Kind json_kind(const Dram&) { return Kind::Object; }
constexpr bool json_always_expanded(const Dram&) { return true; }
template <class F>
void for_each_member(const Dram& d, F&& f) {
  if (d.host) f("host", *d.host);
  f("in", d.in);
  f("out", d.out);
}

constexpr Kind json_kind(const Ifmap&) { return Kind::Object; }
template <class F>
void for_each_member(const Ifmap& x, F&& f) {
  f("align", x.align);
  f("bitwidth", x.bitwidth);
  f("lower", x.lower);
  f("size", x.size);
  f("transfer_id", x.transfer_id);
  f("upper", x.upper);
}

constexpr Kind json_kind(const Ofmap&) { return Kind::Object; }
constexpr bool json_always_expanded(const Ofmap&) { return true; }
template <class F>
void for_each_member(const Ofmap& x, F&& f) {
  f("destination", x.destination);
  f("lower", x.lower);
  f("size", x.size);
  f("transfer_id", x.transfer_id);
  f("upper", x.upper);
}

constexpr Kind json_kind(const Weight&) { return Kind::Object; }
template <class F>
void for_each_member(const Weight& x, F&& f) {
  f("lower", x.lower);
  f("size", x.size);
  f("transfer_id", x.transfer_id);
  f("upper", x.upper);
}

constexpr Kind json_kind(const Source&) { return Kind::Object; }
template <class F>
void for_each_member(const Source& s, F&& f) {
  f("core_id", s.core_id);
  if (s.layer_name) f("layer_name", *s.layer_name);
  f("lower", s.lower);
  if (s.place) f("place", *s.place);
  f("size", s.size);
  f("transfer_id", s.transfer_id);
  f("type", endpoint_name(s.type));
  f("upper", s.upper);
}

constexpr Kind json_kind(const BufferTensor&) { return Kind::Object; }
constexpr bool json_always_expanded(const BufferTensor&) { return true; }
template <class F>
void for_each_member(const BufferTensor& b, F&& f) {
  f("address", b.address);
  f("align", b.align);
  f("bitwidth", b.bitwidth);
  if (b.cur_wl_ifmap) f("cur_wl_ifmap", *b.cur_wl_ifmap);
  if (b.layer_name) f("layer_name", *b.layer_name);
  f("lower", b.lower);
  if (b.newly_added) f("newly_added", *b.newly_added);
  f("size", b.size);
  if (b.source) f("source", *b.source);
  if (b.start_send) f("start_send", *b.start_send);
  f("tensor_id", b.tensor_id);
  f("tensor_order", b.tensor_order);
  if (b.transfer_id) f("transfer_id", *b.transfer_id);
  f("type", tensor_type_name(b.type));
  f("upper", b.upper);
}

constexpr Kind json_kind(const WeightBufferEntry&) { return Kind::Object; }
constexpr bool json_always_expanded(const WeightBufferEntry&) { return true; }
template <class F>
void for_each_member(const WeightBufferEntry& e, F&& f) {
  f("address", e.address);
  f("align", e.align);
  f("bitwidth", e.bitwidth);
  f("layer_name", e.layer_name);
  if (e.lower) f("lower", *e.lower);
  f("size", e.size);
  f("source", weight_source_name(e.source));
  f("tensor_order", e.tensor_order);  // nullopt is written as null
  f("transfer_id", e.transfer_id);
  if (e.upper) f("upper", *e.upper);
}

inline Kind json_kind(const WeightBuffer& b) {
  return b.entries.empty() && b.when_empty == EmptyForm::Null ? Kind::Scalar : Kind::Array;
}
inline void emit_scalar(std::string& out, const WeightBuffer&) { out += "null"; }
template <class F>
void for_each_element(const WeightBuffer& b, F&& f) {
  for (const auto& e : b.entries) f(e);
}

constexpr Kind json_kind(const Tile&) { return Kind::Object; }
template <class F>
void for_each_member(const Tile& t, F&& f) {
  if (t.act_mini_tile) f("act_mini_tile", *t.act_mini_tile);
  if (t.ci_cut_num) f("ci_cut_num", *t.ci_cut_num);
  if (t.cut_mode) f("cut_mode", *t.cut_mode);
  f("ifmap_lower", t.ifmap_lower);
  if (t.ifmap_lower2) f("ifmap_lower2", *t.ifmap_lower2);
  f("ifmap_upper", t.ifmap_upper);
  if (t.ifmap_upper2) f("ifmap_upper2", *t.ifmap_upper2);
  if (t.layer_name) f("layer_name", *t.layer_name);
  if (t.loop_order) f("loop_order", *t.loop_order);
  if (t.mtc0_mtk0) f("mtc0_mtk0", *t.mtc0_mtk0);
  f("ofmap_lower", t.ofmap_lower);
  f("ofmap_upper", t.ofmap_upper);
  if (t.out_mini_tile) f("out_mini_tile", *t.out_mini_tile);
  f("single_tile_time_pred", t.single_tile_time_pred);
  f("tile_padding_tblr", t.tile_padding_tblr);
}

// tile_info: an object keyed tile_num_<i>.
struct TileInfoView {
  const std::vector<Tile>* tiles;
};
constexpr Kind json_kind(const TileInfoView&) { return Kind::Object; }
constexpr bool json_always_expanded(const TileInfoView&) { return true; }
template <class F>
void for_each_member(const TileInfoView& v, F&& f) {
  std::string key;
  for (size_t i = 0; i < v.tiles->size(); ++i) {
    key = "tile_num_";
    key += std::to_string(i);
    f(std::string_view(key), (*v.tiles)[i]);
  }
}

constexpr Kind json_kind(const Workload&) { return Kind::Object; }
constexpr bool json_always_expanded(const Workload&) { return true; }
template <class F>
void for_each_member(const Workload& w, F&& f) {
  f("buffer", w.buffer);
  f("ifmap", w.ifmap);
  f("layer_name", w.layer_name);
  f("layer_type", layer_type_name(w.layer_type));
  f("ofmap", w.ofmap);
  f("ofmap_size", w.ofmap_size);
  f("ring_buffer_info", w.ring_buffer_info);
  f("tile_info", TileInfoView{&w.tile_info});
  f("tile_padding_tblr", w.tile_padding_tblr);
  f("time", w.time);
  if (w.weight) f("weight", *w.weight);
  if (w.wl0_buffer.present()) f("wl0_buffer", w.wl0_buffer);
  if (w.wl1_buffer.present()) f("wl1_buffer", w.wl1_buffer);
  f("workload", std::array<Coord, 2>{w.lower, w.upper});
  f("workload_id", w.workload_id);
}

constexpr Kind json_kind(const Schedule&) { return Kind::Object; }
constexpr bool json_always_expanded(const Schedule&) { return true; }
template <class F>
void for_each_member(const Schedule& s, F&& f) {
  f("-1", s.dram);
  std::vector<const Core*> cores;
  for (const auto& c : s.cores) cores.push_back(&c);
  std::sort(cores.begin(), cores.end(), [](const Core* a, const Core* b) { return a->id < b->id; });
  std::string key;
  for (const Core* c : cores) {
    key = std::to_string(c->id);
    f(std::string_view(key), c->workloads);
  }
  f("buffersize", s.buffersize);
  f("top_batch_cut", s.top_batch_cut);
  f("xlen", s.xlen);
  f("ylen", s.ylen);
}

Schedule parse_sir(std::string_view text, const std::string& file, const ReadOptions& opts) {
  rapidjson::Document doc;
  if (opts.validate_schema) parse_validated_rapidjson(doc, text, file, "sir");
  else parse_rapidjson(doc, text, file);
  RapidCursor root(doc, file);
  root.expect_object();
  Schedule s;
  bool have_dram = false, have_size = false, have_cut = false, have_x = false, have_y = false;
  for (auto m = doc.MemberBegin(); m != doc.MemberEnd(); ++m) {
    std::string_view k(m->name.GetString(), m->name.GetStringLength());
    RapidCursor v = root.member(m);
    auto once = [&](bool& have) {
      if (have) v.fail("duplicate key \"" + std::string(k) + "\"");
      have = true;
    };
    if (k == "-1") {
      once(have_dram);
      s.dram = read_dram(v);
    } else if (k == "buffersize") {
      once(have_size);
      s.buffersize = v.as_int();
    } else if (k == "top_batch_cut") {
      once(have_cut);
      s.top_batch_cut = v.as_int();
    } else if (k == "xlen") {
      once(have_x);
      s.xlen = v.as_int();
    } else if (k == "ylen") {
      once(have_y);
      s.ylen = v.as_int();
    } else if (auto id = core_number(k)) {
      for (const auto& c : s.cores)
        if (c.id == *id) v.fail("duplicate core \"" + std::string(k) + "\"");
      Core c;
      c.id = *id;
      c.workloads = read_list<Workload>(v, read_workload);
      s.cores.push_back(std::move(c));
    } else {
      v.fail("unknown key \"" + std::string(k) + "\" (expected \"-1\", a core id, buffersize, top_batch_cut, xlen or ylen)");
    }
  }
  if (!have_dram) root.fail("missing key \"-1\" (the DRAM transfers)");
  if (!have_size) root.fail("missing key \"buffersize\"");
  if (!have_cut) root.fail("missing key \"top_batch_cut\"");
  if (!have_x) root.fail("missing key \"xlen\"");
  if (!have_y) root.fail("missing key \"ylen\"");
  std::sort(s.cores.begin(), s.cores.end(), [](const Core& a, const Core& b) { return a.id < b.id; });
  if (opts.validate_structure) validate(s, file);
  return s;
}

Schedule read_sir(const std::string& path, const ReadOptions& opts) {
  return parse_sir(read_input(path), display_name(path), opts);
}

Json to_json(const Schedule& s) {
  Json::Object o;
  o.reserve(s.cores.size() + 5);
  o.emplace_back("-1", dram_json(s.dram));
  std::vector<const Core*> cores;
  for (const auto& c : s.cores) cores.push_back(&c);
  std::sort(cores.begin(), cores.end(), [](const Core* a, const Core* b) { return a->id < b->id; });
  for (const Core* c : cores) {
    Json::Array a;
    a.reserve(c->workloads.size());
    for (const auto& w : c->workloads) a.push_back(workload_json(w));
    o.emplace_back(std::to_string(c->id), Json(std::move(a)));
  }
  o.emplace_back("buffersize", s.buffersize);
  o.emplace_back("top_batch_cut", s.top_batch_cut);
  o.emplace_back("xlen", s.xlen);
  o.emplace_back("ylen", s.ylen);
  return Json(std::move(o));
}

std::string format_sir(const Schedule& s, bool validate) {
  std::string text = emit::format(s);
  if (validate) validate_output_text_streaming(text, "sir", "SIR output");
  return text;
}

void write_sir(const std::string& path, const Schedule& s, bool validate) {
  write_output(path, format_sir(s, validate));
}

}  // namespace cct::sir
