// @brief Model families as types (core/family/): every shipped deployment maps to the family its shapes describe,
// and a toy family defined here — one class plus one register_family line, as docs/families.md shows — is sized by
// the budget and priced by the step model without any other change.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/budget_figure.h"
#include "core/error.h"
#include "core/family/family_registry.h"
#include "core/memory_budget.h"
#include "core/scenario_loader.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/cost/step/decode_cost_model.h"

using namespace hisparse;

namespace {

// A toy multi-query family: one K and one V head per token per layer whatever the model's KV heads, every layer
// full attention, one token pool (as MHATokenToKVPool with head_num 1), priced by the GQA layer terms.
class ToyMqaFamily : public ModelFamily {
 public:
  const char* name() const override { return "toy-mqa"; }
  bool claims(const Scenario&) const override { return false; }  // only a model naming it (`family: toy-mqa`)
  MemoryBudget budget(const Scenario& s, const std::vector<int64_t>& seq_lens) const override {
    using budget_detail::fig;
    MemoryBudget b;
    b.sparse_indexer = false;
    b.page_size = s.deployment.page_size;
    b.full_layers = s.model.kv_layers();
    const double row = static_cast<double>(kv_row_bytes(s));
    b.kv_layers = fig("kv_layers", "KV layers", b.full_layers, "layers", "layers");
    b.latent_row_bytes = fig("kv_row_bytes", "K + V of one head", row, "B", "2 × head_dim × 2");
    b.full_cell_bytes = fig("full_cell_bytes", "cell", row * b.full_layers, "B/token", "kv_layers × kv_row");
    hbm_figures(s, b);
    b.full_pool_tokens = fig("full_pool_tokens", "KV pool", static_cast<double>(pool_tokens(
                             b.kv_budget_bytes.value, b.full_cell_bytes.value, b.page_size)), "tokens",
                             "floor(kv_budget / cell / page) × page");
    for (int64_t n : seq_lens) {
      SeqLenBudget q;
      q.seq_len = n;
      std::string f;
      const int64_t full = full_pool_requests(b, n, &f);
      set_max_requests(q, s.deployment, full, f, 0, "not applicable");
      b.per_seq_len.push_back(q);
    }
    return b;
  }
  std::vector<const Figure*> figures(const MemoryBudget& b) const override {
    return {&b.kv_layers, &b.latent_row_bytes, &b.full_cell_bytes, &b.kv_budget_bytes, &b.full_pool_tokens};
  }
  int64_t kv_row_bytes(const Scenario& s) const override { return 2 * int64_t{s.model.head_dim} * 2; }
  const char* kv_row_name() const override { return "kv_row"; }
  LayerPricing layer_pricing() const override { return LayerPricing::kGqaKv; }
};

// The toy is registered once for the whole test binary (the registry owns it).
const ModelFamily& toy() {
  static const ModelFamily* f = [] {
    register_family(std::make_unique<ToyMqaFamily>());
    return find_family("toy-mqa");
  }();
  return *f;
}

}  // namespace

TEST_CASE("families: every shipped deployment gets the family its model's shapes describe") {
  // Expected from each model file: DSA indexer → mla+dsa; compress_ratios → dsv4; GQA with sliding layers, with
  // linear layers, with a double_sparsity deployment, or plain.
  const std::pair<const char*, const char*> cases[] = {
      {"dsv32-8xh200-1tb", "mla+dsa"},        {"glm52-8xh200-tp8", "mla+dsa"},
      {"dsv4-flash-8xh200", "dsv4"},          {"gptoss-120b-1xh200", "gqa+swa"},
      {"qwen3next-2xh200-tp2", "gqa+mamba"},  {"llama31-8b-1xh100-dsparse", "gqa+double-sparsity"},
      {"llama31-8b-1xh100", "gqa"},           {"qwen3-32b-2xh200-tp2", "gqa"}};
  for (const auto& [deployment, family] : cases) {
    CAPTURE(deployment);
    const Scenario s = load_scenario(deployment);
    CHECK(std::string(family_of(s).name()) == family);
    CHECK(compute_memory_budget(s, {}).family == &family_of(s));
  }
  // An MLA model without the indexer's head dim is plain MLA: every token attended, no HiSparse pools.
  Scenario mla = load_scenario("dsv32-8xh200-1tb");
  mla.model.indexer_head_dim = 0;
  mla.deployment.hisparse_enabled = false;
  CHECK(std::string(family_of(mla).name()) == "mla");
  CHECK_FALSE(family_of(mla).offload(mla.model).applies);
}

TEST_CASE("families: the registry lists the seven built-in families, one line each, most specific first") {
  // Expected from HISPARSE_FAMILIES in core/family/family_registry.cpp: DeepSeek-V4 before the MLA families (its layers
  // are MLA-shaped), Double Sparsity before plain GQA; a family registered at run time (the toy below) goes first.
  const std::vector<std::string> built_in = {"dsv4", "mla+dsa", "mla", "gqa+double-sparsity", "gqa+swa", "gqa+mamba",
                                             "gqa"};
  const std::vector<std::string> names = family_names();
  REQUIRE(names.size() >= built_in.size());
  CHECK(std::vector<std::string>(names.end() - static_cast<std::ptrdiff_t>(built_in.size()), names.end()) == built_in);
  for (const std::string& n : built_in) CHECK(find_family(n) != nullptr);
}

TEST_CASE("families: a model naming an unknown family is refused with the registered names") {
  Scenario s = load_scenario("llama31-8b-1xh100");
  s.model.family = "no-such-family";
  bool threw = false;
  try {
    family_of(s);
  } catch (const Error& e) {
    threw = true;
    const std::string what = e.what();
    CHECK(what.find("no-such-family") != std::string::npos);
    CHECK(what.find("gqa+swa") != std::string::npos);
  }
  CHECK(threw);
  CHECK_THROWS(register_family(nullptr));
}

TEST_CASE("families: a toy family is sized by the budget and priced by the step model") {
  const ModelFamily& family = toy();
  Scenario gqa = load_scenario("llama31-8b-1xh100");
  Scenario s = gqa;
  s.model.family = "toy-mqa";
  REQUIRE(&family_of(s) == &family);
  CHECK_THROWS(register_family(std::make_unique<ToyMqaFamily>()));  // a name is registered once

  // Budget: the toy's row is one K and one V head of head_dim 128 in bf16, 2 × 128 × 2 = 512 B; the cell is 32
  // layers of it. The HBM split is the shared one, so the KV budget equals the GQA budget's; the pool is that budget
  // over the toy's cell, whole pages; a 16,384-token request takes 16,384 of its tokens.
  const MemoryBudget b = compute_memory_budget(s, {16384});
  const MemoryBudget g = compute_memory_budget(gqa, {16384});
  CHECK(b.family == &family);
  CHECK(b.attention == "toy-mqa");
  CHECK(b.latent_row_bytes.value == 512);
  CHECK(b.full_cell_bytes.value == 512.0 * s.model.kv_layers());
  CHECK(b.kv_budget_bytes.value == g.kv_budget_bytes.value);
  const int64_t pool = pool_tokens(b.kv_budget_bytes.value, b.full_cell_bytes.value, s.deployment.page_size);
  CHECK(b.full_pool_tokens.value == static_cast<double>(pool));
  REQUIRE(b.per_seq_len.size() == 1);
  const int64_t reserve = s.deployment.decode_token_reserve();
  CHECK(b.per_seq_len[0].max_requests_full.value == static_cast<double>((pool + reserve) / (16384 + reserve)));
  CHECK(b.figures().size() == 5);  // the toy's own print order
  // The GQA model holds 8 KV heads on one GPU, so its row is 8 × 512 B and its pool about an eighth of the toy's.
  CHECK(g.latent_row_bytes.value == 8 * 512);
  CHECK(g.full_pool_tokens.value * 8 == doctest::Approx(b.full_pool_tokens.value).epsilon(1e-4));

  // Step model: the toy prices the GQA layer terms with its own row. Decode attention is memory-bound, so the
  // context's share of the attention time (time at 131,072 tokens less time at none) scales with the row read:
  // 512 / 4,096 = 1 / 8 of the GQA model's (up to the integer-ns rounding of 32 layers' kernels).
  const sim::DecodeCostModel toy_cost(s, sim::CostParams{}, false);
  const sim::DecodeCostModel gqa_cost(gqa, sim::CostParams{}, false);
  CHECK(toy_cost.kv_row_bytes() == 512);
  CHECK(gqa_cost.kv_row_bytes() == 4096);
  const sim::GpuBatch empty{1, 0, 0, 0, 0, 0}, long_ctx{1, 131072, 131072, 0, 0, 0};
  const double toy_ctx = static_cast<double>(toy_cost.gpu_phases(long_ctx).attention -
                                             toy_cost.gpu_phases(empty).attention);
  const double gqa_ctx = static_cast<double>(gqa_cost.gpu_phases(long_ctx).attention -
                                             gqa_cost.gpu_phases(empty).attention);
  REQUIRE(gqa_ctx > 0);
  CHECK(toy_ctx / gqa_ctx == doctest::Approx(1.0 / 8).epsilon(1e-3));
}
