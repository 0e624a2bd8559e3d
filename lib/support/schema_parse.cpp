#include "support/schema_parse.hpp"

#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>
#include <rapidjson/schema.h>

#include <map>
#include <memory>
#include <mutex>

#include "support/error.hpp"
#include "support/json_rapid.hpp"
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
  c->source.Parse(text.c_str());
  if (c->source.HasParseError())
    throw Error(kExitInternal, "embedded schema " + std::string(name) + ".schema.json is not valid JSON");
  c->schema = std::make_unique<rapidjson::SchemaDocument>(c->source);
  return *cache.emplace(std::string(name), std::move(c)).first->second->schema;
}

}  // namespace

void parse_validated_rapidjson(rapidjson::Document& doc, std::string_view text, const std::string& file,
                               std::string_view schema) {
  rapidjson::MemoryStream ms(text.data(), text.size());
  rapidjson::SchemaValidatingReader<rapidjson::kParseFullPrecisionFlag, rapidjson::MemoryStream, rapidjson::UTF8<>>
      reader(ms, compiled(schema));
  doc.Populate(reader);
  if (reader.GetParseResult() && reader.IsValid()) return;
  // Word the problem the usual way: a parse error with line and column, or
  // the schema violation with its JSON pointer.
  parse_rapidjson(doc, text, file);
  validate_against_schema(doc, schema, file);
  throw Error(kExitInternal, file + ": validation failed while parsing but not afterwards (a bug)");
}

void validate_output_text_streaming(std::string_view text, std::string_view schema, const std::string& file) {
  rapidjson::MemoryStream ms(text.data(), text.size());
  rapidjson::SchemaValidator validator(compiled(schema));
  rapidjson::Reader reader;
  if (reader.Parse<rapidjson::kParseFullPrecisionFlag>(ms, validator) && validator.IsValid()) return;
  validate_output_text(text, schema, file);  // words the problem
  throw Error(kExitInternal, file + ": output failed validation while streaming but not afterwards (a bug)");
}

}  // namespace cct
