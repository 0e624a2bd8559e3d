#include "support/json_cursor.hpp"

#include <cmath>

#include "support/error.hpp"

namespace cct {

void append_pointer_token(std::string& p, std::string_view token) {
  p += '/';
  for (char c : token) {
    if (c == '~') p += "~0";
    else if (c == '/') p += "~1";
    else p += c;
  }
}

void JsonCursor::fail(std::string_view what) const {
  throw_input_error(at_pointer(*file_, ptr_.empty() ? "/" : ptr_, what));
}

void JsonCursor::expect_object() const {
  if (!v_->is_object()) fail("expected an object");
}

void JsonCursor::expect_array() const {
  if (!v_->is_array()) fail("expected an array");
}

std::optional<JsonCursor> JsonCursor::find(std::string_view key) const {
  expect_object();
  const Json* m = v_->find(key);
  if (!m) return std::nullopt;
  std::string p = ptr_;
  append_pointer_token(p, key);
  return JsonCursor(*m, *file_, std::move(p));
}

bool JsonCursor::has(std::string_view key) const { return v_->is_object() && v_->find(key) != nullptr; }

JsonCursor JsonCursor::at(std::string_view key) const {
  auto c = find(key);
  if (!c) fail("missing key \"" + std::string(key) + "\"");
  return *c;
}

JsonCursor JsonCursor::at(size_t index) const {
  expect_array();
  if (index >= v_->as_array().size())
    fail("index " + std::to_string(index) + " out of range (size " + std::to_string(v_->as_array().size()) + ")");
  return JsonCursor(v_->as_array()[index], *file_, ptr_ + "/" + std::to_string(index));
}

size_t JsonCursor::array_size() const {
  expect_array();
  return v_->as_array().size();
}

std::vector<JsonCursor> JsonCursor::elements() const {
  expect_array();
  std::vector<JsonCursor> out;
  out.reserve(v_->as_array().size());
  for (size_t i = 0; i < v_->as_array().size(); ++i)
    out.emplace_back(v_->as_array()[i], *file_, ptr_ + "/" + std::to_string(i));
  return out;
}

std::vector<std::pair<std::string, JsonCursor>> JsonCursor::members() const {
  expect_object();
  std::vector<std::pair<std::string, JsonCursor>> out;
  out.reserve(v_->as_object().size());
  for (const auto& m : v_->as_object()) {
    std::string p = ptr_;
    append_pointer_token(p, m.first);
    out.emplace_back(m.first, JsonCursor(m.second, *file_, std::move(p)));
  }
  return out;
}

int64_t JsonCursor::as_int() const {
  if (!v_->is_int()) fail("expected an integer");
  return v_->as_int();
}

int64_t JsonCursor::as_integral() const {
  if (v_->is_int()) return v_->as_int();
  if (v_->is_double()) {
    double d = v_->as_double();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) return static_cast<int64_t>(d);
  }
  fail("expected an integer");
}

double JsonCursor::as_double() const {
  if (!v_->is_number()) fail("expected a number");
  return v_->as_double();
}

bool JsonCursor::as_bool() const {
  if (!v_->is_bool()) fail("expected true or false");
  return v_->as_bool();
}

const std::string& JsonCursor::as_string() const {
  if (!v_->is_string()) fail("expected a string");
  return v_->as_string();
}

std::vector<int64_t> JsonCursor::as_int_vector() const {
  if (!v_->is_array()) fail("expected an array of integers");
  std::vector<int64_t> out;
  out.reserve(v_->as_array().size());
  for (const auto& x : v_->as_array()) {
    if (!x.is_int()) fail("expected an array of integers");
    out.push_back(x.as_int());
  }
  return out;
}

std::vector<int64_t> JsonCursor::as_int_vector(size_t n) const {
  auto v = as_int_vector();
  if (v.size() != n) fail("expected an array of " + std::to_string(n) + " integers, got " + std::to_string(v.size()));
  return v;
}

std::vector<double> JsonCursor::as_double_vector() const {
  if (!v_->is_array()) fail("expected an array of numbers");
  std::vector<double> out;
  for (const auto& x : v_->as_array()) {
    if (!x.is_number()) fail("expected an array of numbers");
    out.push_back(x.as_double());
  }
  return out;
}

std::vector<std::string> JsonCursor::as_string_vector() const {
  if (!v_->is_array()) fail("expected an array of strings");
  std::vector<std::string> out;
  for (const auto& x : v_->as_array()) {
    if (!x.is_string()) fail("expected an array of strings");
    out.push_back(x.as_string());
  }
  return out;
}

int64_t JsonCursor::int_or(std::string_view key, int64_t dflt) const {
  auto c = find(key);
  return c ? c->as_int() : dflt;
}
double JsonCursor::double_or(std::string_view key, double dflt) const {
  auto c = find(key);
  return c ? c->as_double() : dflt;
}
std::string JsonCursor::string_or(std::string_view key, std::string_view dflt) const {
  auto c = find(key);
  return c ? c->as_string() : std::string(dflt);
}
bool JsonCursor::bool_or(std::string_view key, bool dflt) const {
  auto c = find(key);
  return c ? c->as_bool() : dflt;
}

}  // namespace cct
