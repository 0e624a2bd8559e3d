#include "support/schema_parse.hpp"


#include <map>
#include <memory>
#include <mutex>

#include "support/error.hpp"
#include "support/json_parse.hpp"
#include "support/json_rapid.hpp"
#include "support/rapid_schema.hpp"
#include "support/schema.hpp"

namespace cct {

namespace {

struct Compiled {
  rapidjson::Document source;
  std::unique_ptr<rapidjson::SchemaDocument> schema;
};

const rapidjson::SchemaDocument& compiled(std::string_view name) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Compiled>, std::less<>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(name);
  if (it != cache.end()) return *it->second->schema;
  std::string text(schema_text(name));
  auto c = std::make_unique<Compiled>();
  try {
    parse_rapidjson(c->source, text, std::string(name) + ".schema.json");
  } catch (const Error& e) {
    throw Error(kExitInternal, std::string("embedded schema: ") + e.what());
  }
  c->schema = std::make_unique<rapidjson::SchemaDocument>(c->source);
  return *cache.emplace(std::string(name), std::move(c)).first->second->schema;
}

}  // namespace

void parse_validated_rapidjson(rapidjson::Document& doc, std::string_view text, const std::string& file,
                               std::string_view schema) {
  bool valid = false;
  // The validator passes each event on to the document it builds.
  auto fill = [&](rapidjson::Document& d) {
    rapidjson::GenericSchemaValidator<rapidjson::SchemaDocument, rapidjson::Document> validator(compiled(schema), d);
    RapidEvents<decltype(validator)> events(validator);
    bool parsed = parse_json_events(text, file, events);  // throws on malformed text
    valid = validator.IsValid();
    return parsed && valid;
  };
  doc.Populate(fill);
  if (valid) return;
  // Word the schema violation with its JSON pointer.
  parse_rapidjson(doc, text, file);
  validate_against_schema(doc, schema, file);
  throw Error(kExitInternal, file + ": validation failed while parsing but not afterwards (a bug)");
}

void validate_output_text_streaming(std::string_view text, std::string_view schema, const std::string& file) {
  rapidjson::SchemaValidator validator(compiled(schema));
  RapidEvents<rapidjson::SchemaValidator> events(validator);
  try {
    if (parse_json_events(text, file, events) && validator.IsValid()) return;
  } catch (const Error& e) {
    throw Error(kExitInternal, std::string("output failed validation (a bug, please report): ") + e.what());
  }
  validate_output_text(text, schema, file);  // words the problem
  throw Error(kExitInternal, file + ": output failed validation while streaming but not afterwards (a bug)");
}

}  // namespace cct
