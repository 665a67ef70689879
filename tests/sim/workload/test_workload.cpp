// @brief Workload readers (Mooncake JSON lines, Azure CSV), the seeded generator and the bundled workload YAMLs.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "sim/workload/workload.h"
#include "tests/sim/workload/temp_file.h"

using namespace hisparse::sim;
using hisparse::sim::test::write_temp;

TEST_CASE("Mooncake JSON lines: ms timestamps, lengths, prefix blocks; other fields ignored") {
  const std::string p = write_temp("wl_test.jsonl",
                                   "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 500, \"hash_ids\": [0, 1, 7], \"x\": 1}\n"
                                   "{\"timestamp\": 1500, \"input_length\": 10, \"output_length\": 2, \"hash_ids\": []}\n");
  const Workload w = read_mooncake_trace(p);
  // Expected: 2 requests; 1500 ms = 1.5e9 ns.
  REQUIRE(w.requests.size() == 2);
  CHECK(w.requests[0].input_tokens == 1100);
  CHECK(w.requests[0].output_tokens == 500);
  CHECK(w.requests[1].arrival == 1'500'000'000);
  // Expected: ceil(1100 / 512) = 3 block ids kept in order; an empty list is no blocks; the block is 512 tokens.
  CHECK(w.requests[0].prefix_blocks == std::vector<uint64_t>{0, 1, 7});
  CHECK(w.requests[1].prefix_blocks.empty());
  CHECK(w.block_tokens == 512);
  // Expected: a count that does not cover the prompt, a negative id or an unclosed list is refused with file:line.
  for (const char* ids : {"[0, 1]", "[0, -1, 2]", "[0, 1, 2"}) {
    const std::string hostile = write_temp("wl_ids.jsonl", std::string("{\"timestamp\": 0, \"input_length\": 1100, "
                                                                       "\"output_length\": 5, \"hash_ids\": ") + ids + "}\n");
    CHECK_THROWS_WITH_AS(read_mooncake_trace(hostile), doctest::Contains("wl_ids.jsonl:1: "), hisparse::Error);
    std::remove(hostile.c_str());
  }
  const std::string bad = write_temp("wl_bad.jsonl", "{\"timestamp\": 0, \"input_length\": 5}\n");
  CHECK_THROWS_WITH_AS(read_mooncake_trace(bad), doctest::Contains("wl_bad.jsonl:1: field 'output_length' is missing"),
                       hisparse::Error);
  std::remove(p.c_str());
  std::remove(bad.c_str());
}

TEST_CASE("Azure CSV: datetime stamps become ns from the first row") {
  const std::string p = write_temp("wl_test.csv",
                                   "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                   "2023-11-16 18:15:46.6805900,374,44\n"
                                   "2023-11-16 18:15:50.9951690,396,109\n"
                                   "2023-11-17 00:00:00,1,1\n");
  const Workload w = read_azure_trace(p);
  REQUIRE(w.requests.size() == 3);
  // Expected: 50.9951690 − 46.6805900 = 4.3145790 s; midnight is 5 h 44 min 13.31941 s after the first row.
  CHECK(w.requests[1].arrival == 4'314'579'000);
  CHECK(w.requests[2].arrival == ((5 * 3600 + 44 * 60 + 13) * 1'000'000'000LL + 319'410'000));
  CHECK(w.requests[1].output_tokens == 109);
  std::remove(p.c_str());
}

TEST_CASE("the generator is seeded and deterministic") {
  GeneratorSpec g;
  g.seed = 42;
  g.rate_per_s = 5;
  g.duration = 100'000'000'000;
  const Workload a = generate_workload(g), b = generate_workload(g);
  REQUIRE(a.requests.size() == b.requests.size());
  // Expected: about rate × duration = 500 arrivals (Poisson: within ±5 σ ≈ ±112).
  CHECK(a.requests.size() > 388);
  CHECK(a.requests.size() < 612);
  for (size_t i = 0; i < a.requests.size(); ++i) {
    CHECK(a.requests[i].arrival == b.requests[i].arrival);
    CHECK(a.requests[i].input_tokens == b.requests[i].input_tokens);
    CHECK(a.requests[i].input_tokens >= g.input_min);
    CHECK(a.requests[i].input_tokens <= g.input_max);
  }
  g.seed = 43;
  CHECK(generate_workload(g).requests[0].arrival != a.requests[0].arrival);
}

TEST_CASE("bundled workload YAMLs read the real traces") {
  // The real traces ship in scenarios/data/workloads (verbatim, sources and licences in its README.md).
  const Workload m = load_workload(std::string(HISPARSE_SOURCE_DIR) + "/scenarios/workloads/mooncake_conversation.yaml");
  // Expected: one request per data row (Mooncake: 12,031 lines).
  CHECK(m.requests.size() == 12031);
  CHECK(m.requests.back().arrival <= 3600LL * 1'000'000'000);
  const Workload a = load_workload(std::string(HISPARSE_SOURCE_DIR) + "/scenarios/workloads/azure_conv.yaml");
  // 19,366 data rows: the file's last row has no newline, so `wc -l` (and the README's 19,365) counts one less.
  CHECK(a.requests.size() == 19366);
  CHECK(a.requests.front().arrival == 0);
}
