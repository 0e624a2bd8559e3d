// Diff-friendly JSON writing (see JsonStyle in json.hpp).
#include <cmath>

#include "support/error.hpp"
#include "support/json.hpp"
#include "support/pyfloat.hpp"

namespace cct {
namespace {

bool is_scalar(const Json& v) { return !v.is_array() && !v.is_object(); }

void append_int(std::string& out, int64_t i) {
  char buf[24];
  char* p = buf + sizeof buf;
  uint64_t u = i < 0 ? 0 - static_cast<uint64_t>(i) : static_cast<uint64_t>(i);
  do {
    *--p = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u);
  if (i < 0) *--p = '-';
  out.append(p, static_cast<size_t>(buf + sizeof buf - p));
}

void append_scalar(std::string& out, const Json& v) {
  switch (v.type()) {
    case Json::Type::Null: out += "null"; break;
    case Json::Type::Bool: out += v.as_bool() ? "true" : "false"; break;
    case Json::Type::Int: append_int(out, v.as_int()); break;
    case Json::Type::Double: {
      double d = v.as_double();
      if (!std::isfinite(d)) throw Error(kExitInternal, "cannot write a non-finite number as JSON");
      append_python_float(out, d);
      break;
    }
    case Json::Type::String: append_json_string(out, v.as_string()); break;
    default: break;
  }
}

// Whether a container may be written on one line at all (size permitting).
bool inlinable(const Json& v, const JsonStyle& st) {
  if (is_scalar(v)) return true;
  if (v.is_array()) {
    for (const auto& x : v.as_array())
      if (!inlinable(x, st)) return false;
    return true;
  }
  if (static_cast<int>(v.size()) > st.max_inline_keys) return false;
  for (const auto& m : v.as_object()) {
    if (m.second.is_object()) return false;
    if (m.second.is_array())
      for (const auto& x : m.second.as_array())
        if (!is_scalar(x)) return false;
  }
  return true;
}

// One line: `item_sep` between elements and members (", " or ","), `key_sep`
// after keys (": " or ":").
void append_one_line(std::string& out, const Json& v, const char* item_sep, const char* key_sep) {
  if (is_scalar(v)) {
    append_scalar(out, v);
  } else if (v.is_array()) {
    out += '[';
    bool first = true;
    for (const auto& x : v.as_array()) {
      if (!first) out += item_sep;
      first = false;
      append_one_line(out, x, item_sep, key_sep);
    }
    out += ']';
  } else {
    out += '{';
    bool first = true;
    for (const auto& m : v.as_object()) {
      if (!first) out += item_sep;
      first = false;
      append_json_string(out, m.first);
      out += key_sep;
      append_one_line(out, m.second, item_sep, key_sep);
    }
    out += '}';
  }
}

void append_inline(std::string& out, const Json& v) { append_one_line(out, v, ", ", ": "); }

void newline(std::string& out, int spaces) {
  out += '\n';
  out.append(static_cast<size_t>(spaces), ' ');
}

void append_value(std::string& out, const Json& v, const JsonStyle& st, int level, size_t col) {
  if (is_scalar(v) || v.size() == 0) {
    if (v.is_array()) out += "[]";
    else if (v.is_object()) out += "{}";
    else append_scalar(out, v);
    return;
  }
  // A document's top-level object is always expanded: one key per line reads best.
  if (inlinable(v, st) && !(level == 0 && col == 0 && v.is_object())) {
    size_t start = out.size();
    append_inline(out, v);
    if (col + (out.size() - start) <= static_cast<size_t>(st.width)) return;
    out.resize(start);
  }
  const int inner = (level + 1) * st.indent;
  if (v.is_array()) {
    const auto& a = v.as_array();
    bool all_scalar = true;
    for (const auto& x : a) all_scalar = all_scalar && is_scalar(x);
    out += '[';
    if (all_scalar) {
      // Long scalar lists are packed, several values per line.
      std::string line, item;
      for (size_t i = 0; i < a.size(); ++i) {
        item.clear();
        append_scalar(item, a[i]);
        if (i + 1 < a.size()) item += ',';
        if (!line.empty() && static_cast<size_t>(inner) + line.size() + 1 + item.size() > static_cast<size_t>(st.width)) {
          newline(out, inner);
          out += line;
          line.clear();
        }
        if (!line.empty()) line += ' ';
        line += item;
      }
      newline(out, inner);
      out += line;
    } else {
      for (size_t i = 0; i < a.size(); ++i) {
        newline(out, inner);
        append_value(out, a[i], st, level + 1, static_cast<size_t>(inner));
        if (i + 1 < a.size()) out += ',';
      }
    }
    newline(out, level * st.indent);
    out += ']';
  } else {
    const auto& o = v.as_object();
    out += '{';
    for (size_t i = 0; i < o.size(); ++i) {
      newline(out, inner);
      size_t key_start = out.size();
      append_json_string(out, o[i].first);
      out += ": ";
      append_value(out, o[i].second, st, level + 1, static_cast<size_t>(inner) + (out.size() - key_start));
      if (i + 1 < o.size()) out += ',';
    }
    newline(out, level * st.indent);
    out += '}';
  }
}

void append_compact(std::string& out, const Json& v) { append_one_line(out, v, ",", ":"); }

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  static const char* hex = "0123456789abcdef";
  out += '"';
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

void append_json(std::string& out, const Json& value, const JsonStyle& style, int level) {
  append_value(out, value, style, level, static_cast<size_t>(level * style.indent));
}

std::string format_json(const Json& value, const JsonStyle& style) {
  std::string out;
  out.reserve(1 << 12);
  append_value(out, value, style, 0, 0);
  out += '\n';
  return out;
}

void append_json_compact(std::string& out, const Json& value) { append_compact(out, value); }

}  // namespace cct
