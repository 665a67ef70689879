// @brief JsonWriter (core/io/json_writer.h): both layouts nest as documented, strings go through json_quote, numbers
// are deterministic (integers in decimal, doubles in fmt's shortest round-trip text or fixed decimals, non-finite as
// null), and misuse (a value without its key, a container left open) is an error, not broken JSON.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "core/error.h"
#include "core/io/json_writer.h"
#include "core/io/output_file.h"

using hisparse::JsonWriter;

TEST_CASE("JsonWriter lays objects and arrays out on lines or inline") {
  // Expected: kLines puts every element on its own line, `indent` spaces per level, the closing bracket at the
  // parent's indentation; kInline separates by ", "; an empty container is "{}" / "[]" in either layout.
  JsonWriter j(2);
  j.begin_object().member("a", 1).key("list").begin_array(JsonWriter::Layout::kInline).number(1).number(2).end_array();
  j.key("inner").begin_object().member("b", true).end_object();
  j.key("empty").begin_array().end_array().end_object();
  CHECK(j.str() == "{\n  \"a\": 1,\n  \"list\": [1, 2],\n  \"inner\": {\n    \"b\": true\n  },\n  \"empty\": []\n}");

  // Indent 0 (report.json's top level): members start their lines unindented.
  JsonWriter k(0);
  k.begin_object().member("s", "x").key("runs").begin_array().raw("{\"r\": 1}").raw("{\"r\": 2}").end_array().end_object();
  CHECK(k.str() == "{\n\"s\": \"x\",\n\"runs\": [\n{\"r\": 1},\n{\"r\": 2}\n]\n}");
}

TEST_CASE("JsonWriter's strings are json_quote's and its numbers are deterministic") {
  // Expected: the same escaping as json_quote (quote, backslash, control characters as \u00XX).
  const std::string odd = "a\"b\\c\n\x01";
  JsonWriter s;
  s.string(odd);
  CHECK(s.str() == hisparse::json_quote(odd));
  CHECK(s.str() == "\"a\\\"b\\\\c\\u000a\\u0001\"");

  // Expected: integers in full (int64 extremes included), doubles as the shortest text that reads back, fixed()
  // rounded to its decimals, and NaN / infinity as null (JSON has neither).
  JsonWriter n(0);
  n.begin_array(JsonWriter::Layout::kInline)
      .number(std::numeric_limits<int64_t>::min())
      .number(uint64_t{18446744073709551615u})
      .number(80.0)
      .number(0.1)
      .number(1e30)
      .fixed(25.3456, 2)
      .number(std::nan(""))
      .fixed(std::numeric_limits<double>::infinity(), 3)
      .null()
      .boolean(false)
      .end_array();
  CHECK(n.str() == "[-9223372036854775808, 18446744073709551615, 80, 0.1, 1e+30, 25.35, null, null, null, false]");
}

TEST_CASE("JsonWriter refuses what would not be JSON") {
  // Expected: each misuse throws hisparse::Error naming it instead of producing broken text.
  JsonWriter a;
  a.begin_object();
  CHECK_THROWS_AS(a.number(1), hisparse::Error);  // a member without its key
  JsonWriter b;
  b.begin_array();
  CHECK_THROWS_AS(b.key("x"), hisparse::Error);  // a key inside an array
  CHECK_THROWS_AS(b.str(), hisparse::Error);     // still open
  CHECK_THROWS_AS(b.end_object(), hisparse::Error);
  JsonWriter c;
  c.number(1);
  CHECK_THROWS_AS(c.number(2), hisparse::Error);  // a second top-level value
}

TEST_CASE("JsonWriter's significant-digit numbers follow fmt's {:.Ng}, whole values as integers when asked") {
  // Expected: general(v, N) is fmt's "{:.Ng}" (6 digits: 1/3 -> 0.333333, 1.5e9 -> 1.5e+09); whole_or_general writes
  // a whole value below 9e15 as an integer (1e12 -> 1000000000000, which {:.10g} would write as 1e+12) and any
  // other value as general; both write null for non-finite values.
  JsonWriter g(0);
  g.begin_array(JsonWriter::Layout::kInline)
      .general(1.0 / 3.0, 6)
      .general(1.5e9, 6)
      .general(std::numeric_limits<double>::infinity(), 6)
      .whole_or_general(1e12, 10)
      .whole_or_general(-7.0, 10)
      .whole_or_general(2.0 / 3.0, 10)
      .whole_or_general(1e16, 10)
      .whole_or_general(std::nan(""), 10)
      .end_array();
  CHECK(g.str() == "[0.333333, 1.5e+09, null, 1000000000000, -7, 0.6666666667, 1e+16, null]");
}

TEST_CASE("JsonWriter's layout exceptions: same line, new line, and a kLines container at a given column") {
  // Expected: same_line() puts the next member of a kLines object after ", " on the current line; new_line() breaks
  // an inline container's next element onto a new line at its nesting depth (new_line(c): at c spaces) with the
  // comma before the break; begin_array(kLines, 6) puts its elements at 6 spaces and its "]" at 6 - indent.
  JsonWriter j(2);
  j.begin_object().member("a", 1).same_line().member("b", 2).member("c", 3);
  j.key("d").begin_object(JsonWriter::Layout::kInline).member("x", 1).new_line().member("y", 2);
  j.new_line(5).member("z", 3).end_object();
  j.key("e").begin_object(JsonWriter::Layout::kInline).key("f").begin_array(JsonWriter::Layout::kLines, 6);
  j.number(1).number(2).end_array().end_object().end_object();
  CHECK(j.str() ==
        "{\n  \"a\": 1, \"b\": 2,\n  \"c\": 3,\n  \"d\": {\"x\": 1,\n    \"y\": 2,\n     \"z\": 3},\n"
        "  \"e\": {\"f\": [\n      1,\n      2\n    ]}\n}");
}
