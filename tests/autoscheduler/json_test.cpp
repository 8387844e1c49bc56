// The tuning database's JSON: values survive dump and parse; malformed text is a
// ParseError saying where, never a guess.
#include <gtest/gtest.h>

#include "json.h"

namespace json = kiln::autoschedule::json;

TEST(Json, RoundTripsEveryKindOfValue) {
  const json::Value v = json::Object{{"s", "a \"quoted\"\n\ttab \\ and \x01"},
                                     {"n", 1.0 / 3.0},
                                     {"i", -42},
                                     {"b", true},
                                     {"z", json::Value()},
                                     {"a", json::Array{1, "two", json::Object{}}},
                                     {"e", json::Array{}}};
  const json::Value back = json::parse(json::dump(v));
  EXPECT_EQ(back.at("s").as_string(), v.at("s").as_string());
  EXPECT_EQ(back.at("n").as_number(), 1.0 / 3.0);  // 17 digits: exact
  EXPECT_EQ(back.at("i").as_number(), -42);
  EXPECT_TRUE(back.at("b").as_bool());
  EXPECT_TRUE(back.at("z").is_null());
  ASSERT_EQ(back.at("a").as_array().size(), 3u);
  EXPECT_EQ(back.at("a").as_array()[1].as_string(), "two");
  EXPECT_TRUE(back.at("a").as_array()[2].as_object().empty());
  EXPECT_TRUE(back.at("e").as_array().empty());
  EXPECT_EQ(json::dump(back), json::dump(v));
}

TEST(Json, MalformedTextIsAParseErrorWithItsPosition) {
  for (const char* bad : {"", "{", "{\"a\": }", "[1, 2", "{\"a\": 1,}", "\"open", "nul", "1 2", "{\"a\" 1}", "-",
                          "{\"a\": \"\\q\"}", "[1] // comment"}) {
    try {
      json::parse(bad);
      ADD_FAILURE() << "parsed: " << bad;
    } catch (const json::ParseError& e) {
      EXPECT_NE(e.message.find("at byte"), std::string::npos) << bad << ": " << e.message;
    }
  }
}

TEST(Json, NumbersBeyondADoubleAreParseErrors) {
  try {
    json::parse("[1e999]");
    ADD_FAILURE() << "parsed 1e999";
  } catch (const json::ParseError& e) {
    EXPECT_NE(e.message.find("number overflow parsing '1e999'"), std::string::npos) << e.message;
  }
}

TEST(Json, WholeNumbersPrintAsIntegers) {
  EXPECT_EQ(json::dump(json::Object{{"version", 1}, {"x", 0.5}}), "{\n  \"version\": 1,\n  \"x\": 0.5\n}\n");
}

TEST(Json, WrongKindsAndMissingMembersAreParseErrors) {
  const json::Value v = json::parse("{\"a\": 1}");
  EXPECT_THROW(v.at("a").as_string(), json::ParseError);
  EXPECT_THROW(v.at("b"), json::ParseError);
  EXPECT_THROW(v.as_array(), json::ParseError);
  EXPECT_EQ(v.at("a").as_number(), 1);
}

// A \u escape is exactly four hex digits ("\u-001" was once read as -1, the byte 0xFF).
// Deep nesting is refused before the conversion could exhaust the stack.
TEST(Json, UnicodeEscapesAreFourHexDigitsAndNestingIsBounded) {
  for (const char* bad : {"\"\\u-001\"", "\"\\u+7ff\"", "\"\\u 7ff\"", "\"\\u12\"", "\"\\u00g0\""}) {
    try {
      json::parse(bad);
      ADD_FAILURE() << "parsed: " << bad;
    } catch (const json::ParseError& e) {
      EXPECT_NE(e.message.find("'\\u' must be followed by 4 hex digits"), std::string::npos) << bad << ": " << e.message;
    }
  }
  EXPECT_EQ(json::parse("\"\\u00e9\\u0041\\u07FF\"").as_string(), "\xc3\xa9" "A" "\xdf\xbf");
  EXPECT_NO_THROW(json::parse(std::string(64, '[') + std::string(64, ']')));
  try {
    json::parse(std::string(100000, '['));
    ADD_FAILURE() << "parsed 100000 ['s";
  } catch (const json::ParseError& e) {
    EXPECT_NE(e.message.find("nesting deeper than 64"), std::string::npos) << e.message;
  }
}
