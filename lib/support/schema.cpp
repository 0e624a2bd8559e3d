#include "support/schema.hpp"

#include <rapidjson/pointer.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <map>
#include <memory>
#include <mutex>

#include "support/embedded.hpp"
#include "support/error.hpp"
#include "support/json_rapid.hpp"
#include "support/rapid_schema.hpp"

namespace cct {

namespace {

std::string schema_file_name(std::string_view name) { return std::string(name) + ".schema.json"; }

struct CompiledSchema {
  rapidjson::Document source;
  std::unique_ptr<rapidjson::SchemaDocument> schema;
};

const CompiledSchema& compiled(std::string_view name) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<CompiledSchema>, std::less<>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(name);
  if (it != cache.end()) return *it->second;
  std::string text(schema_text(name));
  auto c = std::make_unique<CompiledSchema>();
  try {
    parse_rapidjson(c->source, text, schema_file_name(name));
  } catch (const Error& e) {
    throw Error(kExitInternal, std::string("embedded schema: ") + e.what());
  }
  c->schema = std::make_unique<rapidjson::SchemaDocument>(c->source);
  return *cache.emplace(std::string(name), std::move(c)).first->second;
}

const rapidjson::SchemaDocument& compiled_schema(std::string_view name) { return *compiled(name).schema; }
const rapidjson::Value& schema_source(std::string_view name) { return compiled(name).source; }

std::string to_text(const rapidjson::Value& v) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  v.Accept(w);
  return std::string(sb.GetString(), sb.GetSize());
}

const rapidjson::Value* resolve(const rapidjson::Value& root, const std::string& pointer) {
  rapidjson::Pointer p(pointer.c_str());
  if (!p.IsValid()) return nullptr;
  return p.Get(root);
}

// RapidJSON 1.1 reports only the failing keyword and pointers; look at the
// schema node and the document value to say what was expected.
std::string describe(const rapidjson::Value& schema_root, const std::string& schema_ptr, const std::string& keyword,
                     const rapidjson::Value* value) {
  const rapidjson::Value* node = resolve(schema_root, schema_ptr);
  std::string s = "violates '" + keyword + "'";
  if (!node || !node->IsObject()) return s;
  auto member = [&](const char* k) -> const rapidjson::Value* {
    auto it = node->FindMember(k);
    return it == node->MemberEnd() ? nullptr : &it->value;
  };
  if (keyword == "required" && value && value->IsObject()) {
    if (const auto* req = member("required"); req && req->IsArray()) {
      std::string missing;
      for (const auto& k : req->GetArray())
        if (k.IsString() && !value->HasMember(k.GetString())) missing += (missing.empty() ? "\"" : ", \"") + std::string(k.GetString()) + "\"";
      if (!missing.empty()) return "missing required key " + missing;
    }
  }
  if (keyword == "additionalProperties" && value && value->IsObject()) {
    const auto* props = member("properties");
    for (const auto& m : value->GetObject()) {
      if (!props || !props->IsObject() || !props->HasMember(m.name.GetString()))
        return "unknown key \"" + std::string(m.name.GetString()) + "\"";
    }
  }
  if (keyword == "type") {
    if (const auto* t = member("type")) s = "wrong type: expected " + to_text(*t);
    if (value) {
      static const char* names[] = {"null", "boolean", "boolean", "object", "array", "string", "number"};
      s += ", got " + std::string(names[value->GetType()]);
    }
    return s;
  }
  if (keyword == "enum") {
    if (const auto* e = member("enum")) {
      std::string allowed = to_text(*e);
      if (allowed.size() > 200) allowed = allowed.substr(0, 200) + "...";
      s = "value " + (value ? to_text(*value) : std::string("?")) + " is not one of " + allowed;
    }
    return s;
  }
  for (const char* bound : {"minimum", "maximum", "minItems", "maxItems", "minLength", "maxLength", "pattern",
                            "minProperties", "maxProperties"}) {
    if (keyword == bound) {
      if (const auto* b = member(bound)) s = keyword + " is " + to_text(*b);
      if (value) {
        std::string v = to_text(*value);
        if (v.size() > 80) v = v.substr(0, 80) + "...";
        s += ", got " + v;
      }
      return s;
    }
  }
  return s;
}

}  // namespace

std::string_view schema_text(std::string_view name) {
  const EmbeddedFile* f = find_embedded_schema(schema_file_name(name));
  if (!f) throw Error(kExitInternal, "no embedded schema named " + schema_file_name(name));
  return f->data;
}

void validate_against_schema(const rapidjson::Value& doc, std::string_view name, const std::string& file) {
  const rapidjson::SchemaDocument& schema = compiled_schema(name);
  rapidjson::SchemaValidator validator(schema);
  if (doc.Accept(validator)) return;
  auto pointer_text = [](const rapidjson::Pointer& p) {
    rapidjson::StringBuffer sb;
    p.Stringify(sb);
    return std::string(sb.GetString(), sb.GetSize());
  };
  rapidjson::Pointer doc_ptr = validator.GetInvalidDocumentPointer();
  std::string pointer = pointer_text(doc_ptr);
  std::string schema_ptr = pointer_text(validator.GetInvalidSchemaPointer());
  const rapidjson::Value* value = doc_ptr.Get(doc);
  std::string keyword = validator.GetInvalidSchemaKeyword();
  std::string what;
  // RapidJSON 1.1 points at the offending member itself for additionalProperties;
  // objects with numbered keys refuse others with the schema {"not": {}} (its
  // patternProperties next to additionalProperties false reject valid keys).
  const std::string_view suffix = "/additionalProperties";
  const bool refused_extra = keyword == "not" && schema_ptr.size() >= suffix.size() &&
                             schema_ptr.compare(schema_ptr.size() - suffix.size(), suffix.size(), suffix) == 0;
  if ((refused_extra || (keyword == "additionalProperties" && !(value && value->IsObject()))) &&
      doc_ptr.GetTokenCount() > 0) {
    const auto& last = doc_ptr.GetTokens()[doc_ptr.GetTokenCount() - 1];
    what = "unknown key \"" + std::string(last.name, last.length) + "\"";
  } else {
    what = describe(schema_source(name), schema_ptr, keyword, value);
  }
  throw_input_error(at_pointer(file, pointer.empty() ? "/" : pointer,
                               what + " (schemas/" + schema_file_name(name) + ")"));
}

void validate_output_text(std::string_view text, std::string_view name, const std::string& file) {
  rapidjson::Document doc;
  try {
    parse_rapidjson(doc, text, file);
    validate_against_schema(doc, name, file);
  } catch (const Error& e) {
    throw Error(kExitInternal, std::string("output failed validation (a bug, please report): ") + e.what());
  }
}

}  // namespace cct
