#include "isa/schema_gen.hpp"

#include <cstdint>

#include "isa/isa.hpp"
#include "isa/program.hpp"

namespace cct::isa {

namespace {

Json def_ref(std::string_view def) { return Json::object().set("$ref", "#/definitions/" + std::string(def)); }

Json enum_schema(EnumClass c) {
  Json values = Json::array();
  for (const auto& m : enum_members(c)) values.push(std::string(enum_class_name(c)) + "." + std::string(m.name));
  return Json::object().set("enum", values);
}

Json fixed_array(Json item, int n) {
  return Json::object().set("type", "array").set("items", std::move(item)).set("minItems", n).set("maxItems", n);
}

Json param_schema(const ParamSpec& s) {
  switch (s.kind) {
    case ParamKind::Int: return Json::object().set("type", "integer");
    case ParamKind::Number: return Json::object().set("type", "number");
    case ParamKind::Bool: return Json::object().set("type", "boolean");
    case ParamKind::Enum: return def_ref(enum_class_name(s.enums[0]));
    case ParamKind::IntList: return fixed_array(def_ref("int32"), s.length);
    case ParamKind::EnumList: {
      Json items = Json::array();
      for (int e = 0; e < s.length; ++e) items.push(def_ref(enum_class_name(s.enums[e])));
      return Json::object()
          .set("type", "array")
          .set("items", std::move(items))
          .set("minItems", s.length)
          .set("maxItems", s.length);
    }
    case ParamKind::QueueList: return def_ref("queues");
  }
  return Json::object();
}

}  // namespace

Json instruction_line_schema(std::string_view title, std::string_view description,
                             const std::vector<ExtraElement>& extras) {
  const int items = 3 + static_cast<int>(extras.size());
  Json defs = Json::object();

  Json mnemonics = Json::array();
  for (const auto& info : all_opcodes()) mnemonics.push(std::string(info.mnemonic));
  defs.set("mnemonic", Json::object().set("enum", mnemonics));

  defs.set("int32", Json::object()
                        .set("type", "integer")
                        .set("minimum", static_cast<long long>(INT32_MIN))
                        .set("maximum", static_cast<long long>(INT32_MAX)));
  Json layer_list = Json::object().set("type", "array").set("items", def_ref("int32")).set("maxItems", kMaxMappingList);
  Json mapping_props = Json::object()
                           .set("slyr", def_ref("int32"))
                           .set("clyr", layer_list)
                           .set("s_flyr", def_ref("int32"))
                           .set("c_flyr", layer_list)
                           .set("wkl", def_ref("int32"))
                           .set("tile", def_ref("int32"))
                           .set("core", Json::object()
                                            .set("type", "integer")
                                            .set("minimum", 0)
                                            .set("maximum", static_cast<long long>(INT32_MAX)));
  defs.set("mapping", Json::object()
                          .set("type", "object")
                          .set("properties", std::move(mapping_props))
                          .set("required", Json::array({"slyr", "clyr", "s_flyr", "c_flyr", "wkl", "tile"}))
                          .set("additionalProperties", false));
  Json queues = Json::array();
  for (int q = 0; q < kQueueCount; ++q) queues.push(std::string(queue_name(static_cast<Queue>(q))));
  defs.set("queues", Json::object()
                         .set("type", "array")
                         .set("items", Json::object().set("enum", queues))
                         .set("maxItems", kMaxQueueList));
  for (int c = 0; c < kEnumClassCount; ++c)
    defs.set(enum_class_name(static_cast<EnumClass>(c)), enum_schema(static_cast<EnumClass>(c)));
  for (const auto& extra : extras) defs.set(extra.name, extra.schema);

  Json alternatives = Json::array();
  for (const auto& info : all_opcodes()) {
    Json props = Json::object();
    Json required = Json::array();
    for (const auto& s : info.params) {
      props.set(param_name(s.id), param_schema(s));
      required.push(std::string(param_name(s.id)));
    }
    std::string def = "params_" + std::string(info.mnemonic);
    defs.set(def, Json::object()
                      .set("type", "object")
                      .set("properties", std::move(props))
                      .set("required", std::move(required))
                      .set("additionalProperties", false));
    Json tuple = Json::array();
    tuple.push(Json::object().set("enum", Json::array({std::string(info.mnemonic)})));
    for (int i = 1; i + 1 < items; ++i) tuple.push(Json::object());
    tuple.push(def_ref(def));
    alternatives.push(Json::object().set("items", std::move(tuple)));
  }

  Json line_items = Json::array();
  line_items.push(def_ref("mnemonic"));
  line_items.push(def_ref("mapping"));
  for (const auto& extra : extras) line_items.push(def_ref(extra.name));
  line_items.push(Json::object().set("type", "object"));

  return Json::object()
      .set("$schema", "http://json-schema.org/draft-04/schema#")
      .set("title", std::string(title))
      .set("description", std::string(description))
      .set("type", "array")
      .set("items", std::move(line_items))
      .set("minItems", items)
      .set("maxItems", items)
      .set("anyOf", std::move(alternatives))
      .set("definitions", std::move(defs));
}

std::string isa_schema_text() {
  Json schema = instruction_line_schema(
      "ISA program line (JSON Lines syntax)",
      "One line of an ISA program: [mnemonic, mapping, parameters]. Generated from the opcode table in "
      "lib/isa/isa.cpp; see formats/ISA_Format.md.");
  return format_json(schema) + "\n";
}

}  // namespace cct::isa
