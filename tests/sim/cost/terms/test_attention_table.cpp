// @brief The measured FlashMLA attention table: strict loading, interpolation (grid points exact, monotone between,
// the pad64 rule, extrapolation flagged), the kernel by KV dtype, the carry-over to an unmeasured GPU, and the
// attention phase of the cost model priced from it.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/io/csv_line.h"
#include "core/scenario_loader.h"
#include "sim/api/scenario_setup.h"
#include "sim/cost/terms/attention_table.h"
#include "sim/cost/step/decode_cost_model.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

const std::string kH200 = std::string(HISPARSE_SOURCE_DIR) + "/scenarios/measurements/flashmla_sparse_h200_2026-11-25.csv";
const std::string kHeader = "kernel,shape,median_us,tflops,indices,method,iters,device\n";

std::string write_temp(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / name;
  std::ofstream(p) << text;
  return p.string();
}

/// A full small grid of flashmla_sparse_fwd (heads 64, 128 × K 512, 2048 × batch 1, 2), every time `us`.
std::string constant_table(double us) {
  std::string s = kHeader;
  for (int h : {64, 128})
    for (int K : {512, 2048})
      for (int b : {1, 2})
        s += "flashmla_sparse_fwd,batch " + std::to_string(b) + " heads " + std::to_string(h) + " K " +
             std::to_string(K) + "," + std::to_string(us) + ",1.0,distinct,graph,20,NVIDIA H200\n";
  return s;
}

std::string error_of(const std::string& path) {
  try {
    AttentionTable::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// The scenario and cost of a run as the commands load them.
ScenarioSetup setup(const std::string& scenario, const std::string& attention_table = "auto") {
  ScenarioChoice c;
  c.scenario = scenario;
  c.attention_table = attention_table;
  c.op_tables = "none";  // the attention table's own terms (the H100/H200 op tables would supersede its rows)
  return load_scenario_setup(c, "test");
}

}  // namespace

TEST_CASE("attention table: every row of the H200 file is returned exactly at its grid point") {
  const AttentionTable t = AttentionTable::load(kH200);
  CHECK(t.device() == "NVIDIA H200");
  std::ifstream f(kH200);
  std::string line;
  std::getline(f, line);
  int rows = 0;
  while (std::getline(f, line)) {
    const auto v = split_csv_line(line);
    std::string kernel = v[0];
    if (kernel.size() > 6 && kernel.substr(kernel.size() - 6) == "_pad64") kernel.resize(kernel.size() - 6);
    int b = 0, h = 0, K = 0;
    REQUIRE(std::sscanf(v[1].c_str(), "batch %d heads %d K %d", &b, &h, &K) == 3);
    CAPTURE(line);
    const AttentionLookup at = t.lookup(kernel, b, h, K);
    CHECK(at.us == doctest::Approx(std::stod(v[2])).epsilon(1e-12));
    CHECK(!at.extrapolated_batch);
    CHECK(!at.extrapolated_k);
    CHECK(!at.extrapolated_heads);
    ++rows;
  }
  // 2 kernels × 5 head counts × 3 K × 13 batches.
  CHECK(rows == 390);
}

TEST_CASE("attention table: between grid points the time lies between its neighbours and moves one way") {
  const AttentionTable t = AttentionTable::load(kH200);
  for (const char* kernel : {"flashmla_sparse_fwd", "flashmla_fp8_decode"}) {
    const auto bs = t.batches(kernel);
    for (double h : {8.0, 128.0})
      for (double K : {512.0, 2048.0})
        for (size_t i = 1; i < bs.size(); ++i) {
          const double lo = t.time_us(kernel, bs[i - 1], h, K), hi = t.time_us(kernel, bs[i], h, K);
          double prev = lo;
          for (int s = 1; s < 8; ++s) {
            const double x = bs[i - 1] + (bs[i] - bs[i - 1]) * s / 8.0;
            const double y = t.time_us(kernel, x, h, K);
            CAPTURE(kernel);
            CAPTURE(x);
            CHECK(y >= std::min(lo, hi) - 1e-9);
            CHECK(y <= std::max(lo, hi) + 1e-9);
            CHECK((hi >= lo ? y >= prev - 1e-9 : y <= prev + 1e-9));  // monotone in the direction of the segment
            prev = y;
          }
        }
  }
  // K between 1024 and 2048 at batch 1, 128 heads: halfway is the mean of the two measured rows (29.79, 54.99).
  CHECK(t.time_us("flashmla_sparse_fwd", 1, 128, 1536) == doctest::Approx((29.79 + 54.99) / 2));
}

TEST_CASE("attention table: below 64 heads the _pad64 rows price it; fewer than the smallest cost the same") {
  const AttentionTable t = AttentionTable::load(kH200);
  // The 8-head row is the padded kernel's (57–60 µs at K 2048), not a share of the 64-head time.
  CHECK(t.time_us("flashmla_sparse_fwd", 1, 32, 2048) == doctest::Approx(57.93));
  CHECK(t.time_us("flashmla_sparse_fwd", 1, 8, 2048) > t.time_us("flashmla_sparse_fwd", 1, 128, 2048));
  // 4 heads: padded to 64 like 8, so the 8-head time, and not flagged as extrapolated.
  const AttentionLookup four = t.lookup("flashmla_sparse_fwd", 1, 4, 2048);
  CHECK(four.us == doctest::Approx(t.time_us("flashmla_sparse_fwd", 1, 8, 2048)));
  CHECK(!four.extrapolated_heads);
  // 48 heads: between the padded 32-head row and the plain 64-head row.
  const double h32 = t.time_us("flashmla_sparse_fwd", 1, 32, 2048), h64 = t.time_us("flashmla_sparse_fwd", 1, 64, 2048);
  CHECK(t.time_us("flashmla_sparse_fwd", 1, 48, 2048) == doctest::Approx((h32 + h64) / 2));
}

TEST_CASE("attention table: beyond the grid the time is extrapolated from the last two points and flagged") {
  const AttentionTable t = AttentionTable::load(kH200);
  const double b384 = t.time_us("flashmla_sparse_fwd", 384, 128, 2048), b512 = t.time_us("flashmla_sparse_fwd", 512, 128, 2048);
  const AttentionLookup b1024 = t.lookup("flashmla_sparse_fwd", 1024, 128, 2048);
  CHECK(b1024.extrapolated_batch);
  CHECK(b1024.us == doctest::Approx(b512 + (b512 - b384) * (1024 - 512) / 128.0));
  const AttentionLookup k4096 = t.lookup("flashmla_sparse_fwd", 1, 128, 4096);
  CHECK(k4096.extrapolated_k);
  CHECK(k4096.us == doctest::Approx(54.99 + (54.99 - 29.79) * 2));
}

TEST_CASE("attention table: the KV dtype picks the kernel: bf16 flashmla_sparse_fwd, fp8 flashmla_fp8_decode") {
  CHECK(std::string(attention_kernel_for(KvDtype::kBf16)) == "flashmla_sparse_fwd");
  CHECK(std::string(attention_kernel_for(KvDtype::kFp8)) == "flashmla_fp8_decode");
  AttentionPricing p;
  p.table = std::make_shared<const AttentionTable>(AttentionTable::load(kH200));
  const HardwareSpec h200 = load_scenario("dsv32-8xh200-1tb").hardware;
  CHECK(p.layer_us(KvDtype::kBf16, 1, 128, 2048, 1, 1, h200).us == doctest::Approx(54.99));
  CHECK(p.layer_us(KvDtype::kFp8, 1, 128, 2048, 1, 1, h200).us == doctest::Approx(17.48));
  CHECK(p.kind() == "measured");
}

TEST_CASE("attention table: a bad file is an error naming the file, line, column and value") {
  const std::string row = "flashmla_sparse_fwd,batch 1 heads 128 K 2048,54.99,10.4,distinct,graph,20,NVIDIA H200\n";
  struct Case {
    const char* name;
    std::string text;
    std::string expect;
  };
  const Case cases[] = {
      {"bad_time.csv", kHeader + row + "flashmla_sparse_fwd,batch 2 heads 128 K 2048,fast,1,distinct,graph,20,NVIDIA H200\n",
       ":3: column median_us is 'fast'"},
      {"bad_shape.csv", kHeader + "flashmla_sparse_fwd,batch one heads 128 K 2048,54.99,1,distinct,graph,20,NVIDIA H200\n",
       ":2: column shape is 'batch one heads 128 K 2048'"},
      {"bad_kernel.csv", kHeader + "flash_attn,batch 1 heads 128 K 2048,54.99,1,distinct,graph,20,NVIDIA H200\n",
       ":2: column kernel is 'flash_attn'"},
      {"bad_pad.csv", kHeader + "flashmla_sparse_fwd_pad64,batch 1 heads 128 K 2048,54.99,1,distinct,graph,20,NVIDIA H200\n",
       "fewer than 64 heads on a _pad64 row"},
      {"bad_unpadded.csv", kHeader + "flashmla_sparse_fwd,batch 1 heads 32 K 2048,54.99,1,distinct,graph,20,NVIDIA H200\n",
       "64 heads or more on a row without _pad64"},
      {"bad_method.csv", kHeader + "flashmla_sparse_fwd,batch 1 heads 128 K 2048,54.99,1,distinct,per-call,20,NVIDIA H200\n",
       ":2: column method is 'per-call'"},
      {"bad_device.csv", kHeader + row + "flashmla_sparse_fwd,batch 2 heads 128 K 2048,55,1,distinct,graph,20,NVIDIA H100\n",
       ":3: column device is 'NVIDIA H100'"},
      {"bad_duplicate.csv", kHeader + row + row, ":3: column shape"},
      {"bad_grid.csv", constant_table(1.0) + "flashmla_sparse_fwd,batch 1 heads 64 K 1024,1,1,distinct,graph,20,NVIDIA H200\n" +
                           "flashmla_sparse_fwd,batch 2 heads 64 K 1024,1,1,distinct,graph,20,NVIDIA H200\n",
       "heads 128 K 1024"},
      {"bad_fields.csv", kHeader + "flashmla_sparse_fwd,batch 1 heads 128 K 2048,54.99\n", ":2: 3 fields"},
  };
  for (const Case& c : cases) {
    const std::string path = write_temp(std::string("hisparse_attention_") + c.name, c.text);
    const std::string e = error_of(path);
    CAPTURE(c.name);
    CAPTURE(e);
    CHECK(e.find(path) != std::string::npos);
    CHECK(e.find(c.expect) != std::string::npos);
  }
}

TEST_CASE("attention phase: batch 1, K 2048, 128 heads on h200 = layers × (54.99 µs of the CSV + the projections)") {
  ScenarioSetup s = setup("dsv32-8xh200-1tb");
  REQUIRE(s.cost.attention.table);
  CHECK(s.cost.attention.kind() == "measured");
  CHECK(s.cost_line.find("sparse attention measured (FlashMLA, flashmla_sparse_h200_2026-11-25.csv, NVIDIA H200)") !=
        std::string::npos);
  const int layers = s.scenario.model.layers;
  REQUIRE(s.scenario.model.attention_heads == 128);
  GpuBatch b;
  b.requests = 1;
  b.sum_n = 32768;
  b.sum_attended = 2048;
  b.slow_path = 1;
  // The projections of one layer: the same model with a table of 1 µs everywhere, less that µs.
  CostParams unit = s.cost;
  unit.attention.table = std::make_shared<const AttentionTable>(
      AttentionTable::load(write_temp("hisparse_attention_unit.csv", constant_table(1.0))));
  const SimTime projections = DecodeCostModel(s.scenario, unit, true).gpu_phases(b).attention / layers - 1000;
  CHECK(projections > 0);
  const SimTime got = DecodeCostModel(s.scenario, s.cost, true).gpu_phases(b).attention;
  CHECK(std::llabs(got - layers * (54990 + projections)) <= layers);  // ≤ 1 ns a layer of rounding
  // --attention-table none: the roofline, far below the measured floor.
  ScenarioSetup r = setup("dsv32-8xh200-1tb", "none");
  CHECK(!r.cost.attention.table);
  CHECK(DecodeCostModel(r.scenario, r.cost, true).gpu_phases(b).attention < got - layers * 40000);
}

TEST_CASE("attention table: h20 carries the H200 table over: batch-1 floor kept, the growth scaled by the rooflines") {
  ScenarioSetup s = setup("dsv32-2x8xh20-pd");
  REQUIRE(s.cost.attention.table);
  CHECK(s.cost.attention.kind() == "modelled");
  CHECK(s.cost.attention.from_hardware == "h200");
  CHECK(s.cost_line.find("carried over") != std::string::npos);
  const HardwareSpec& h20 = s.scenario.hardware;
  const AttentionPricing& p = s.cost.attention;
  const AttentionTable& t = *p.table;
  // Compute-bound work (flops dominate on both): the ratio is the bf16 peaks' (989 / 148 TFLOP/s).
  const double flops = 1e12, bytes = 1;
  CHECK(p.layer_us(KvDtype::kBf16, 1, 128, 2048, flops, bytes, h20).us == doctest::Approx(54.99));
  const double src = t.time_us("flashmla_sparse_fwd", 128, 128, 2048);
  CHECK(p.layer_us(KvDtype::kBf16, 128, 128, 2048, flops, bytes, h20).us ==
        doctest::Approx(54.99 + (src - 54.99) * p.from_bf16_flops / h20.bf16_flops));
  bool has_term = false;
  for (const TermSource& ts : s.cost.sources)
    if (ts.term == "sparse_attention") has_term = ts.kind == "modelled" && ts.source.find("carried over") != std::string::npos;
  CHECK(has_term);
}
