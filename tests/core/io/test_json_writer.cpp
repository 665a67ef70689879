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
