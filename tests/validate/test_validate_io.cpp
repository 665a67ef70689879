// @brief The layout-copy and DeltaKV operations of the validation table run their cases on the cpu harness (the
// reference against itself): one row per host-pool layout, every case accounted for, and a broken copy caught.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "cpu_ref/backend_cpu.h"
#include "validate/validate.h"

using namespace hisparse;
using namespace hisparse::validation;

namespace {
/// A device backend whose layout backup forgets the last layer: the checker must see it.
class ForgetfulBackend final : public Backend {
 public:
  std::string name() const override { return "forgetful"; }
  void swap_in(const SwapInBatchView& b, SwapInBatchResult& o) override { ref_.swap_in(b, o); }
  void gather(const RowCopyView& r) override { ref_.gather(r); }
  void backup(const RowCopyView& r) override { ref_.backup(r); }
  void sparse_attention(const SparseAttentionArgs& a, AttentionVariant v) override { ref_.sparse_attention(a, v); }
  void indexer_scores(const IndexerArgs& a) override { ref_.indexer_scores(a); }
  void topk(const TopkArgs& a) override { ref_.topk(a); }
  void layout_gather(const LayoutCopyView& v) override { ref_.layout_gather(v); }
  void layout_backup(const LayoutCopyView& v) override {
    LayoutCopyView w = v;
    w.layer_count = v.layer_count > 1 ? v.layer_count - 1 : v.layer_count;
    ref_.layout_backup(w);
  }
  void deltakv_reconstruct(const DeltaKvArgs& a) override { ref_.deltakv_reconstruct(a); }

 private:
  cpu_ref::CpuBackend ref_;
};
}  // namespace

TEST_CASE("validate io: gather-layout, backup-layout and deltakv pass on the cpu harness, a row per layout") {
  ValidateRequest r;
  r.backend = "cpu";
  r.options.cases = 24;
  r.options.seed = 7;
  r.options.only = {"gather-layout", "backup-layout", "deltakv"};
  const ValidateResult got = run_validation(r);
  // Expectation: 3 + 3 + 1 rows, cases dealt round-robin over the layouts (8 each), no mismatch.
  REQUIRE(got.reports.size() == 7);
  CHECK(got.mismatches == 0);
  CHECK(got.cases == 72);
  const char* layouts[] = {"layer_first", "page_first", "page_head"};
  for (int i = 0; i < 3; ++i) {
    CHECK(got.reports[size_t(i)].op == "gather-layout");
    CHECK(got.reports[size_t(i)].variant == layouts[i]);
    CHECK(got.reports[size_t(i)].cases == 8);
    CHECK(got.reports[size_t(i + 3)].op == "backup-layout");
  }
  CHECK(got.reports[6].op == "deltakv");
}

TEST_CASE("validate io: a backup that skips a layer is reported as a mismatch") {
  cpu_ref::CpuBackend ref;
  ForgetfulBackend dut;
  ValidateOptions o;
  o.cases = 30;
  o.seed = 3;
  const ValidateContext ctx{ref, dut, o};
  std::vector<OpReport> rows;
  validate_layout_backup(ctx, rows);
  int64_t bad = 0;
  std::string first;
  for (const auto& row : rows) {
    bad += row.mismatched_cases;
    if (first.empty()) first = row.first_mismatch;
  }
  // Expectation: every case with more than one layer and at least one token differs in the last layer's host rows.
  CHECK(bad > 0);
  CHECK(first.find("host pool") != std::string::npos);
}
