// format_json's layout for typed values, without building a cct::Json tree.
//
// Writers of large formats (Scheduler IR, traces) describe their structs to
// this emitter and get exactly the text format_json(to_json(x)) would give
// (same key order, same line breaking), several times faster because nothing
// is allocated per value. Tests of each format compare the two byte for byte.
//
// A type takes part by providing, findable by argument-dependent lookup:
//   cct::emit::Kind json_kind(const T&);             // Scalar, Array or Object
//   void emit_scalar(std::string&, const T&);        // for Scalar kinds
//   template <class F> void for_each_element(const T&, F&&);  // Array: f(element)
//   template <class F> void for_each_member(const T&, F&&);   // Object: f(std::string_view key, value)
// Optionally, for objects that can never be written on one line (more than
// JsonStyle::max_inline_keys members, or a member that is an object) and are
// never empty, `constexpr bool json_always_expanded(const T&)` returning true
// skips the inline attempt: an optimisation only, the text is the same.
// Built in: integers, double, bool, strings, nullptr, std::vector, std::array,
// std::optional (nullopt is null) and cct::Json.
#pragma once

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "support/error.hpp"
#include "support/json.hpp"
#include "support/pyfloat.hpp"

namespace cct::emit {

enum class Kind : uint8_t { Scalar, Array, Object };

// ---- built-in scalars ---------------------------------------------------------

// append_json_string with a fast path for the common case of nothing to escape.
inline void append_string(std::string& out, std::string_view v) {
  for (char ch : v) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == '"' || c == '\\') {
      append_json_string(out, v);
      return;
    }
  }
  size_t n = out.size();
  out.resize(n + v.size() + 2);
  char* p = out.data() + n;
  *p++ = '"';
  v.copy(p, v.size());
  p[v.size()] = '"';
}

template <class T>
  requires std::is_integral_v<T> && (!std::is_same_v<T, bool>)
constexpr Kind json_kind(const T&) { return Kind::Scalar; }
template <class T>
  requires std::is_integral_v<T> && (!std::is_same_v<T, bool>)
inline void emit_scalar(std::string& out, const T& v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

constexpr Kind json_kind(bool) { return Kind::Scalar; }
inline void emit_scalar(std::string& out, bool v) { v ? out.append("true", 4) : out.append("false", 5); }

constexpr Kind json_kind(double) { return Kind::Scalar; }
inline void emit_scalar(std::string& out, double v) {
  if (!std::isfinite(v)) throw Error(kExitInternal, "cannot write a non-finite number as JSON");
  append_python_float(out, v);
}

constexpr Kind json_kind(std::nullptr_t) { return Kind::Scalar; }
inline void emit_scalar(std::string& out, std::nullptr_t) { out += "null"; }

constexpr Kind json_kind(std::string_view) { return Kind::Scalar; }
inline void emit_scalar(std::string& out, std::string_view v) { append_string(out, v); }
constexpr Kind json_kind(const std::string&) { return Kind::Scalar; }
inline void emit_scalar(std::string& out, const std::string& v) { append_string(out, v); }
constexpr Kind json_kind(const char*) { return Kind::Scalar; }
inline void emit_scalar(std::string& out, const char* v) { append_string(out, v); }

// ---- built-in containers --------------------------------------------------------

template <class T>
constexpr Kind json_kind(const std::vector<T>&) { return Kind::Array; }
template <class T, class F>
void for_each_element(const std::vector<T>& v, F&& f) {
  for (const auto& x : v) f(x);
}
template <class T, size_t N>
constexpr Kind json_kind(const std::array<T, N>&) { return Kind::Array; }
template <class T, size_t N, class F>
void for_each_element(const std::array<T, N>& v, F&& f) {
  for (const auto& x : v) f(x);
}

// std::optional: the value, or null.
template <class T>
Kind json_kind(const std::optional<T>& v) { return v ? json_kind(*v) : Kind::Scalar; }
template <class T>
  requires requires(std::string& o, const T& x) { emit_scalar(o, x); }
void emit_scalar(std::string& out, const std::optional<T>& v) {
  if (v) emit_scalar(out, *v);
  else out += "null";
}
template <class T, class F>
  requires requires(const T& x, F& f) { for_each_element(x, f); }
void for_each_element(const std::optional<T>& v, F&& f) { for_each_element(*v, f); }
template <class T, class F>
  requires requires(const T& x, F& f) { for_each_member(x, f); }
void for_each_member(const std::optional<T>& v, F&& f) { for_each_member(*v, f); }

// cct::Json, dispatched at run time. Templates restricted to Json itself, so
// other types never reach them through Json's converting constructors.
template <class J>
  requires std::is_same_v<J, Json>
Kind json_kind(const J& v) {
  return v.is_array() ? Kind::Array : v.is_object() ? Kind::Object : Kind::Scalar;
}
template <class J>
  requires std::is_same_v<J, Json>
void emit_scalar(std::string& out, const J& v) {
  switch (v.type()) {
    case Json::Type::Null: out += "null"; break;
    case Json::Type::Bool: emit_scalar(out, v.as_bool()); break;
    case Json::Type::Int: emit_scalar(out, v.as_int()); break;
    case Json::Type::Double: emit_scalar(out, v.as_double()); break;
    case Json::Type::String: append_string(out, v.as_string()); break;
    default: break;
  }
}
template <class J, class F>
  requires std::is_same_v<J, Json>
void for_each_element(const J& v, F&& f) {
  for (const auto& x : v.as_array()) f(x);
}
template <class J, class F>
  requires std::is_same_v<J, Json>
void for_each_member(const J& v, F&& f) {
  for (const auto& [k, x] : v.as_object()) f(std::string_view(k), x);
}

// ---- format_json's algorithm (support/json_format.cpp), over the protocol -------

namespace detail {

// Element/member iteration that compiles away for kinds a type does not have.
template <class T, class F>
void elements(const T& v, F&& f) {
  if constexpr (requires { for_each_element(v, f); }) for_each_element(v, f);
}
template <class T, class F>
void members(const T& v, F&& f) {
  if constexpr (requires { for_each_member(v, f); }) for_each_member(v, f);
}

template <class T>
size_t container_size(const T& v) {
  size_t n = 0;
  if (json_kind(v) == Kind::Array) elements(v, [&](const auto&) { ++n; });
  else members(v, [&](std::string_view, const auto&) { ++n; });
  return n;
}

template <class T>
bool all_elements_scalar(const T& v) {
  bool all = true;
  elements(v, [&](const auto& x) { all = all && json_kind(x) == Kind::Scalar; });
  return all;
}

template <class T>
bool inlinable(const T& v, const JsonStyle& st) {
  switch (json_kind(v)) {
    case Kind::Scalar: return true;
    case Kind::Array: {
      bool ok = true;
      elements(v, [&](const auto& x) { ok = ok && inlinable(x, st); });
      return ok;
    }
    case Kind::Object: {
      if constexpr (requires { json_always_expanded(v); })
        if (json_always_expanded(v)) return false;
      size_t n = 0;
      bool ok = true;
      members(v, [&](std::string_view, const auto& m) {
        ++n;
        Kind k = json_kind(m);
        if (k == Kind::Object) ok = false;
        else if (k == Kind::Array && ok) ok = all_elements_scalar(m);
      });
      return ok && static_cast<int>(n) <= st.max_inline_keys;
    }
  }
  return true;
}

template <class T>
void append_inline(std::string& out, const T& v) {
  switch (json_kind(v)) {
    case Kind::Scalar:
      if constexpr (requires { emit_scalar(out, v); }) emit_scalar(out, v);
      else out += "null";  // an empty std::optional of a container type
      break;
    case Kind::Array: {
      out += '[';
      bool first = true;
      elements(v, [&](const auto& x) {
        if (!first) out.append(", ", 2);
        first = false;
        append_inline(out, x);
      });
      out += ']';
      break;
    }
    case Kind::Object: {
      out += '{';
      bool first = true;
      members(v, [&](std::string_view k, const auto& m) {
        if (!first) out.append(", ", 2);
        first = false;
        append_string(out, k);
        out.append(": ", 2);
        append_inline(out, m);
      });
      out += '}';
      break;
    }
  }
}

inline void newline(std::string& out, int spaces) {
  size_t n = out.size();
  out.resize(n + 1 + static_cast<size_t>(spaces), ' ');
  out[n] = '\n';
}

template <class T>
void append_value(std::string& out, const T& v, const JsonStyle& st, int level, size_t col) {
  Kind kind = json_kind(v);
  if (kind == Kind::Scalar) {
    if constexpr (requires { emit_scalar(out, v); }) emit_scalar(out, v);
    else out += "null";  // an empty std::optional of a container type
    return;
  }
  bool always_expanded = false;
  if constexpr (requires { json_always_expanded(v); }) always_expanded = json_always_expanded(v);
  if (!always_expanded) {
    if (container_size(v) == 0) {
      out += kind == Kind::Array ? "[]" : "{}";
      return;
    }
    // A document's top-level object is always expanded.
    if (inlinable(v, st) && !(level == 0 && col == 0 && kind == Kind::Object)) {
      size_t start = out.size();
      append_inline(out, v);
      if (col + (out.size() - start) <= static_cast<size_t>(st.width)) return;
      out.resize(start);
    }
  }
  const int inner = (level + 1) * st.indent;
  if (kind == Kind::Array) {
    out += '[';
    if (all_elements_scalar(v)) {
      // Long scalar lists are packed, several values per line.
      size_t n = container_size(v), i = 0;
      std::string line, item;
      elements(v, [&](const auto& x) {
        item.clear();
        append_inline(item, x);
        if (++i < n) item += ',';
        if (!line.empty() && static_cast<size_t>(inner) + line.size() + 1 + item.size() > static_cast<size_t>(st.width)) {
          newline(out, inner);
          out += line;
          line.clear();
        }
        if (!line.empty()) line += ' ';
        line += item;
      });
      newline(out, inner);
      out += line;
    } else {
      bool first = true;
      elements(v, [&](const auto& x) {
        if (!first) out += ',';
        first = false;
        newline(out, inner);
        append_value(out, x, st, level + 1, static_cast<size_t>(inner));
      });
    }
    newline(out, level * st.indent);
    out += ']';
  } else {
    out += '{';
    bool first = true;
    members(v, [&](std::string_view k, const auto& m) {
      if (!first) out += ',';
      first = false;
      newline(out, inner);
      size_t key_start = out.size();
      append_string(out, k);
      out.append(": ", 2);
      append_value(out, m, st, level + 1, static_cast<size_t>(inner) + (out.size() - key_start));
    });
    newline(out, level * st.indent);
    out += '}';
  }
}

}  // namespace detail

// The text format_json(to_json(value)) gives, trailing newline included.
template <class T>
std::string format(const T& value, const JsonStyle& style = {}) {
  std::string out;
  out.reserve(1 << 16);
  detail::append_value(out, value, style, 0, 0);
  out += '\n';
  return out;
}

// Appends at a given nesting level, as append_json does.
template <class T>
void append(std::string& out, const T& value, const JsonStyle& style = {}, int level = 0) {
  detail::append_value(out, value, style, level, static_cast<size_t>(level * style.indent));
}

}  // namespace cct::emit
