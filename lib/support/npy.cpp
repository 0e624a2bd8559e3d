#include "support/npy.hpp"

#include <cmath>
#include <cstring>

#include "support/error.hpp"
#include "support/io.hpp"

namespace cct {
namespace {

struct TypeInfo {
  NpyType type;
  const char* descr;
  size_t size;
};
constexpr TypeInfo kTypes[] = {
    {NpyType::F32, "<f4", 4}, {NpyType::F64, "<f8", 8}, {NpyType::F16, "<f2", 2}, {NpyType::I8, "|i1", 1},
    {NpyType::U8, "|u1", 1},  {NpyType::I16, "<i2", 2}, {NpyType::I32, "<i4", 4}, {NpyType::I64, "<i8", 8},
    {NpyType::Bool, "|b1", 1},
};

const TypeInfo& info(NpyType t) {
  for (const auto& i : kTypes)
    if (i.type == t) return i;
  return kTypes[0];
}

template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class Out>
std::vector<Out> convert(const NpyArray& a) {
  size_t n = a.count();
  std::vector<Out> out(n);
  const uint8_t* p = a.bytes.data();
  for (size_t i = 0; i < n; ++i) {
    switch (a.type) {
      case NpyType::F32: out[i] = static_cast<Out>(load<float>(p + 4 * i)); break;
      case NpyType::F64: out[i] = static_cast<Out>(load<double>(p + 8 * i)); break;
      case NpyType::F16: out[i] = static_cast<Out>(half_to_float(load<uint16_t>(p + 2 * i))); break;
      case NpyType::I8: out[i] = static_cast<Out>(load<int8_t>(p + i)); break;
      case NpyType::U8: out[i] = static_cast<Out>(load<uint8_t>(p + i)); break;
      case NpyType::Bool: out[i] = static_cast<Out>(load<uint8_t>(p + i) != 0); break;
      case NpyType::I16: out[i] = static_cast<Out>(load<int16_t>(p + 2 * i)); break;
      case NpyType::I32: out[i] = static_cast<Out>(load<int32_t>(p + 4 * i)); break;
      case NpyType::I64: out[i] = static_cast<Out>(load<int64_t>(p + 8 * i)); break;
    }
  }
  return out;
}

// Value of 'key' in the header dict, as raw text up to the matching delimiter.
std::string header_field(const std::string& h, const std::string& key, const std::string& where) {
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) throw_input_error(where + ": .npy header has no '" + key + "'");
  size_t c = h.find(':', k);
  if (c == std::string::npos) throw_input_error(where + ": malformed .npy header");
  size_t s = h.find_first_not_of(' ', c + 1);
  if (s == std::string::npos) throw_input_error(where + ": malformed .npy header");
  if (h[s] == '(') {
    size_t e = h.find(')', s);
    if (e == std::string::npos) throw_input_error(where + ": malformed .npy shape");
    return h.substr(s, e - s + 1);
  }
  size_t e = h.find_first_of(",}", s);
  return h.substr(s, e == std::string::npos ? std::string::npos : e - s);
}

}  // namespace

size_t NpyArray::item_size() const { return info(type).size; }

size_t NpyArray::count() const {
  size_t n = 1;
  for (auto d : shape) n *= static_cast<size_t>(d);
  return n;
}

std::vector<float> NpyArray::to_float() const { return convert<float>(*this); }
std::vector<double> NpyArray::to_double() const { return convert<double>(*this); }
std::vector<int64_t> NpyArray::to_int() const { return convert<int64_t>(*this); }

NpyArray NpyArray::from_float(const std::vector<float>& v, std::vector<int64_t> shape) {
  NpyArray a;
  a.type = NpyType::F32;
  a.shape = std::move(shape);
  a.bytes.resize(v.size() * 4);
  if (!v.empty()) std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

NpyArray NpyArray::from_int8(const std::vector<int8_t>& v, std::vector<int64_t> shape) {
  NpyArray a;
  a.type = NpyType::I8;
  a.shape = std::move(shape);
  a.bytes.assign(reinterpret_cast<const uint8_t*>(v.data()), reinterpret_cast<const uint8_t*>(v.data()) + v.size());
  return a;
}

NpyArray NpyArray::from_int32(const std::vector<int32_t>& v, std::vector<int64_t> shape) {
  NpyArray a;
  a.type = NpyType::I32;
  a.shape = std::move(shape);
  a.bytes.resize(v.size() * 4);
  if (!v.empty()) std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

NpyArray parse_npy(const std::string& d, const std::string& where) {
  if (d.size() < 10 || std::memcmp(d.data(), "\x93NUMPY", 6) != 0) throw_input_error(where + ": not a .npy file");
  int major = static_cast<unsigned char>(d[6]);
  size_t hlen, hstart;
  if (major == 1) {
    hlen = static_cast<unsigned char>(d[8]) | (static_cast<size_t>(static_cast<unsigned char>(d[9])) << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (d.size() < 12) throw_input_error(where + ": truncated .npy header");
    hlen = 0;
    for (int i = 0; i < 4; ++i) hlen |= static_cast<size_t>(static_cast<unsigned char>(d[8 + i])) << (8 * i);
    hstart = 12;
  } else {
    throw_input_error(where + ": unsupported .npy version " + std::to_string(major));
  }
  if (hstart + hlen > d.size()) throw_input_error(where + ": truncated .npy header");
  std::string h = d.substr(hstart, hlen);
  NpyArray a;
  std::string descr = header_field(h, "descr", where);
  if (descr.size() >= 2 && (descr.front() == '\'' || descr.front() == '"')) descr = descr.substr(1, descr.size() - 2);
  if (descr == "=f4" ) descr = "<f4";
  bool found = false;
  for (const auto& t : kTypes) {
    std::string alt = t.descr;
    if (t.size == 1) alt = std::string("<") + (t.descr + 1);  // "<i1" is also seen
    if (descr == t.descr || descr == alt) {
      a.type = t.type;
      found = true;
    }
  }
  if (!found) throw_input_error(where + ": unsupported .npy dtype '" + descr + "'");
  if (header_field(h, "fortran_order", where).find("True") != std::string::npos)
    throw_input_error(where + ": Fortran-order .npy arrays are not supported");
  std::string shape = header_field(h, "shape", where);
  size_t pos = 1;
  while (pos < shape.size()) {
    size_t e = shape.find_first_of(",)", pos);
    std::string tok = shape.substr(pos, e - pos);
    size_t b = tok.find_first_not_of(' ');
    if (b != std::string::npos) {
      try {
        long long v = std::stoll(tok.substr(b));
        if (v < 0) throw std::out_of_range("negative");
        a.shape.push_back(v);
      } catch (const std::exception&) {
        throw_input_error(where + ": bad .npy shape " + shape);
      }
    }
    if (e == std::string::npos || shape[e] == ')') break;
    pos = e + 1;
  }
  size_t need = a.count() * a.item_size();
  size_t have = d.size() - hstart - hlen;
  if (have < need)
    throw_input_error(where + ": truncated .npy data (" + std::to_string(have) + " of " + std::to_string(need) + " bytes)");
  a.bytes.assign(d.begin() + static_cast<long>(hstart + hlen), d.begin() + static_cast<long>(hstart + hlen + need));
  return a;
}

std::string serialize_npy(const NpyArray& a) {
  std::string shape = "(";
  for (size_t i = 0; i < a.shape.size(); ++i) {
    shape += std::to_string(a.shape[i]);
    if (a.shape.size() == 1 || i + 1 < a.shape.size()) shape += ",";
    if (i + 1 < a.shape.size()) shape += " ";
  }
  shape += ")";
  std::string h = std::string("{'descr': '") + info(a.type).descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so the data starts on a 64-byte boundary, ending the header with '\n'.
  size_t total = 10 + h.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  h.append(pad, ' ');
  h += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>((h.size() >> 8) & 0xff);
  out += h;
  out.append(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size());
  return out;
}

NpyArray read_npy(const std::string& path) { return parse_npy(read_input(path), display_name(path)); }
void write_npy(const std::string& path, const NpyArray& a) { write_output(path, serialize_npy(a)); }

float half_to_float(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0) v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31) v = mant ? NAN : INFINITY;
  else v = std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mant ? 0x200 : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;  // round to nearest even
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;
  return static_cast<uint16_t>(half);
}

}  // namespace cct
