// The JSON parser every reader goes through (support/json_parse.hpp): what an
// outside fuzzing campaign found in RapidJSON 1.1.0's reader, each through
// every entry point (cct::Json, RapidJSON DOM, DOM validated while parsing).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "support/error.hpp"
#include "support/json.hpp"
#include "support/json_parse.hpp"
#include "support/json_rapid.hpp"
#include "support/schema_parse.hpp"

namespace {

const std::string kMapping =
    R"({"format": "cct-mapping", "version": 1, "arch": "x", "batch": 1, "segments": [{"layers": [{"layer": "a", "cores": [0]}]}]})";

// The message of the Error that f throws ("no error" when none), checking its code.
template <class F>
std::string error_of(F&& f, cct::ExitCode code = cct::kExitInvalidInput) {
  try {
    f();
  } catch (const cct::Error& e) {
    CHECK(e.code() == code);
    return e.what();
  }
  return "no error";
}

// Every way a reader parses: the same outcome expected from each.
std::string json_error(const std::string& text, const std::string& file = "t.json") {
  std::string a = error_of([&] { cct::parse_json(text, file); });
  std::string b = error_of([&] {
    rapidjson::Document d;
    cct::parse_rapidjson(d, text, file);
  });
  CHECK(a == b);
  return a;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

double read_double(const std::string& token) {
  cct::Json j = cct::parse_json("[" + token + "]", "n.json");
  REQUIRE(j.as_array()[0].is_double());
  rapidjson::Document d;
  cct::parse_rapidjson(d, "[" + token + "]", "n.json");
  REQUIRE(d[0].IsDouble());
  double x = j.as_array()[0].as_double();
  CHECK(same_bits(x, d[0].GetDouble()));
  return x;
}

}  // namespace

TEST_CASE("numbers are read exactly: correctly rounded doubles, out of range refused") {
  // RapidJSON's full-precision path gave garbage for these zeros and 1.2e-240 for 0.0e-30.
  CHECK(same_bits(read_double("0e308"), 0.0));
  CHECK(same_bits(read_double("0.0e100"), 0.0));
  CHECK(same_bits(read_double("0.0e-30"), 0.0));
  CHECK(same_bits(read_double("-0.0"), -0.0));
  CHECK(same_bits(read_double("0e99999999999999999999"), 0.0));
  CHECK(read_double("0.1") == 0.1);
  CHECK(read_double("0.1000000000000000055511151231257827021181583404541015625") == 0.1);
  CHECK(read_double("2.2250738585072011e-308") == 2.2250738585072011e-308);
  CHECK(read_double("1.7976931348623157e308") == std::numeric_limits<double>::max());
  CHECK(read_double("4.9e-324") == std::numeric_limits<double>::denorm_min());
  CHECK(read_double("123456789012345678901234567890e-10") == 12345678901234567890.123456789);
  // Below the smallest subnormal the correctly rounded value is zero.
  CHECK(same_bits(read_double("1e-400"), 0.0));
  CHECK(same_bits(read_double("-1e-400"), -0.0));
  // 1.8e308 came out as NaN, 581e308 as -1.8e-306.
  for (const char* big : {"1.8e308", "581e308", "-1e309", "0.1e99999999999999", "1e99999999999999999999"}) {
    CAPTURE(big);
    std::string e = json_error(std::string("{\"x\": ") + big + "}", "big.json");
    CHECK(e == "big.json:1: column 7: invalid JSON: number " + std::string(big) + " is out of range (beyond 1.8e308)");
  }
}

TEST_CASE("integers are int64; beyond it they are refused, not wrapped") {
  cct::Json j = cct::parse_json("[9223372036854775807, -9223372036854775808, 9007199254740993, -0]", "i.json");
  CHECK(j.as_array()[0].as_int() == INT64_MAX);
  CHECK(j.as_array()[1].as_int() == INT64_MIN);
  CHECK(j.as_array()[2].as_int() == 9007199254740993);
  CHECK(j.as_array()[3].is_int());
  for (const char* big : {"9223372036854775808", "-9223372036854775809", "18446744073709551616"}) {
    CAPTURE(big);
    CHECK(json_error(std::string("[") + big + "]", "i.json") ==
          "i.json:1: column 2: invalid JSON: integer " + std::string(big) + " is out of range (64-bit signed)");
  }
}

TEST_CASE("deep nesting is refused with the place, in bounded time and stack") {
  // 200,000 levels overflowed RapidJSON's recursive parser (SIGSEGV).
  const std::string arrays(200000, '[');
  const std::string objects = [] {
    std::string s;
    for (int i = 0; i < 200000; ++i) s += "{\"a\":";
    return s;
  }();
  for (const std::string* text : {&arrays, &objects}) {
    std::string e = json_error(*text, "deep.json");
    CHECK(e.find("deep.json:1: column ") == 0);
    CHECK(e.find("invalid JSON: arrays and objects nested deeper than 256 levels") != std::string::npos);
    CHECK(error_of([&] { cct::parse_json_validated(*text, "deep.json", "mapping"); }) == e);
    CHECK(error_of([&] {
            rapidjson::Document d;
            cct::parse_validated_rapidjson(d, *text, "deep.json", "sir");
          }) == e);
  }
  CHECK(json_error(arrays, "deep.json") == "deep.json:1: column 257: invalid JSON: arrays and objects nested deeper than 256 levels");
  // The bound itself is accepted.
  std::string ok = std::string(cct::kMaxJsonDepth, '[') + std::string(cct::kMaxJsonDepth, ']');
  CHECK(cct::parse_json(ok, "ok.json").is_array());
}

TEST_CASE("a UTF-8 byte-order mark is skipped on every path") {
  const std::string bom = "\xEF\xBB\xBF";
  CHECK(cct::parse_json(bom + "{\"a\": 1}", "b.json").find("a")->as_int() == 1);
  CHECK(cct::parse_json_validated(bom + kMapping, "b.json", "mapping").is_object());
  rapidjson::Document d;
  // Validated while parsing: RapidJSON refused it there but not on the DOM path (exit 5, "a bug").
  CHECK_NOTHROW(cct::parse_validated_rapidjson(d, bom + kMapping, "b.json", "mapping"));
  CHECK(d.IsObject());
  // Columns count from after the mark, as an editor shows them.
  CHECK(json_error(bom + "[1,]", "b.json") == "b.json:1: column 4: invalid JSON: expected a value, found ']'");
  // Only at the start.
  CHECK(json_error("[1, " + bom + "2]", "b.json").find("b.json:1: column 5: invalid JSON: expected a value, found the byte \\xef") == 0);
}

TEST_CASE("duplicate keys are refused with the key and the place") {
  CHECK(json_error("{\"a\": 1,\n \"b\": {\"x\": 1, \"x\": 2}}", "dup.json") ==
        "dup.json:2: column 16: invalid JSON: duplicate key \"x\"");
  // Large objects use a hash set; the same key in other objects is fine.
  std::string big = "{";
  for (int i = 0; i < 40; ++i) big += "\"k" + std::to_string(i) + "\": {\"k1\": [{\"k1\": 1}, {\"k1\": 2}]}, ";
  CHECK(cct::parse_json(big + "\"z\": 0}", "big.json").size() == 41);
  CHECK(json_error(big + "\"k7\": 0}", "big.json").find("invalid JSON: duplicate key \"k7\"") != std::string::npos);
  // Keys are compared unescaped.
  CHECK(json_error(R"({"ab": 1, "a\u0062": 2})", "e.json") == "e.json:1: column 11: invalid JSON: duplicate key \"ab\"");
  CHECK(error_of([&] {
          rapidjson::Document d;
          cct::parse_validated_rapidjson(d, R"({"format": "cct-mapping", "format": "x"})", "dup.json", "mapping");
        }) == "dup.json:1: column 27: invalid JSON: duplicate key \"format\"");
}

TEST_CASE("NUL bytes and control characters are named as such") {
  using namespace std::string_literals;
  CHECK(json_error("{\"a\": \"x\0y\"}"s, "n.json") ==
        "n.json:1: column 9: invalid JSON: NUL byte inside a string (write it as \\u0000)");
  CHECK(json_error("{\"a\": 1}\0"s, "n.json") ==
        "n.json:1: column 9: invalid JSON: expected the end of the input after the JSON value, found a NUL byte");
  CHECK(json_error("[\0]"s, "n.json") == "n.json:1: column 2: invalid JSON: expected a value, found a NUL byte");
  CHECK(json_error("[\"a\tb\"]", "c.json") ==
        "c.json:1: column 4: invalid JSON: control character \\x09 inside a string (escape it as \\u00XX)");
  CHECK(json_error("[\"ab\ncd\"]", "c.json").find("c.json:1: column 5: invalid JSON: line break inside a string") == 0);
  // Escaped, a NUL is an ordinary character.
  CHECK(cct::parse_json(R"(["a\u0000b"])", "u.json").as_array()[0].as_string() == "a\0b"s);
}

TEST_CASE("strings: escapes and surrogate pairs decode to UTF-8, broken ones are refused") {
  CHECK(cct::parse_json(R"(["\"\\\/\b\f\n\r\t\u00e9\u20ac\ud83d\ude00"])", "s.json").as_array()[0].as_string() ==
        "\"\\/\b\f\n\r\t\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  CHECK(json_error(R"(["\ud83d"])", "s.json") == "s.json:1: column 3: invalid JSON: unpaired UTF-16 surrogate \\ud83d");
  CHECK(json_error(R"(["\ude00"])", "s.json") == "s.json:1: column 3: invalid JSON: unpaired UTF-16 surrogate \\ude00");
  CHECK(json_error(R"(["\u12g4"])", "s.json") == "s.json:1: column 7: invalid JSON: \\u must be followed by four hex digits");
  CHECK(json_error(R"(["\x"])", "s.json") == "s.json:1: column 4: invalid JSON: invalid escape \\x in a string");
  CHECK(json_error("[\"abc", "s.json") == "s.json:1: column 2: invalid JSON: string not closed before the end of the input");
}

TEST_CASE("strings: UTF-8 is read whole, a broken sequence is refused where it starts") {
  // One to four bytes, the edges of each range.
  CHECK(cct::parse_json("[\"a\xC2\x80\xDF\xBF\xE0\xA0\x80\xED\x9F\xBF\xEF\xBF\xBF\xF0\x90\x80\x80\xF4\x8F\xBF\xBF\"]", "u.json")
            .as_array()[0]
            .as_string() == "a\xC2\x80\xDF\xBF\xE0\xA0\x80\xED\x9F\xBF\xEF\xBF\xBF\xF0\x90\x80\x80\xF4\x8F\xBF\xBF");
  const std::string why = "invalid JSON: invalid UTF-8 byte ";
  // A lead byte whose continuation bytes are missing before the string ends
  // (the fuzzer's finding: RapidJSON's schema patterns read past the string).
  CHECK(json_error("[\"ab\xF0y\"]", "u.json") == "u.json:1: column 5: " + why + "\\xf0 in a string (JSON text must be UTF-8)");
  CHECK(json_error("[\"\xF0\x9F\x98\"]", "u.json") == "u.json:1: column 3: " + why + "\\xf0 in a string (JSON text must be UTF-8)");
  CHECK(json_error("[\"\xE2\x82", "u.json") == "u.json:1: column 3: " + why + "\\xe2 in a string (JSON text must be UTF-8)");
  // A stray continuation byte, overlong forms, a surrogate, beyond U+10FFFF, in keys too.
  for (const char* bad : {"\x80", "\xC0\xAF", "\xC1\xBF", "\xE0\x9F\xBF", "\xED\xA0\x80", "\xF0\x8F\xBF\xBF", "\xF4\x90\x80\x80",
                          "\xF5\x80\x80\x80", "\xFF"}) {
    CAPTURE(bad);
    CHECK(json_error("[\"" + std::string(bad) + "\"]", "u.json").find("u.json:1: column 3: " + why) == 0);
    CHECK(json_error("{\"" + std::string(bad) + "\": 1}", "u.json").find("u.json:1: column 3: " + why) == 0);
  }
}

TEST_CASE("malformed JSON: each error says what was expected and where") {
  CHECK(json_error("", "m.json") == "m.json:1: column 1: invalid JSON: expected a value, found the end of the input");
  CHECK(json_error("{\"a\" 1}", "m.json") == "m.json:1: column 6: invalid JSON: expected ':' after a key, found '1'");
  CHECK(json_error("{\"a\": 1 \"b\": 2}", "m.json") ==
        "m.json:1: column 9: invalid JSON: expected ',' or '}' after an object member, found '\"'");
  CHECK(json_error("[1 2]", "m.json") == "m.json:1: column 4: invalid JSON: expected ',' or ']' after an array element, found '2'");
  CHECK(json_error("{,}", "m.json") == "m.json:1: column 2: invalid JSON: expected a key in double quotes, found ','");
  CHECK(json_error("[01]", "m.json") == "m.json:1: column 3: invalid JSON: leading zeros are not allowed in numbers");
  CHECK(json_error("[1.]", "m.json") == "m.json:1: column 4: invalid JSON: expected a digit after '.'");
  CHECK(json_error("[1e+]", "m.json") == "m.json:1: column 5: invalid JSON: expected a digit in the exponent");
  CHECK(json_error("[-x]", "m.json") == "m.json:1: column 3: invalid JSON: expected a digit after '-'");
  CHECK(json_error("[NaN]", "m.json") == "m.json:1: column 2: invalid JSON: expected a value, found 'N'");
  CHECK(json_error("[tru]", "m.json") == "m.json:1: column 2: invalid JSON: invalid value (expected true, false or null)");
  CHECK(json_error("[1] [2]", "m.json") ==
        "m.json:1: column 5: invalid JSON: expected the end of the input after the JSON value, found '['");
  cct::Json j = cct::parse_json(" \t\r\n{ \"a\" : [ true , false , null , { } , [ ] ] } \n", "ws.json");
  CHECK(j.find("a")->size() == 5);
}

TEST_CASE("numbers beyond the integer range in enum-checked places validate without undefined behaviour") {
  // RapidJSON's enum hasher converted them to uint64 (UBSan: schema.h:180).
  // Without the guard this case fails under clang's UBSan (float-cast-overflow,
  // as in the fuzz build); GCC's -fsanitize=undefined does not check float casts.
  for (const char* x : {"1e308", "-1e308", "1.8446744073709552e19", "1e19"}) {
    CAPTURE(x);
    std::string text = R"({"format": )" + std::string(x) + R"(, "version": 1, "arch": "x", "batch": 1, "segments": []})";
    std::string e = error_of([&] { cct::parse_json_validated(text, "h.json", "mapping"); });
    CHECK(e.find("h.json: /format: ") == 0);
  }
}

TEST_CASE("json_double tells overflow from underflow by the first significant digit") {
  CHECK(!cct::json_double("1e309"));
  CHECK(!cct::json_double("0.001e312"));
  CHECK(!cct::json_double("-100e307"));
  CHECK(!cct::json_double("1234567890e300"));
  CHECK(*cct::json_double("0.001e311") == 1e308);
  CHECK(same_bits(*cct::json_double("0.0001e-321"), 0.0));
  CHECK(same_bits(*cct::json_double("-1000e-330"), -0.0));
  CHECK(same_bits(*cct::json_double("100.5e-330"), 0.0));
  CHECK(same_bits(*cct::json_double("0.000e-99999"), 0.0));
}
