// @brief Capacity plan outputs: plan.json's `rows` contract (exactly seven keys, types, values equal to the plan),
// the extra sections, and the Markdown / HTML reports naming every pool and formula.
#include <doctest/doctest.h>

#include <set>

#include "core/scenario_loader.h"
#include "sim/plan/capacity_plan.h"
#include "sim/plan/plan_report.h"
#include "traces/json_value.h"

using namespace hisparse;
using namespace hisparse::sim;
using hisparse::traces::JsonValue;

namespace {

CapacityPlan small_plan(const char* scenario) {
  const Scenario s = load_scenario(scenario);
  PlanOptions o;
  o.seq_lens = {16384, 131072};
  o.sweep_buffer_sizes = {2048, 4096};
  o.sweep_ratios = {2, 5};
  return compute_capacity_plan(s, o, default_miss_curves(s));
}

}  // namespace

TEST_CASE("plan.json: rows hold exactly the contract's keys with the plan's values") {
  for (const char* name : {"dsv32-8xh200-1tb", "dsv32-2x8xh20-pd"}) {
    CAPTURE(name);
    const CapacityPlan p = small_plan(name);
    PlanRunInfo info;
    info.command_line = "hisparse plan --scenario x";
    const JsonValue j = traces::parse_json(plan_to_json(p, info), "plan.json");
    REQUIRE(j.kind == JsonValue::Kind::kObject);
    const JsonValue* rows = j.find("rows");
    REQUIRE(rows);
    REQUIRE(rows->kind == JsonValue::Kind::kArray);
    REQUIRE(rows->items.size() == 4);  // 2 seq lens × {full, hisparse}
    const std::set<std::string> want = {"seq_len", "mode", "max_concurrency", "binding_limit", "decode_tokens_per_s",
                                        "hbm_bytes_per_request", "host_bytes_per_request"};
    for (size_t i = 0; i < rows->items.size(); ++i) {
      const JsonValue& r = rows->items[i];
      std::set<std::string> keys;
      for (const auto& [k, v] : r.members) keys.insert(k);
      CHECK(keys == want);
      CHECK(r.find("seq_len")->is_integer);
      CHECK(r.find("max_concurrency")->is_integer);
      CHECK(r.find("mode")->kind == JsonValue::Kind::kString);
      CHECK(r.find("binding_limit")->kind == JsonValue::Kind::kString);
      CHECK(r.find("decode_tokens_per_s")->kind == JsonValue::Kind::kNumber);
      CHECK(r.find("hbm_bytes_per_request")->kind == JsonValue::Kind::kNumber);
      CHECK(r.find("host_bytes_per_request")->kind == JsonValue::Kind::kNumber);
      // Values equal the plan's (modes alternate full, hisparse).
      const PlanRow& pr = p.rows[i];
      CHECK(r.find("mode")->text == (i % 2 == 0 ? "full" : "hisparse"));
      CHECK(r.find("seq_len")->integer == pr.seq_len);
      CHECK(r.find("max_concurrency")->integer == pr.max_concurrency);
      CHECK(r.find("binding_limit")->text == pr.binding_limit);
      CHECK(r.find("decode_tokens_per_s")->number == doctest::Approx(pr.decode_tokens_per_s));
      CHECK(r.find("hbm_bytes_per_request")->number == pr.hbm_per_request.value);
      CHECK(r.find("host_bytes_per_request")->number == pr.host_per_request.value);
      const std::set<std::string> limits = {"max_running_requests", "hbm", "logical_pool", "host_pool",
                                            "host_dram", "pcie", "slo"};
      CHECK(limits.count(r.find("binding_limit")->text) == 1);
    }
    // The other sections the reports and plots read.
    for (const char* key : {"scenario", "pools", "details", "gains", "curves", "sweeps", "hbm_per_gpu", "miss_model", "run"})
      CHECK_MESSAGE(j.find(key) != nullptr, key);
    CHECK(j.find("sweeps")->find("device_buffer_size")->items.size() == 4);
    CHECK(j.find("sweeps")->find("host_to_device_ratio")->items.size() == 4);
    // Limits that do not apply are null, never a made-up number.
    const JsonValue& full_limits = *j.find("details")->items[0].find("limits");
    for (const auto& l : full_limits.items)
      if (l.find("key")->text == "host_dram") CHECK(l.find("per_rank")->kind == JsonValue::Kind::kNull);
  }
}

TEST_CASE("plan reports: every SGLang pool with its value and formula, plots embedded or marked missing") {
  const CapacityPlan p = small_plan("dsv32-8xh200-1tb");
  PlanRunInfo info;
  info.command_line = "hisparse plan --scenario dsv32-8xh200-1tb";
  std::vector<PlanPlot> plots = plan_plot_list();
  plots[0].png = std::string("\x89PNG\r\n\x1a\n", 8);
  const std::string md = plan_to_markdown(p, info, plots);
  const std::string html = plan_to_html(p, info, plots);
  // Device pool 261,504 tokens (SGLang's max_total_num_tokens) and its formula, host pool 1,307,584.
  for (const std::string* doc : {&md, &html}) {
    CHECK(doc->find("261,504") != std::string::npos);
    CHECK(doc->find("1,307,584") != std::string::npos);
    CHECK(doc->find("floor(kv_budget / hisparse_cell / page_size)") != std::string::npos);
    CHECK(doc->find("floor(device_pool / buffer_slots)") != std::string::npos);
  }
  CHECK(md.find("![") != std::string::npos);
  CHECK(md.find("not written") != std::string::npos);  // the other plots are missing
  CHECK(html.find("data:image/png;base64,iVBORw0KGgo=") != std::string::npos);  // the 8-byte PNG signature
  CHECK(html.rfind("</html>") != std::string::npos);
}
