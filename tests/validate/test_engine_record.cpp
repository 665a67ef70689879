// @brief The engine-kernel record (validate/engine_record.h): the shipped H100 record passes every case; the same
// record perturbed in memory fails where it was touched (one V2 plan slot: the exact contract, naming step, request
// and lane; one GEMM output element × 1.01: the tolerance contract); the masked GEMM's padding rows reported; a truncated or corrupt file, a missing array and
// an array of the wrong dtype or shape are refused naming the file and the array.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "core/error.h"
#include "tests/error_of.h"
#include "core/numerics/bf16.h"
#include "cpu_ref/block_scaled_gemm.h"
#include "validate/engine_record.h"

using namespace hisparse;
using namespace hisparse::validation;
using hisparse::test::error_of;

namespace {

const std::string kRecord = std::string(HISPARSE_SOURCE_DIR) + "/tests/validate/data/engine_record_h100_2026-11-28.npz";

std::string record_bytes() {
  std::ifstream in(kRecord, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// The shipped record, read once for the cases that perturb it in memory.
const EngineRecord& shipped() {
  static const EngineRecord r = read_engine_record(kRecord);
  return r;
}

const EngineCheckRow& row(const EngineCheckResult& r, const std::string& name) {
  const auto it = std::find_if(r.rows.begin(), r.rows.end(), [&](const EngineCheckRow& x) { return x.name == name; });
  REQUIRE_MESSAGE(it != r.rows.end(), name);
  return *it;
}

/// Every occurrence of `from` (a member name: its local header and its central-directory entry) replaced by `to` of
/// the same length; the CRCs cover the data only, so the zip stays valid.
std::string rename_member(std::string z, const std::string& from, const std::string& to) {
  REQUIRE(from.size() == to.size());
  for (size_t p = z.find(from); p != std::string::npos; p = z.find(from, p + to.size())) z.replace(p, from.size(), to);
  return z;
}

}  // namespace

TEST_CASE("the shipped H100 record passes every case: V2 slot for slot, FlashMLA and DeepGEMM within their bounds") {
  const EngineRecord& r = shipped();
  // The shapes engine_checks.py wrote: batch 2 x 64 heads x K 128 over 1,024 rows; GEMMs of k 512, n 256; two V2 cases.
  CHECK(r.mla.batch == 2);
  CHECK(r.mla.heads == 64);
  CHECK(r.mla.top_k == 128);
  CHECK(r.masked.masked_m == std::vector<int32_t>{37, 64});
  CHECK(r.dense.m == 40);
  REQUIRE(r.v2.size() == 2);
  CHECK(r.v2[1].topk == 2048);
  const EngineCheckResult res = check_engine_record(r);
  for (const auto& x : res.rows) {
    INFO(x.name, ": ", x.detail);
    CHECK(x.pass);
  }
  CHECK(res.passed());
  CHECK(row(res, "v2 case1 plan").elements == 4 * 3 * 2048);
  CHECK(row(res, "v2 case1 plan").mismatches == 0);
  CHECK(row(res, "deepgemm-masked d").elements == (37 + 64) * 256);
}

TEST_CASE("one V2 plan slot changed in memory fails the exact contract, naming step, request and lane") {
  EngineRecord r = shipped();
  V2PlanRecord& c = r.v2[0];
  // The first hit or miss of step 2, request 1: its slot moved by one (a slot of the same buffer, just not SGLang's).
  const size_t base = (2 * c.batch + 1) * c.topk;
  size_t lane = 0;
  while (c.plan[base + lane] < 0) ++lane;
  c.plan[base + lane] ^= 1;
  const EngineCheckResult res = check_engine_record(r);
  const EngineCheckRow& p = row(res, "v2 case0 plan");
  CHECK(!p.pass);
  CHECK(p.mismatches == 1);
  CHECK(p.detail.find("step 2, request 1, lane " + std::to_string(lane)) != std::string::npos);
  CHECK(row(res, "v2 case0 slot_pos").pass);  // the state is recomputed by the reference, not read from the plan
  CHECK(!res.passed());
}

TEST_CASE("one GEMM output element scaled by 1.01 fails the tolerance contract (1 % is beyond the bound)") {
  EngineRecord r = shipped();
  // An element well above the floor that the kernel got right to 0.1 %, whose value × 1.01 rounds to a bf16 at least
  // 0.9 % away: its error becomes >= 0.8 %, beyond the bound 2^-7 = 0.78 %.
  cpu_ref::BlockScaledGemmArgs g;
  g.m = r.dense.m, g.n = r.dense.n, g.k = r.dense.k;
  g.a = r.dense.a.data(), g.sfa = r.dense.sfa.data(), g.b = r.dense.b.data(), g.sfb = r.dense.sfb.data();
  const std::vector<double> ref = cpu_ref::block_scaled_gemm_f64(g);
  size_t at = ref.size();
  for (size_t i = 0; i < ref.size() && at == ref.size(); ++i) {
    const double got = num::bf16_to_float(r.dense.d[i]);
    const double moved = num::bf16_to_float(num::float_to_bf16(float(got) * 1.01f));
    if (std::abs(ref[i]) > 0.005 && std::abs(got - ref[i]) < 0.001 * std::abs(ref[i]) &&
        std::abs(moved - got) >= 0.009 * std::abs(got))
      at = i;
  }
  REQUIRE(at < ref.size());
  r.dense.d[at] = num::float_to_bf16(num::bf16_to_float(r.dense.d[at]) * 1.01f);
  const EngineCheckResult res = check_engine_record(r);
  const EngineCheckRow& d = row(res, "deepgemm-dense d");
  CHECK(!d.pass);
  CHECK(d.mismatches == 1);
  CHECK(d.max_rel > 0.005);
  CHECK(d.detail.find("row " + std::to_string(at / 256) + ", col " + std::to_string(at % 256)) != std::string::npos);
  CHECK(row(res, "deepgemm-masked d").pass);
}

TEST_CASE("the masked GEMM's rows past masked_m are reported, not judged: DeepGEMM writes its whole row tiles") {
  // Measured on the H100 record: every padding element written, with the product of A's padding rows.
  const EngineCheckResult res = check_engine_record(shipped());  // kept alive: `row` returns a reference into it
  const EngineCheckRow& p = row(res, "deepgemm-masked rows >= m");
  CHECK(p.info);
  CHECK(p.pass);
  CHECK(p.mismatches == (64 - 37) * 256);
  CHECK(p.detail.find("written (not left zero)") != std::string::npos);
}

TEST_CASE("a truncated or corrupt record, a missing array, a wrong dtype or shape: errors name the file and array") {
  const std::string z = record_bytes();
  REQUIRE(z.size() > 100000);
  std::string e = error_of([&] { parse_engine_record(z.substr(0, z.size() / 2), "half.npz"); });
  CHECK(e.find("half.npz") != std::string::npos);
  CHECK(e.find("truncated") != std::string::npos);

  std::string flipped = z;
  const size_t at = z.find("mla_bf16_kv.npy") + 15 + 5000;  // inside that member's deflated data
  flipped[at] = static_cast<char>(flipped[at] ^ 0x5A);
  e = error_of([&] { parse_engine_record(flipped, "flip.npz"); });
  CHECK(e.find("flip.npz:mla_bf16_kv.npy") != std::string::npos);

  e = error_of([&] { parse_engine_record(rename_member(z, "mla_bf16_lse.npy", "mla_bf16_lsX.npy"), "nolse.npz"); });
  CHECK(e == "nolse.npz: array 'mla_bf16_lse' is missing (engine record of bench/engine_ops/engine_checks.py)");

  // mla_bf16_out (bf16 bits, <u2) under the name of the index array (<i4).
  std::string swapped = rename_member(rename_member(z, "mla_bf16_idx.npy", "mla_bf16_XXX.npy"), "mla_bf16_out.npy",
                                      "mla_bf16_idx.npy");
  e = error_of([&] { parse_engine_record(swapped, "dtype.npz"); });
  CHECK(e == "dtype.npz: array 'mla_bf16_idx' has dtype <u2, expected <i4");

  // The dense GEMM's two scale arrays swapped: sfb's [2, 4] where sfa's [40, 4] belongs.
  swapped = rename_member(rename_member(rename_member(z, "gemm_dense_sfa.npy", "gemm_dense_XXX.npy"),
                                        "gemm_dense_sfb.npy", "gemm_dense_sfa.npy"),
                          "gemm_dense_XXX.npy", "gemm_dense_sfb.npy");
  e = error_of([&] { parse_engine_record(swapped, "shape.npz"); });
  CHECK(e == "shape.npz: array 'gemm_dense_sfa' has shape [2, 4], expected [40, 4]");

  e = error_of([&] { read_engine_record("/nonexistent/record.npz"); });
  CHECK(e.find("/nonexistent/record.npz") != std::string::npos);
}
