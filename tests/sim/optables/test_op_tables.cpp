// @brief The op-table loader and its lookups: strict reading (a bad row names file, line, column and value; a table
// without provenance fails), the interpolation rules worked by hand on the fixture (piecewise linear, bilinear,
// log-log, the floor and the extrapolation with their labels), the rule for more GPUs than measured, and the shipped
// index loading.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "sim/optables/op_table_index.h"
#include "sim/optables/rank_extrapolation.h"

using namespace hisparse;
using namespace hisparse::sim;
namespace fs = std::filesystem;

namespace {

const std::string kData = std::string(HISPARSE_SOURCE_DIR) + "/tests/sim/optables/data";
const std::string kIndex = kData + "/engine_ops.yaml";
const std::string kHeader =
    "op,library,commit,gpu,driver,sm_clock_mhz,params,batch,context,bytes,median_us,p10_us,p90_us,iters,method\n";
const std::string kRow = "dense_gemm,deep_gemm,abc,NVIDIA H200,580.159.04,1980,k=7168;model=m;n=1536;name=q_a,1,0,0,10,9,11,20,graph\n";
const std::string kEntry =
    "tables:\n  - file: engine_ops_h200_2026-11-28.csv\n    hardware: h200\n    gpus: 1\n    date: 2026-11-28\n"
    "    command: collect\n    libraries: {deep_gemm: abc}\n    device_log: bench/results/x/device.log\n";

/// A fresh folder holding an index and one table; returns the index path.
std::string write_set(const std::string& name, const std::string& csv, const std::string& index = kEntry) {
  const fs::path dir = fs::temp_directory_path() / ("hs_optables_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "engine_ops_h200_2026-11-28.csv") << csv;
  std::ofstream(dir / "engine_ops.yaml") << index;
  return (dir / "engine_ops.yaml").string();
}

std::string load_error(const std::string& index) {
  try {
    load_op_tables(load_op_table_index(index));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// `text` with its first `from` replaced by `to` (plain string edits: GCC 12 reports std::regex's internals as
/// maybe-uninitialized in the sanitizer build).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

/// `text` without the line that starts with `key:` under an entry.
std::string without_line(const std::string& text, const std::string& key) {
  const size_t at = text.find("\n    " + key + ":");
  REQUIRE(at != std::string::npos);
  return text.substr(0, at) + text.substr(text.find('\n', at + 1));
}

OpTableSet fixture() { return load_op_tables(load_op_table_index(kIndex), "h200"); }

const OpParams kQa{{"model", "deepseek-v3.2"}, {"name", "q_a"}};

}  // namespace

TEST_CASE("op tables: the fixture loads into one series per op and shape, each with its table's provenance") {
  const OpTableSet s = fixture();
  // Expected: q_a, lm_head, two expert GEMMs, the indexer logits; dispatch and combine at 2 and 4 GPUs, all-reduce
  // at 2 and 4: 11 series.
  CHECK(s.series().size() == 11);
  const OpSeries* qa = s.find("dense_gemm", kQa);
  REQUIRE(qa);
  CHECK(qa->table->file == "engine_ops_h200_2026-11-28.csv");
  CHECK(qa->library == "deep_gemm");
  CHECK(qa->commit == "a1b2c3d");
  CHECK(qa->grid == OpGrid::kBatch);
  CHECK(qa->grid_text() == "batch 1–16");
  CHECK(qa->first_line() == 2);
  CHECK(qa->last_line() == 4);
  // Asked for another hardware, the set is empty (the tables are still read and checked).
  CHECK(load_op_tables(load_op_table_index(kIndex), "h100-sxm").empty());
}

TEST_CASE("op tables: batch is piecewise linear between points, floored below, extrapolated above (labelled)") {
  const OpTableSet s = fixture();
  // q_a: 10 µs at batch 1, 12 at 4, 18 at 16 (fixture lines 2–4).
  // Expected at batch 10: 12 + (18 − 12) × (10 − 4) / (16 − 4) = 15 µs, measured, read from lines 3–4.
  const OpLookup mid = s.lookup("dense_gemm", kQa, 10);
  CHECK(mid.us == doctest::Approx(15.0));
  CHECK(mid.label == OpLabel::kMeasured);
  CHECK(mid.first_line == 3);
  CHECK(mid.last_line == 4);
  // Expected on a grid point: the row's own time.
  CHECK(s.lookup("dense_gemm", kQa, 4).us == doctest::Approx(12.0));
  // Expected below the smallest batch: the batch-1 time, a floor, still labelled measured.
  const OpLookup floor = s.lookup("dense_gemm", kQa, 0.5);
  CHECK(floor.us == doctest::Approx(10.0));
  CHECK(floor.label == OpLabel::kMeasured);
  // Expected at batch 24: linear from the last two points, 18 + 6 × 8 / 12 = 22 µs, modelled (extrapolated).
  const OpLookup above = s.lookup("dense_gemm", kQa, 24);
  CHECK(above.us == doctest::Approx(22.0));
  CHECK(above.label == OpLabel::kExtrapolated);
  CHECK(std::string(to_string(above.label)) == "modelled (extrapolated)");
}

TEST_CASE("op tables: batch × context is bilinear") {
  const OpTableSet s = fixture();
  const OpParams logits{{"model", "deepseek-v3.2"}, {"heads", "64"}, {"head_dim", "128"}};
  // Fixture: 5 / 9 µs at batch 1 / 8 and context 4096; 12 / 30 at context 16384.
  // Expected at batch 4.5, context 10240: along batch 5 + 4 × 3.5/7 = 7 and 12 + 18 × 3.5/7 = 21, then halfway along
  // context (10240 is midway between 4096 and 16384): 14 µs, measured.
  const OpLookup l = s.lookup("indexer_logits", logits, 4.5, 10240);
  CHECK(l.us == doctest::Approx(14.0));
  CHECK(l.label == OpLabel::kMeasured);
  // Expected above the largest context at batch 1: 12 + (12 − 5) × (32768 − 16384) / 12288, extrapolated.
  const OpLookup above = s.lookup("indexer_logits", logits, 1, 32768);
  CHECK(above.us == doctest::Approx(12 + 7.0 * 16384 / 12288));
  CHECK(above.label == OpLabel::kExtrapolated);
}

TEST_CASE("op tables: collectives are log-log in bytes inside the grid, linear in bytes above it") {
  const OpTableSet s = fixture();
  const OpParams ar{{"ranks", "2"}};
  // Fixture: 10 µs at 1 KiB, 40 µs at 1 MiB. Expected at 32 KiB (halfway in log bytes): 10 × (40/10)^0.5 = 20 µs.
  CHECK(s.lookup("all_reduce", ar, 0, 0, 32768).us == doctest::Approx(20.0));
  // Expected at 2 MiB: 40 + 30 × (2^21 − 2^20) / (2^20 − 2^10), modelled (extrapolated).
  const OpLookup above = s.lookup("all_reduce", ar, 0, 0, 2097152);
  CHECK(above.us == doctest::Approx(40 + 30.0 * 1048576 / 1047552));
  CHECK(above.label == OpLabel::kExtrapolated);
}

TEST_CASE("op tables: a shape the tables lack is absent, with the reason") {
  const OpTableSet s = fixture();
  const OpLookup other = s.lookup("dense_gemm", {{"model", "glm-5"}, {"name", "q_a"}}, 4);
  CHECK(other.label == OpLabel::kAbsent);
  CHECK(other.note.find("no row of dense_gemm with model=glm-5;name=q_a") != std::string::npos);
  CHECK(s.lookup("rmsnorm", {}, 4).note == "no row of rmsnorm");
  // Two shapes match (all-reduce at 2 and 4 GPUs) and nothing tells them apart: absent, not a guess.
  const OpLookup two = s.lookup("all_reduce", {{"dtype", "bf16"}}, 0, 0, 4096);
  CHECK(two.label == OpLabel::kAbsent);
  CHECK(two.note.find("2 shapes") != std::string::npos);
  // A preferred key narrows them: ranks 4.
  CHECK(s.lookup("all_reduce", {{"dtype", "bf16"}}, 0, 0, 1024, {{"ranks", "4"}}).us == doctest::Approx(14.0));
}

TEST_CASE("op tables: 8 GPUs from 2 and 4, linear in log2 ranks, floored by the 4-GPU time and the payload bound") {
  const OpTableSet s = fixture();
  const OpParams ep{{"hidden", "7168"}, {"topk", "8"}};
  // Dispatch at batch 64: 40 µs over 2 GPUs, 55 over 4. Expected over 8: 55 + (55 − 40) × (3 − 2) / (2 − 1) = 70 µs,
  // labelled modelled from fewer-GPU measurements.
  const OpLookup d8 = lookup_over_ranks(s, "ep_dispatch_ll", ep, {}, 8, 64, 0, 0);
  CHECK(d8.us == doctest::Approx(70.0));
  CHECK(d8.label == OpLabel::kFromRanks);
  CHECK(d8.note.find("from the 2- and 4-GPU measurements") != std::string::npos);
  // Expected over 16: two doublings past 4, 55 + 15 × 2 = 85 µs.
  CHECK(lookup_over_ranks(s, "ep_dispatch_ll", ep, {}, 16, 64, 0, 0).us == doctest::Approx(85.0));
  // Expected with a payload bound of 100 µs: the bound.
  CHECK(lookup_over_ranks(s, "ep_dispatch_ll", ep, {}, 8, 64, 0, 100).us == doctest::Approx(100.0));
  // Expected over 4 GPUs: the table's own row, measured.
  const OpLookup d4 = lookup_over_ranks(s, "ep_dispatch_ll", ep, {}, 4, 64, 0, 0);
  CHECK(d4.us == doctest::Approx(55.0));
  CHECK(d4.label == OpLabel::kMeasured);
  // All-reduce of 1 MiB over 8: 60 + (60 − 40) = 80 µs.
  CHECK(lookup_over_ranks(s, "all_reduce", {}, {}, 8, 0, 1048576, 0).us == doctest::Approx(80.0));
  // Nothing below 2 GPUs is extrapolated downward, and a shape none measured is absent.
  CHECK(lookup_over_ranks(s, "ep_dispatch_ll", {{"hidden", "6144"}}, {}, 8, 64, 0, 0).label == OpLabel::kAbsent);
}

TEST_CASE("op tables: a bad row is an error naming the file, line, column and value") {
  struct Case {
    std::string row, expected;
  };
  const std::vector<Case> cases = {
      {"dense_gemm,,abc,NVIDIA H200,580.159.04,1980,n=1,1,0,0,10,9,11,20,graph\n", ":2: column library is ''"},
      {"dense_gemm,deep_gemm,,NVIDIA H200,580.159.04,1980,n=1,1,0,0,10,9,11,20,graph\n", ":2: column commit is ''"},
      {"dense_gemm,deep_gemm,abc,,580.159.04,1980,n=1,1,0,0,10,9,11,20,graph\n", ":2: column gpu is ''"},
      {"dense_gemm,deep_gemm,abc,NVIDIA H200,,1980,n=1,1,0,0,10,9,11,20,graph\n", ":2: column driver is ''"},
      {"dense_gemm,deep_gemm,zzz,NVIDIA H200,580.159.04,1980,n=1,1,0,0,10,9,11,20,graph\n", "column commit is 'zzz'"},
      {"dense_gemm,cublas,abc,NVIDIA H200,580.159.04,1980,n=1,1,0,0,10,9,11,20,graph\n", "column library is 'cublas'"},
      {"dense_gemm,deep_gemm,abc,NVIDIA H200,580.159.04,1980,n=1;k=2,1,0,0,10,9,11,20,graph\n", "column params is 'n=1;k=2'"},
      {"dense_gemm,deep_gemm,abc,NVIDIA H200,580.159.04,1980,n,1,0,0,10,9,11,20,graph\n", "column params is 'n'"},
      {"dense_gemm,deep_gemm,abc,NVIDIA H200,580.159.04,1980,n=1,-1,0,0,10,9,11,20,graph\n", "column batch is '-1'"},
      {"dense_gemm,deep_gemm,abc,NVIDIA H200,580.159.04,1980,n=1,1.5,0,0,10,9,11,20,graph\n", "column batch is '1.5'"},
      {"dense_gemm,deep_gemm,abc,NVIDIA H200,580.159.04,1980,n=1,1,0,0,nan,9,11,20,graph\n", "column median_us is 'nan'"},
      {"dense_gemm,deep_gemm,abc,NVIDIA H200,580.159.04,1980,n=1,1,0,0,10,12,11,20,graph\n", "column p10_us is '12'"},
      {"dense_gemm,deep_gemm,abc,NVIDIA H200,580.159.04,1980,n=1,1,0,0,10,9,11,0,graph\n", "column iters is '0'"},
      {"dense_gemm,deep_gemm,abc,NVIDIA H200,580.159.04,1980,n=1,1,0,0,10,9,11,20,wall\n", "column method is 'wall'"},
      {"Dense,deep_gemm,abc,NVIDIA H200,580.159.04,1980,n=1,1,0,0,10,9,11,20,graph\n", "column op is 'Dense'"},
      {"dense_gemm,deep_gemm,abc,NVIDIA H200,580.159.04,1980,n=1,1,0,0,10,9,11,20\n", ":2: 14 fields"},
      // The same grid point twice, and a second GPU in one file.
      {kRow + kRow, "lines 2 and 3 both time batch 1"},
      {kRow + "dense_gemm,deep_gemm,abc,NVIDIA H100,580.159.04,1980,n=1,1,0,0,10,9,11,20,graph\n", ":3: column gpu is 'NVIDIA H100'"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.row);
    const std::string e = load_error(write_set("row", kHeader + c.row));
    CHECK(e.find("engine_ops_h200_2026-11-28.csv") != std::string::npos);
    CHECK(e.find(c.expected) != std::string::npos);
  }
  // A wrong header names the expected one.
  CHECK(load_error(write_set("header", "op,library\n" + kRow)).find(":1: header 'op,library'") != std::string::npos);
}

TEST_CASE("op tables: a table without provenance fails to load, naming the index and the field") {
  // Expected: every field of an entry is required; each one left out is an error naming it.
  for (const char* field : {"hardware", "gpus", "date", "command", "libraries", "device_log"}) {
    CAPTURE(field);
    const std::string index = without_line(kEntry, field);
    const std::string e = load_error(write_set(std::string("missing_") + field, kHeader + kRow, index));
    CHECK(e.find("engine_ops.yaml") != std::string::npos);
    CHECK(e.find(std::string("has no '") + field + "'") != std::string::npos);
  }
  // An empty command, empty libraries, an unknown hardware, a date other than the file name's.
  auto error_with = [](const std::string& name, const std::string& from, const std::string& to) {
    return load_error(write_set(name, kHeader + kRow, replaced(kEntry, from, to)));
  };
  CHECK(error_with("empty_cmd", "command: collect", "command: ''").find(".command is empty") != std::string::npos);
  CHECK(error_with("empty_libs", "{deep_gemm: abc}", "{}").find(".libraries is") != std::string::npos);
  CHECK(error_with("hw", "hardware: h200", "hardware: a100").find(".hardware is 'a100'") != std::string::npos);
  CHECK(error_with("date", "date: 2026-11-28", "date: 2026-11-27").find("the file name says 2026-11-28") !=
        std::string::npos);
  // A table in the folder that no entry lists: refused, named.
  const std::string e = load_error(write_set("unlisted", kHeader + kRow, "tables: []\n"));
  CHECK(e.find("engine_ops_h200_2026-11-28.csv is not listed under tables") != std::string::npos);
  // No tables key at all.
  CHECK(load_error(write_set("no_tables", kHeader + kRow, "files: []\n")).find("tables") != std::string::npos);
}

TEST_CASE("op tables: the shipped index loads (every table listed with its provenance)") {
  const std::string shipped = std::string(HISPARSE_SOURCE_DIR) + "/scenarios/measurements/engine_ops.yaml";
  // Expected: the CI check that a table committed without an index entry, or with a bad row, fails here. Each GPU's
  // tables load as a run reads them (the same shape is timed once per GPU, so they are loaded per hardware).
  const OpTableIndex index = load_op_table_index(shipped);
  for (const char* hw : {"h100-sxm", "h200"}) {
    INFO("hardware " << hw);
    CHECK_NOTHROW(load_op_tables(index, hw));
  }
}
