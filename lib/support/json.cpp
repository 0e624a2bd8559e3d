#include "support/json.hpp"

#include <rapidjson/document.h>

#include "support/error.hpp"
#include "support/json_parse.hpp"
#include "support/json_rapid.hpp"
#include "support/schema.hpp"

namespace cct {

const Json* Json::find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (const auto& m : as_object())
    if (m.first == key) return &m.second;
  return nullptr;
}

Json* Json::find(std::string_view key) {
  if (!is_object()) return nullptr;
  for (auto& m : as_object())
    if (m.first == key) return &m.second;
  return nullptr;
}

Json& Json::set(std::string_view key, Json value) {
  if (is_null()) v_ = Object{};
  if (Json* existing = find(key)) {
    *existing = std::move(value);
  } else {
    as_object().emplace_back(std::string(key), std::move(value));
  }
  return *this;
}

Json& Json::push(Json value) {
  if (is_null()) v_ = Array{};
  as_array().push_back(std::move(value));
  return *this;
}

size_t Json::size() const {
  if (is_array()) return as_array().size();
  if (is_object()) return as_object().size();
  return 0;
}

namespace {

Json convert(const rapidjson::Value& v) {
  switch (v.GetType()) {
    case rapidjson::kNullType: return Json();
    case rapidjson::kFalseType: return Json(false);
    case rapidjson::kTrueType: return Json(true);
    case rapidjson::kStringType: return Json(std::string(v.GetString(), v.GetStringLength()));
    case rapidjson::kNumberType:
      if (v.IsInt64()) return Json(static_cast<long long>(v.GetInt64()));
      if (v.IsUint64()) return Json(static_cast<double>(v.GetUint64()));
      return Json(v.GetDouble());
    case rapidjson::kArrayType: {
      Json::Array a;
      a.reserve(v.Size());
      for (const auto& x : v.GetArray()) a.push_back(convert(x));
      return Json(std::move(a));
    }
    case rapidjson::kObjectType: {
      Json::Object o;
      o.reserve(v.MemberCount());
      for (const auto& m : v.GetObject())
        o.emplace_back(std::string(m.name.GetString(), m.name.GetStringLength()), convert(m.value));
      return Json(std::move(o));
    }
  }
  return Json();
}

}  // namespace

void parse_rapidjson(rapidjson::Document& doc, std::string_view text, const std::string& file) {
  // Our parser, not RapidJSON's (see json_parse.hpp): bounded depth, exact
  // numbers, duplicate keys refused. It throws on malformed text.
  auto fill = [&](rapidjson::Document& d) {
    RapidEvents<rapidjson::Document> events(d);
    return parse_json_events(text, file, events);
  };
  doc.Populate(fill);
}

Json parse_json(std::string_view text, const std::string& file) {
  rapidjson::Document doc;
  parse_rapidjson(doc, text, file);
  return convert(doc);
}

Json parse_json_validated(std::string_view text, const std::string& file, std::string_view schema) {
  rapidjson::Document doc;
  parse_rapidjson(doc, text, file);
  if (!schema.empty()) validate_against_schema(doc, schema, file);
  return convert(doc);
}

Json json_from_rapidjson(const rapidjson::Value& v) { return convert(v); }

}  // namespace cct
