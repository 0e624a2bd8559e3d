#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "support/error.hpp"
#include "support/json.hpp"
#include "support/json_cursor.hpp"
#include "support/pyfloat.hpp"

using cct::Json;

TEST_CASE("python_float matches Python repr") {
  CHECK(cct::python_float(6.0) == "6.0");
  CHECK(cct::python_float(0.0) == "0.0");
  CHECK(cct::python_float(-0.0) == "-0.0");
  CHECK(cct::python_float(-128.0) == "-128.0");
  CHECK(cct::python_float(29.057056427001953) == "29.057056427001953");
  CHECK(cct::python_float(43.62298146446928) == "43.62298146446928");
  CHECK(cct::python_float(0.1) == "0.1");
  CHECK(cct::python_float(1e-5) == "1e-05");
  CHECK(cct::python_float(0.0001) == "0.0001");
  CHECK(cct::python_float(1.5e16) == "1.5e+16");
  CHECK(cct::python_float(1e15) == "1000000000000000.0");
  CHECK(cct::python_float(123456789.125) == "123456789.125");
  CHECK(cct::python_float(2.5e-300) == "2.5e-300");
  CHECK(cct::python_float(std::numeric_limits<double>::infinity()) == "inf");
}

TEST_CASE("JSON keeps key order and int/float distinction") {
  Json j = cct::parse_json(R"({"b": 1, "a": 6.0, "c": [1, 2.5, "x", true, null]})", "t.json");
  REQUIRE(j.is_object());
  CHECK(j.as_object()[0].first == "b");
  CHECK(j.find("b")->is_int());
  CHECK(j.find("a")->is_double());
  std::string text = cct::format_json(j);
  CHECK(text == "{\n  \"b\": 1,\n  \"a\": 6.0,\n  \"c\": [1, 2.5, \"x\", true, null]\n}\n");
  CHECK(cct::parse_json(text, "t") == j);
}

TEST_CASE("JSON formatter wraps long scalar arrays and expands nested objects") {
  Json arr = Json::array();
  for (int i = 0; i < 60; ++i) arr.push(Json(1000 + i));
  Json j = Json::object().set("list", arr).set("nested", Json::object().set("k", Json::object().set("x", 1)));
  std::string text = cct::format_json(j);
  for (size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    CHECK(end - start <= 100);
  CHECK(text.find("\"nested\": {\n") != std::string::npos);
  CHECK(cct::parse_json(text, "t") == j);
}

TEST_CASE("JSON parse errors name the line and column") {
  try {
    cct::parse_json("{\n  \"a\": 1,\n  \"b\": \n}", "bad.json");
    FAIL("no error");
  } catch (const cct::Error& e) {
    CHECK(std::string(e.what()).find("bad.json:4:") == 0);
    CHECK(e.code() == cct::kExitInvalidInput);
  }
  CHECK_THROWS_AS(cct::parse_json("", "empty.json"), cct::Error);
  CHECK_THROWS_AS(cct::parse_json("[1, 2", "trunc.json"), cct::Error);
}

TEST_CASE("JsonCursor errors carry the JSON pointer") {
  std::string file = "x.json";
  Json j = cct::parse_json(R"({"layers": [{"shape": [1, "a"]}]})", file);
  cct::JsonCursor c(j, file);
  try {
    c.at("layers").at(0).at("shape").as_int_vector();
    FAIL("no error");
  } catch (const cct::Error& e) {
    CHECK(std::string(e.what()) == "x.json: /layers/0/shape: expected an array of integers");
  }
  try {
    c.at("layers").at(0).at("name");
    FAIL("no error");
  } catch (const cct::Error& e) {
    CHECK(std::string(e.what()) == "x.json: /layers/0: missing key \"name\"");
  }
  CHECK_THROWS_AS(c.at("layers").at(3), cct::Error);
}

TEST_CASE("compact JSON for JSON Lines") {
  Json j = Json::array({Json("pe_conv"), Json::object().set("slyr", 1).set("clyr", Json::array())});
  std::string s;
  cct::append_json_compact(s, j);
  CHECK(s == R"(["pe_conv",{"slyr":1,"clyr":[]}])");
}

TEST_CASE("schema errors say which key is unknown or missing") {
  // The mapping schema is closed; use it as a sample closed schema.
  auto message = [](const std::string& text) {
    try {
      cct::parse_json_validated(text, "m.json", "mapping");
    } catch (const cct::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string unknown = message(
      R"({"format": "cct-mapping", "version": 1, "arch": "x", "batch": 1,)"
      R"( "segments": [{"layers": [{"layer": "a", "cores": [0], "bogus": 3}]}]})");
  CHECK(unknown.rfind("m.json: /segments/0/layers/0/bogus: unknown key \"bogus\"", 0) == 0);
  std::string missing = message(R"({"format": "cct-mapping", "version": 1, "arch": "x", "segments": [{"layers": [{"layer": "a", "cores": [0]}]}]})");
  INFO(missing);
  CHECK(missing.find("missing required key \"batch\"") != std::string::npos);
  std::string type = message(R"({"format": "cct-mapping", "version": 1, "arch": "x", "batch": "one", "segments": []})");
  CHECK(type.rfind("m.json: /batch: wrong type", 0) == 0);
}
