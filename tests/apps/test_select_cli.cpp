// @brief `hisparse select` end to end on the shipped SmolLM2 keys and queries (first steps only, to keep the test
// short): every selector in the table, oracle recall 1, select.json / select.csv / select.png, the written traces
// replayable by `hisparse replay`, and clear errors for missing or broken input.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/apps/cli_test_util.h"

namespace fs = std::filesystem;
using hisparse::test::run;
using hisparse::test::scratch_dir;
using hisparse::test::slurp;

namespace {
const std::string kKq = std::string(HISPARSE_SOURCE_DIR) + "/traces/real/kq/req_0_kq.npz";
}

TEST_CASE("hisparse select on the shipped SmolLM2 data: every selector, oracle recall 1, outputs, replayable traces") {
  const fs::path dir = scratch_dir("select_cli");
  const fs::path out = dir / "out", tr = dir / "traces";
  const auto r = run("select --kq " + kKq + " --steps 24 --top-k 128 --buffer-multiples 1,2 --threads 2 --out " +
                         out.string() + " --write-traces " + tr.string(),
                     dir);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  for (const char* sel : {"oracle", "indexer", "quest", "clusterkv", "double-sparse", "sink-recent"})
    CHECK(r.out.find(std::string("\n") + sel + " ") != std::string::npos);
  // Oracle rows: recall exactly 1 (all layers, then each of the 4 recorded layers).
  size_t oracle_rows = 0;
  for (size_t p = r.out.find("\noracle "); p != std::string::npos; p = r.out.find("\noracle ", p + 1)) {
    const std::string line = r.out.substr(p + 1, r.out.find('\n', p + 1) - p - 1);
    CHECK(line.find(" 1.0000 ") != std::string::npos);
    ++oracle_rows;
  }
  CHECK(oracle_rows == 5);
  const std::string json = slurp(out / "select.json");
  CHECK(json.find("\"selector\": \"oracle\", \"top_k\": 128, \"layer\": \"all\", \"granularity\": \"token\", "
                  "\"page_size\": 0, \"kv\": \"shared\", \"unit_bytes\": 768, \"step_layers\": 96, \"recall\": 1.000000") !=
        std::string::npos);
  CHECK(json.find("\"model_layers\": [0, 9, 19, 29]") != std::string::npos);
  CHECK(slurp(out / "select.csv").rfind("selector,top_k,layer,", 0) == 0);
  CHECK(fs::file_size(out / "select.png") > 1000);
  CHECK(!fs::exists(out / "select.json.tmp"));

  // A written trace replays, and its sglang-lru misses at H = K equal what select reported.
  REQUIRE(fs::exists(tr / "quest_k128.hstr"));
  const auto rep = run("replay --trace " + (tr / "quest_k128.hstr").string() +
                           " --buffer-sizes 128 --policy sglang-lru --row-bytes 768 --quiet --out " + (dir / "rep").string() + " --no-plots",
                       dir);
  INFO(rep.out << rep.err);
  CHECK(rep.status == 0);
  const std::string rj = slurp(dir / "rep" / "replay.json");
  const size_t q = json.find("\"selector\": \"quest\", \"top_k\": 128, \"layer\": \"all\"");
  REQUIRE(q != std::string::npos);
  const size_t m = json.find("\"misses\": ", q);
  const std::string misses = json.substr(m + 10, json.find(',', m) - m - 10);
  CHECK(rj.find("\"misses\": " + misses + ",") != std::string::npos);
}

TEST_CASE("hisparse select refuses missing files, missing arrays and unknown selectors, naming them") {
  const fs::path dir = scratch_dir("select_cli_err");
  auto r = run("select --kq " + (dir / "nope.npz").string(), dir);
  CHECK(r.status != 0);
  CHECK(r.err.find("nope.npz: no such file") != std::string::npos);

  const std::string fixture = std::string(HISPARSE_SOURCE_DIR) + "/tests/traces/data/npz/kq_dir";
  fs::create_directories(dir / "kq");
  fs::copy_file(fixture + "/keys.npy", dir / "kq" / "keys.npy");
  r = run("select --kq " + (dir / "kq").string(), dir);
  CHECK(r.status != 0);
  CHECK(r.err.find("no array 'queries'") != std::string::npos);

  r = run("select --kq " + fixture + " --selectors oracle,h2o --top-k 4 --clusters 2", dir);
  CHECK(r.status != 0);
  CHECK(r.err.find("unknown selector 'h2o'") != std::string::npos);
}

TEST_CASE("hisparse select at page granularity and per KV head; its page traces replay to the same misses") {
  const fs::path dir = scratch_dir("select_cli_pages");
  const fs::path out = dir / "out", tr = dir / "traces";
  const auto r = run("select --kq " + kKq + " --selectors oracle,quest,sink-recent --steps 6 --top-k 128 "
                         "--buffer-multiples 1,2 --granularity token,page --page-size 16 --per-kv-head --threads 2 "
                         "--no-plots --out " + out.string() + " --write-traces " + tr.string(),
                     dir);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  for (const char* row : {"\noracle        token   shared ", "\noracle        page16  shared ",
                          "\nquest         page16  per-kv-head ", "\nsink-recent   page16  per-kv-head "})
    CHECK(r.out.find(row) != std::string::npos);
  CHECK(r.out.find("recall per KV head group") != std::string::npos);
  const std::string json = slurp(out / "select.json");
  // The page oracle's own recall is 1; SmolLM2 has 3 KV heads, so a per-KV-head page miss moves 16 x 768 / 3 bytes.
  CHECK(json.find("\"selector\": \"oracle\", \"top_k\": 128, \"layer\": \"all\", \"granularity\": \"page\", "
                  "\"page_size\": 16, \"kv\": \"shared\", \"unit_bytes\": 12288, \"step_layers\": 24") != std::string::npos);
  CHECK(json.find("\"page_size\": 16, \"kv\": \"per-kv-head\", \"unit_bytes\": 4096,") != std::string::npos);
  CHECK(json.find("\"page_recall\": 1.000000") != std::string::npos);
  CHECK(slurp(out / "select.md").find("| quest | page16 | per-kv-head |") != std::string::npos);
  REQUIRE(fs::exists(tr / "quest_k128_p16.hstr"));
  REQUIRE(fs::exists(tr / "quest_k128_p16_kvh.hstr"));

  // `hisparse replay --page-size 16` of the written token trace counts the page misses select reported.
  const auto rep = run("replay --trace " + (tr / "quest_k128_p16.hstr").string() +
                           " --page-size 16 --buffer-sizes 128 --policy sglang-lru --row-bytes 768 --quiet --no-plots --out " +
                           (dir / "rep").string(),
                       dir);
  INFO(rep.out << rep.err);
  REQUIRE(rep.status == 0);
  CHECK(rep.out.find("top_k 8 pages") != std::string::npos);
  CHECK(rep.out.find("128 tokens = 8 pages; a miss moves one page = 12288 B") != std::string::npos);
  const size_t q = json.find("\"selector\": \"quest\", \"top_k\": 128, \"layer\": \"all\", \"granularity\": \"page\", "
                             "\"page_size\": 16, \"kv\": \"shared\"");
  REQUIRE(q != std::string::npos);
  const size_t m = json.find("\"misses\": ", q);
  const std::string misses = json.substr(m + 10, json.find(',', m) - m - 10);
  CHECK(slurp(dir / "rep" / "replay.json").find("\"misses\": " + misses + ",") != std::string::npos);

  // Bad page sizes and budgets are refused, naming the value.
  auto e = run("select --kq " + kKq + " --steps 2 --selectors oracle --granularity page --page-size 0", dir);
  CHECK(e.status != 0);
  CHECK(e.err.find("--page-size: page size 0 outside [1,") != std::string::npos);
  e = run("select --kq " + kKq + " --steps 2 --selectors oracle --granularity page --page-size 48 --top-k 128", dir);
  CHECK(e.status != 0);
  CHECK(e.err.find("--top-k 128 is not a multiple of --page-size 48") != std::string::npos);
  e = run("select --kq " + kKq + " --steps 2 --selectors oracle --granularity pages", dir);
  CHECK(e.status != 0);
  CHECK(e.err.find("--granularity 'pages' unknown") != std::string::npos);
  const std::string trace = (tr / "quest_k128_p16.hstr").string();
  e = run("replay --trace " + trace + " --page-size -4 --buffer-sizes 128 --quiet", dir);
  CHECK(e.status != 0);
  CHECK(e.err.find("page size -4 outside [1,") != std::string::npos);
  e = run("replay --trace " + trace + " --page-size 16 --buffer-sizes 120 --quiet", dir);
  CHECK(e.status != 0);
  CHECK(e.err.find("--buffer-sizes 120 with --page-size 16: expected a multiple of 16 tokens") != std::string::npos);
  e = run("replay --trace " + trace + " --page-size 16 --buffer-sizes 64 --quiet", dir);
  CHECK(e.status != 0);
  CHECK(e.err.find("at least the 8 pages") != std::string::npos);
}
