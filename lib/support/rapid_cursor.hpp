// Typed, path-aware access straight to a RapidJSON DOM, for readers on hot
// paths (large Scheduler IR, traces) where converting to cct::Json first
// would cost more than the parse itself.
//
// A cursor remembers its parent and its key or index instead of a pointer
// string, so walking a document allocates nothing; the JSON pointer is only
// built when an error is reported:
//   model.sir.json: /0/3/tile_info/tile_num_0/ofmap_upper: expected an array of 4 integers
// Cursors refer to their parents: a child must not outlive the cursor it came
// from. Hence children can only be taken from named cursors (the && overloads
// are deleted), so `root.at("a").at("b")` does not compile.
#pragma once

#include <rapidjson/document.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cct {

class RapidCursor {
 public:
  // The document root; `file` names the source in errors and must outlive the cursor.
  RapidCursor(const rapidjson::Value& root, const std::string& file) : v_(&root), file_(&file) {}

  const rapidjson::Value& value() const { return *v_; }
  const std::string& file() const { return *file_; }
  // The JSON pointer of this value ("" for the root).
  std::string pointer() const;

  bool is_null() const { return v_->IsNull(); }
  bool is_object() const { return v_->IsObject(); }
  bool is_array() const { return v_->IsArray(); }

  // Object members: at() requires the key, find() returns nullopt when absent.
  RapidCursor at(std::string_view key) const&;
  std::optional<RapidCursor> find(std::string_view key) const&;
  // A child for an already located member (from iterating value().GetObject()).
  RapidCursor member(const rapidjson::Value::ConstMemberIterator& m) const&;
  // Array elements.
  RapidCursor at(size_t index) const&;
  RapidCursor at(std::string_view key) const&& = delete;
  std::optional<RapidCursor> find(std::string_view key) const&& = delete;
  RapidCursor member(const rapidjson::Value::ConstMemberIterator& m) const&& = delete;
  RapidCursor at(size_t index) const&& = delete;
  size_t array_size() const;
  size_t member_count() const;

  int64_t as_int() const;
  double as_double() const;  // integers convert
  bool as_bool() const;
  std::string as_string() const;
  std::string_view as_string_view() const;
  std::vector<int64_t> as_int_vector() const;
  std::vector<double> as_double_vector() const;
  std::vector<std::string> as_string_vector() const;
  template <size_t N>
  std::array<int64_t, N> as_int_array() const {
    std::array<int64_t, N> out{};
    if (!v_->IsArray() || v_->Size() != N) fail_int_array(N);
    for (size_t i = 0; i < N; ++i) {
      const auto& x = (*v_)[static_cast<rapidjson::SizeType>(i)];
      if (!x.IsInt64()) fail_int_array(N);
      out[i] = x.GetInt64();
    }
    return out;
  }

  void expect_object() const;
  void expect_array() const;
  // Fails naming the first member whose key is not in `known` (sorted or not).
  // Call it when fewer known keys were found than the object has members.
  template <size_t N>
  void reject_unknown_keys(const std::array<std::string_view, N>& known) const {
    reject_unknown_keys(known.data(), N);
  }
  void reject_unknown_keys(const std::string_view* known, size_t n) const;

  [[noreturn]] void fail(std::string_view what) const;

 private:
  RapidCursor(const rapidjson::Value& v, const RapidCursor* parent, std::string_view key)
      : v_(&v), file_(parent->file_), parent_(parent), key_(key), index_(kNoIndex) {}
  RapidCursor(const rapidjson::Value& v, const RapidCursor* parent, size_t index)
      : v_(&v), file_(parent->file_), parent_(parent), index_(index) {}
  [[noreturn]] void fail_int_array(size_t n) const;

  static constexpr size_t kNoIndex = static_cast<size_t>(-1);
  const rapidjson::Value* v_;
  const std::string* file_;
  const RapidCursor* parent_ = nullptr;
  std::string_view key_;  // points into the document (member name) or the caller's literal
  size_t index_ = kNoIndex;
};

}  // namespace cct
