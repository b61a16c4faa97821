// The one reader of perfloom's validated JSON files (model/json_fields.h): typed getters with bounds,
// nested paths in messages, unknown-field refusal, and hostile values that must not crash a message.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/calibration.h"
#include "model/gpu_database.h"
#include "model/input_error.h"
#include "model/json_fields.h"
#include "model/sim/llm_config.h"
#include "model/tuner/tuner_table.h"

using namespace perfloom;
using nlohmann::json;

namespace {

class TestError : public InputError {
 public:
  using InputError::InputError;
};

constexpr FieldErrorFn kRaise = &throw_field_error<TestError>;

JsonFields reader(const json& doc, JsonReadOptions options = {}) {
  return JsonFields(doc, "t.json", kRaise, "", options);
}

// The error `f` throws; fails the test when it throws none.
template <class F>
TestError error_of(F&& f) {
  try {
    f();
  } catch (const TestError& e) {
    return e;
  }
  ADD_FAILURE() << "no error";
  return TestError("", "", "");
}

}  // namespace

TEST(JsonFields, ReadsEachTypeRequiredAndOptional) {
  const json doc = json::parse(R"({"n": 2.5, "i": 7, "f": 4.0, "s": "abc", "b": true, "o": {"x": 1}, "a": [1, 2]})");
  const JsonFields r = reader(doc);
  EXPECT_DOUBLE_EQ(r.number("n"), 2.5);
  EXPECT_EQ(r.integer("i"), 7);
  EXPECT_EQ(r.integer("f"), 4) << "a whole number written with a fraction";
  EXPECT_EQ(r.string("s"), "abc");
  EXPECT_TRUE(r.boolean("b"));
  EXPECT_EQ(r.object("o").integer("x"), 1);
  EXPECT_EQ(r.array("a").size(), 2u);
  EXPECT_DOUBLE_EQ(r.number_or("none", 9.5), 9.5);
  EXPECT_EQ(r.integer_or("none", -3), -3);
  EXPECT_EQ(r.string_or("none", "d"), "d");
  EXPECT_FALSE(r.boolean_or("none", false));
  EXPECT_FALSE(r.optional_object("none").has_value());
  EXPECT_FALSE(r.optional("none").has_value());
  EXPECT_TRUE(r.has("s"));
  EXPECT_FALSE(r.has("none"));
  EXPECT_EQ(r.keys(), (std::vector<std::string>{"a", "b", "f", "i", "n", "o", "s"}));
}

TEST(JsonFields, RefusesNamingTheFileTheFieldAndTheReason) {
  const json doc = json::parse(R"({"n": "1830", "i": 131.5, "s": "", "b": 1, "o": [1], "a": {}, "k": 5})");
  const JsonFields r = reader(doc);
  auto e = error_of([&] { r.number("n"); });
  EXPECT_EQ(e.file(), "t.json");
  EXPECT_EQ(e.field(), "n");
  EXPECT_EQ(e.reason(), "expected a number, got string \"1830\"");
  EXPECT_EQ(std::string(e.what()), "t.json: field 'n': expected a number, got string \"1830\"");
  EXPECT_EQ(error_of([&] { r.integer("i"); }).reason(), "must be a whole number (got 131.5)");
  EXPECT_EQ(error_of([&] { r.string("s"); }).reason(), "must not be empty");
  EXPECT_EQ(r.string_or("s", "x"), "") << "an optional string may be empty";
  EXPECT_EQ(error_of([&] { r.boolean("b"); }).reason(), "expected true or false, got number 1");
  EXPECT_EQ(error_of([&] { r.object("o"); }).reason(), "expected an object, got array");
  EXPECT_EQ(error_of([&] { r.array("a"); }).reason(), "expected an array, got object");
  e = error_of([&] { r.number("missing"); });
  EXPECT_EQ(e.field(), "missing");
  EXPECT_EQ(e.reason(), "is required");
  e = error_of([&] { r.fail("k", "is odd"); });
  EXPECT_EQ(e.field(), "k");
  EXPECT_EQ(e.reason(), "is odd");
  e = error_of([&] { r.fail("the whole object"); });
  EXPECT_EQ(e.field(), "");
  // Another wording for an absent field where the file kind says it so.
  const JsonFields hf = reader(doc, {false, "missing (required for this architecture)"});
  EXPECT_EQ(error_of([&] { hf.integer("hidden_size"); }).reason(), "missing (required for this architecture)");
}

TEST(JsonFields, NumbersMustBeFiniteAndWithinTheirBounds) {
  const json doc = json::parse(R"({"neg": -3, "big": 3.35e9, "zero": 0, "one": 1, "half": 0.5, "huge": 1e300,
                                   "u": 18446744073709551615})");
  const JsonFields r = reader(doc);
  EXPECT_EQ(error_of([&] { r.number("neg", NumberRange::positive()); }).reason(), "must be positive (got -3)");
  EXPECT_EQ(error_of([&] { r.number("big", NumberRange::between(10, 100000)); }).reason(),
            "must be between 10 and 100000 (got 3350000000.0)");
  EXPECT_EQ(error_of([&] { r.integer("neg", NumberRange::at_least(1)); }).reason(), "must be at least 1 (got -3)");
  const NumberRange probability = NumberRange::in(0, 1, true, false).named("a probability");
  EXPECT_EQ(error_of([&] { r.number("zero", probability); }).reason(), "must be a probability in (0, 1] (got 0)");
  EXPECT_DOUBLE_EQ(r.number("one", probability), 1.0);
  EXPECT_DOUBLE_EQ(r.number("half", probability), 0.5);
  EXPECT_EQ(error_of([&] { r.integer("half", NumberRange::in(0, 48, false, true)); }).reason(),
            "must be a whole number (got 0.5)");
  EXPECT_EQ(error_of([&] { r.integer("one", NumberRange::in(0, 1, false, true)); }).reason(),
            "must be in [0, 1) (got 1)");
  EXPECT_EQ(r.number("neg", NumberRange::at_least(-3)), -3);
  // Whole numbers beyond int64_t are refused, not wrapped.
  EXPECT_EQ(error_of([&] { r.integer("huge"); }).reason(), "is too large (got 1e+300)");
  EXPECT_EQ(error_of([&] { r.integer("u"); }).reason(), "is too large (got 18446744073709551615)");
  // A value built in code can hold what JSON text cannot.
  const json inf = {{"x", std::numeric_limits<double>::infinity()}};
  EXPECT_NE(error_of([&] { reader(inf).number("x"); }).reason().find("must be a finite number"), std::string::npos);
}

TEST(JsonFields, NestedObjectsAndArraysCarryTheirPath) {
  const json doc =
      json::parse(R"({"memory": {"bandwidth_gbps": -3, "levels": [{"f": 1}, {"f": 9}], "rows": [[1, 2], [3, "x"]]}})");
  const JsonFields r = JsonFields(doc, "h100-sxm.json", kRaise);
  const JsonFields memory = r.object("memory");
  EXPECT_EQ(memory.path(), "memory");
  auto e = error_of([&] { memory.number("bandwidth_gbps", NumberRange::positive()); });
  EXPECT_EQ(std::string(e.what()), "h100-sxm.json: field 'memory.bandwidth_gbps': must be positive (got -3)");
  const auto levels = memory.array("levels");
  ASSERT_EQ(levels.size(), 2u);
  EXPECT_EQ(levels[1].path(), "memory.levels[1]");
  EXPECT_EQ(error_of([&] { levels[1].object().number("f", NumberRange::between(0.5, 3)); }).field(),
            "memory.levels[1].f");
  const auto rows = memory.array("rows");
  EXPECT_EQ(error_of([&] { rows[1].array()[1].integer(); }).field(), "memory.rows[1][1]");
  EXPECT_EQ(error_of([&] { rows[0].with_path("memory.rows[0].pair").fail("bad"); }).field(), "memory.rows[0].pair");
  EXPECT_EQ(error_of([&] { memory.fail("levels", "too few"); }).field(), "memory.levels");
  // A reader of a value deep in a document, as a parser of one block builds it.
  const JsonFields block = JsonValue(doc.at("memory"), "c.json", kRaise, "sustained_power").object();
  EXPECT_EQ(error_of([&] { block.integer("nope"); }).field(), "sustained_power.nope");
}

TEST(JsonFields, RefusesFieldsNoGetterRead) {
  const json doc = json::parse(R"({"sm_count": 132, "sm_cout": 132, "notes": "x", "opt": 1})");
  const JsonFields r = reader(doc);
  r.integer("sm_count");
  r.ignore("notes");
  r.number_or("opt", 0);  // read: known, whatever its value
  r.number_or("absent", 0);
  const auto e = error_of([&] { r.refuse_unknown(); });
  EXPECT_EQ(e.field(), "sm_cout");
  EXPECT_EQ(e.reason(), "is not a known field (misspelt?)");
  r.ignore("sm_cout");
  r.refuse_unknown();
}

TEST(JsonFields, NullReadsAsAbsentWhereTheFileKindSaysSo) {
  const json doc = json::parse(R"({"sliding_window": null})");
  EXPECT_EQ(reader(doc, {true, "missing"}).integer_or("sliding_window", 0), 0);
  EXPECT_FALSE(reader(doc, {true, "missing"}).has("sliding_window"));
  EXPECT_EQ(error_of([&] { reader(doc, {true, "missing"}).integer("sliding_window"); }).reason(), "missing");
  EXPECT_EQ(error_of([&] { reader(doc).integer_or("sliding_window", 0); }).reason(),
            "expected a whole number, got null");
}

TEST(JsonFields, ADeeplyNestedValueInAnErrorIsNamedByItsTypeOnly) {
  // 100,000 levels: dump() would recurse once per level, far past any stack.
  json deep = json::array();
  for (int i = 0; i < 100000; ++i) {
    json outer = json::array();
    outer.push_back(std::move(deep));
    deep = std::move(outer);
  }
  json doc = json::object();
  doc["x"] = std::move(deep);
  const JsonFields r = reader(doc);
  EXPECT_EQ(error_of([&] { r.number("x"); }).reason(), "expected a number, got array");
  EXPECT_EQ(error_of([&] { r.number("x", NumberRange::positive()); }).reason(), "expected a number, got array");
  EXPECT_EQ(error_of([&] { r.object("x"); }).reason(), "expected an object, got array");
  EXPECT_EQ(error_of([&] { r.array("x")[0].string(); }).field(), "x[0]");
  EXPECT_EQ(json_excerpt(doc["x"]), "an array of 1 entry");
}

TEST(JsonFields, HugeStringsAndKeysAreCutInMessages) {
  const std::string huge(1000000, 'a');
  json doc = {{"s", huge}, {huge, 1}};
  const JsonFields r = reader(doc);
  const auto e = error_of([&] { r.number("s"); });
  EXPECT_LT(std::string(e.what()).size(), 300u) << "a megabyte value must not travel into the message";
  EXPECT_NE(e.reason().find("(1000000 bytes)"), std::string::npos) << e.reason();
  const auto unknown = error_of([&] { r.refuse_unknown(); });
  EXPECT_LT(std::string(unknown.what()).size(), 300u);
  EXPECT_EQ(unknown.field().substr(0, 5), "aaaaa");
  EXPECT_NE(unknown.field().find("..."), std::string::npos);
  // A cut never splits a UTF-8 sequence, and bytes that are not UTF-8 do not throw.
  std::string euros;
  for (int i = 0; i < 100; ++i) euros += "\xe2\x82\xac";  // U+20AC, three bytes
  EXPECT_EQ(quote_excerpt(euros, 10), "\"\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\"... (300 bytes)");
  EXPECT_NO_THROW(quote_excerpt("\xff\xfe bad"));
}

TEST(JsonFields, ParsesOneObjectWithBoundedNesting) {
  EXPECT_EQ(parse_json_object(R"({"a": [1, {"b": 2}]})", "t.json", kRaise).at("a")[1].at("b"), 2);
  auto e = error_of([&] { parse_json_object("{\"a\": ", "t.json", kRaise); });
  EXPECT_EQ(e.file(), "t.json");
  EXPECT_EQ(e.field(), "");
  EXPECT_EQ(e.reason().substr(0, 15), "not valid JSON:");
  e = error_of([&] { parse_json_object("[1, 2]", "t.json", kRaise, "a Hugging Face config.json"); });
  EXPECT_EQ(e.reason(), "not a JSON object at the top level (got array) (expected a Hugging Face config.json)");
  EXPECT_NE(error_of([&] { parse_json_object("", "t.json", kRaise); }).reason().find("not valid JSON"),
            std::string::npos);
  // 100,000 levels of text are refused at the limit, without building them.
  const std::string deep = "{\"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  e = error_of([&] { parse_json_object(deep, "t.json", kRaise); });
  EXPECT_EQ(e.reason(), "nests deeper than 64 levels");
  // Exactly the limit parses: the document is level 1.
  const std::string at_limit = std::string(63, '[');
  EXPECT_NO_THROW(parse_json_object("{\"x\": " + at_limit + std::string(63, ']') + "}", "t.json", kRaise));
  EXPECT_EQ(error_of([&] {
              parse_json_object("{\"x\": " + at_limit + "[]" + std::string(63, ']') + "}", "t.json", kRaise);
            }).reason(),
            "nests deeper than 64 levels");
  // An unterminated megabyte string: the parser's excerpt of it is cut.
  const std::string open = "{\"x\": \"" + std::string(1000000, 'a');
  e = error_of([&] { parse_json_object(open, "t.json", kRaise); });
  EXPECT_LT(std::string(e.what()).size(), 500u);
}

TEST(JsonFields, RangesDescribeThemselves) {
  EXPECT_EQ(NumberRange::between(0.05, 20).describe(), "between 0.05 and 20");
  EXPECT_EQ(NumberRange::between(1, 1e6).describe(), "between 1 and 1000000");
  EXPECT_EQ(NumberRange::at_least(0).describe(), "at least 0");
  EXPECT_EQ(NumberRange::positive().describe(), "positive");
  EXPECT_EQ(NumberRange::in(0, 1, true, false).describe(), "in (0, 1]");
  EXPECT_EQ(NumberRange::any().describe(), "");
  EXPECT_TRUE(NumberRange::any().contains(-1e300));
  EXPECT_FALSE(NumberRange::positive().contains(0));
}

// Each file kind that reads through JsonFields refuses hostile text with its own error and a short message.
TEST(JsonFields, EveryValidatedFileRefusesHostileInputWithABoundedMessage) {
  const std::string deep = "{\"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  const std::string huge(1000000, 'z');
  const std::string with_huge = "{\"schema\": \"" + huge + "\", \"id\": \"" + huge + "\", \"gpu_name\": \"" + huge +
                                "\", \"architectures\": [\"" + huge + "\"]}";
  auto expect_refused = [&](auto&& parse, const std::string& kind) {
    for (const std::string* text : {&deep, &with_huge}) {
      try {
        parse(*text);
        ADD_FAILURE() << kind << " accepted hostile text";
      } catch (const std::exception& e) {
        EXPECT_LT(std::string(e.what()).size(), 1000u) << kind << ": " << std::string(e.what()).substr(0, 200);
        if (text == &deep) {
          EXPECT_NE(std::string(e.what()).find("nests deeper than 64 levels"), std::string::npos) << kind;
        }
      }
    }
  };
  expect_refused([](const std::string& t) { parse_gpu_spec(t, "g.json"); }, "GPU spec");
  expect_refused([](const std::string& t) { parse_calibration(t, "c.json"); }, "calibration");
  expect_refused([](const std::string& t) { sim::parse_llm_config(t, "config.json"); }, "LLM config");
  expect_refused([](const std::string& t) { tuner::parse_tuner_table(t, "t.json"); }, "tuner table");
  // A megabyte GPU id passes its character check without std::regex (which recurses per character).
  const std::string id = "{\"schema\": \"perfloom-gpu/1\", \"id\": \"" + std::string(1000000, 'a') + "\"}";
  EXPECT_THROW(parse_gpu_spec(id, "g.json"), GpuSpecError);
}
