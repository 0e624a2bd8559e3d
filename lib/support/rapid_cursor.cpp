#include "support/rapid_cursor.hpp"

#include <algorithm>

#include "support/error.hpp"
#include "support/json_cursor.hpp"

namespace cct {

std::string RapidCursor::pointer() const {
  std::vector<const RapidCursor*> chain;
  for (const RapidCursor* c = this; c->parent_; c = c->parent_) chain.push_back(c);
  std::string p;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if ((*it)->index_ != kNoIndex) {
      p += '/';
      p += std::to_string((*it)->index_);
    } else {
      append_pointer_token(p, (*it)->key_);
    }
  }
  return p;
}

void RapidCursor::fail(std::string_view what) const {
  std::string p = pointer();
  throw_input_error(at_pointer(*file_, p.empty() ? "/" : p, what));
}

void RapidCursor::fail_int_array(size_t n) const {
  fail("expected an array of " + std::to_string(n) + " integers");
}

void RapidCursor::expect_object() const {
  if (!v_->IsObject()) fail("expected an object");
}

void RapidCursor::expect_array() const {
  if (!v_->IsArray()) fail("expected an array");
}

std::optional<RapidCursor> RapidCursor::find(std::string_view key) const& {
  expect_object();
  for (auto m = v_->MemberBegin(); m != v_->MemberEnd(); ++m) {
    if (m->name.GetStringLength() == key.size() && std::equal(key.begin(), key.end(), m->name.GetString()))
      return member(m);
  }
  return std::nullopt;
}

RapidCursor RapidCursor::at(std::string_view key) const& {
  auto c = find(key);
  if (!c) fail("missing key \"" + std::string(key) + "\"");
  return *c;
}

RapidCursor RapidCursor::member(const rapidjson::Value::ConstMemberIterator& m) const& {
  return RapidCursor(m->value, this, std::string_view(m->name.GetString(), m->name.GetStringLength()));
}

RapidCursor RapidCursor::at(size_t index) const& {
  expect_array();
  if (index >= v_->Size())
    fail("index " + std::to_string(index) + " out of range (size " + std::to_string(v_->Size()) + ")");
  return RapidCursor((*v_)[static_cast<rapidjson::SizeType>(index)], this, index);
}

size_t RapidCursor::array_size() const {
  expect_array();
  return v_->Size();
}

size_t RapidCursor::member_count() const {
  expect_object();
  return v_->MemberCount();
}

int64_t RapidCursor::as_int() const {
  if (!v_->IsInt64()) fail("expected an integer");
  return v_->GetInt64();
}

double RapidCursor::as_double() const {
  if (!v_->IsNumber()) fail("expected a number");
  return v_->GetDouble();
}

bool RapidCursor::as_bool() const {
  if (!v_->IsBool()) fail("expected true or false");
  return v_->GetBool();
}

std::string_view RapidCursor::as_string_view() const {
  if (!v_->IsString()) fail("expected a string");
  return std::string_view(v_->GetString(), v_->GetStringLength());
}

std::string RapidCursor::as_string() const { return std::string(as_string_view()); }

std::vector<int64_t> RapidCursor::as_int_vector() const {
  if (!v_->IsArray()) fail("expected an array of integers");
  std::vector<int64_t> out;
  out.reserve(v_->Size());
  for (const auto& x : v_->GetArray()) {
    if (!x.IsInt64()) fail("expected an array of integers");
    out.push_back(x.GetInt64());
  }
  return out;
}

std::vector<double> RapidCursor::as_double_vector() const {
  if (!v_->IsArray()) fail("expected an array of numbers");
  std::vector<double> out;
  out.reserve(v_->Size());
  for (const auto& x : v_->GetArray()) {
    if (!x.IsNumber()) fail("expected an array of numbers");
    out.push_back(x.GetDouble());
  }
  return out;
}

std::vector<std::string> RapidCursor::as_string_vector() const {
  if (!v_->IsArray()) fail("expected an array of strings");
  std::vector<std::string> out;
  out.reserve(v_->Size());
  for (const auto& x : v_->GetArray()) {
    if (!x.IsString()) fail("expected an array of strings");
    out.emplace_back(x.GetString(), x.GetStringLength());
  }
  return out;
}

void RapidCursor::reject_unknown_keys(const std::string_view* known, size_t n) const {
  expect_object();
  for (auto m = v_->MemberBegin(); m != v_->MemberEnd(); ++m) {
    std::string_view name(m->name.GetString(), m->name.GetStringLength());
    if (std::find(known, known + n, name) == known + n) {
      RapidCursor child = member(m);
      child.fail("unknown key \"" + std::string(name) + "\"");
    }
  }
}

}  // namespace cct
