// @brief The shared set-up of `advise` and `replay --scenario` (see advise_setup.h).
#include "apps/advise_setup.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "apps/list_args.h"
#include "core/error.h"
#include "core/memory_budget.h"
#include "core/scenario_loader.h"
#include "core/yaml_reader.h"
#include "sim/calibration/calibration_choice.h"
#include "sim/miss/miss_surface.h"
#include "sim/workload/workload.h"

namespace hisparse::apps {

namespace po = boost::program_options;

void add_advise_options(po::options_description& desc, AdviseArgs& a, bool with_trace) {
  desc.add_options()("scenario", po::value(&a.scenario)->required(), "deployment name (scenarios/deployments) or YAML path")(
      "seq-lens", po::value(&a.seq_lens), "context lengths, comma-separated, K = 1024 (one advice each; default "
      "16K,32K,64K,128K unless --workload is given)")(
      "workload", po::value(&a.workload), "workload name / YAML / trace file: one advice for its decode context mix")(
      "mix-classes", po::value(&a.mix_classes)->default_value(a.mix_classes), "length classes of a --workload mix");
  if (with_trace)
    desc.add_options()("trace", po::value(&a.trace), "top-k trace whose replay gives the misses (else the miss surface)")(
        "policy", po::value(&a.policy)->default_value(a.policy), "swap-in policy of the miss model")(
        "threads", po::value(&a.threads)->default_value(a.threads), "replay threads for --trace");
  desc.add_options()("rescale-trace-top-k", "accept a --trace whose top_k differs from the scenario's: replay it at the "
                                            "same H/K and apply its miss fractions in (H/K, n/H)")(
      "miss-fraction", po::value<double>(), "a fixed per-layer miss fraction of slow-path steps instead of a model")(
      "miss-curve", po::value(&a.miss_curve), "miss surface: scenarios/miss_models/<name>.yaml or a .yaml path (default "
      "smollm2-real; e.g. synthetic-dsv32); with --trace, used where the trace measured nothing")(
      "buffer-sizes", po::value(&a.buffer_sizes), "device_buffer_size candidates (default top_k × 1, 1.5, 2, 3, 4, 6, 8)")(
      "ratios", po::value(&a.ratios), "host_to_device_ratio candidates (default 1,2,3,4,5,6,8,10,12,16,20)")(
      "tpot-slo-ms", po::value<double>(), "TPOT SLO in ms (default: the deployment's)")(
      "host-dram-bytes", po::value(&a.host_dram), "host DRAM per decode node (e.g. 1TiB)")(
      "host-reserve-bytes", po::value(&a.host_reserve), "host DRAM per node kept for the OS and the server (default 0)")(
      "calibration", po::value(&a.calibration)->default_value(a.calibration),
      "PCIe and swap-in copy calibration: auto (the hardware file's), none (roofline), or a YAML from `hisparse bench "
      "--calibrate`")(
      "step-calibration", po::value(&a.step_calibration)->default_value(a.step_calibration),
      "per-op decode-layer calibration: auto (the hardware file's), none (roofline), or a YAML from `hisparse bench step "
      "--fit`")(
      "cost-params", po::value(&a.cost_params)->default_value("auto"),
      "cost-model terms YAML (efficiencies, latencies, overheads, each with its source): auto (the hardware file's "
      "cost_model) or a path")(
      "overlap", po::value(&a.overlap), "none | two-batch (default: the cost parameters')");
}

namespace {

double bytes_flag(const std::string& text, const std::string& command, const char* flag) {
  double v = 0;
  if (!parse_quantity(text, Unit::kBytes, &v) || v < 0)
    throw_error("{}: --{} '{}' is not a byte size (expected e.g. 1TiB, 141e9, 93.5GB)", command, flag, text);
  return v;
}

std::vector<int32_t> int_list(const std::string& text, const std::string& command, const char* flag, int64_t lo) {
  std::vector<int32_t> out;
  for (int64_t v : parse_count_list(text, command, std::string("--") + flag, lo, int64_t{1} << 24, "4096,8192"))
    out.push_back(static_cast<int32_t>(v));
  return out;
}

}  // namespace

AdviseSetup make_advise_setup(const AdviseArgs& a, const po::variables_map& vm, const std::string& command) {
  AdviseSetup out;
  out.scenario = load_scenario(a.scenario);
  require_sparse_indexer(out.scenario, "hisparse advise");
  Scenario& s = out.scenario;
  if (vm.count("tpot-slo-ms")) {
    s.deployment.tpot_slo_ms = vm["tpot-slo-ms"].as<double>();
    if (!(s.deployment.tpot_slo_ms > 0)) throw_error("{}: --tpot-slo-ms {} (expected > 0)", command, s.deployment.tpot_slo_ms);
  }
  if (!a.host_dram.empty()) s.deployment.host_dram_bytes = bytes_flag(a.host_dram, command, "host-dram-bytes");
  sim::AdviseOptions& o = out.options;
  if (!a.host_reserve.empty()) o.host_reserve_bytes = bytes_flag(a.host_reserve, command, "host-reserve-bytes");
  const std::string terms_line = sim::load_cost_terms(a.cost_params, s, &o.cost);
  out.info.cost_label =
      "modelled; " + terms_line + "; " + sim::apply_calibrations(a.calibration, a.step_calibration, &s, &o.cost);
  if (!a.overlap.empty()) o.cost.overlap = sim::parse_overlap_mode(a.overlap, "--overlap");
  if (!a.buffer_sizes.empty()) o.buffer_sizes = int_list(a.buffer_sizes, command, "buffer-sizes", 1);
  if (!a.ratios.empty()) o.ratios = int_list(a.ratios, command, "ratios", 1);
  const std::vector<int32_t> sizes = sim::advise_buffer_sizes(s, o);

  const int32_t K = s.deployment.hisparse.top_k;
  sim::MissCurves fallback = a.miss_curve.empty()
                                 ? sim::default_miss_curves(s, a.policy)
                                 : sim::MissCurves::from_surface(sim::load_miss_surface(a.miss_curve), a.policy, K);
  if (vm.count("miss-fraction")) {
    const double f = vm["miss-fraction"].as<double>();
    if (!(f >= 0 && f <= 1)) throw_error("{}: --miss-fraction {} (expected in [0, 1])", command, f);
    out.misses = std::make_unique<sim::MissCurves>(sim::MissCurves::constant(f, fmt::format("--miss-fraction {}", f)));
    out.info.miss_label = "given (--miss-fraction)";
  } else if (!a.trace.empty()) {
    out.misses = std::make_unique<sim::MissCurves>(sim::MissCurves::from_trace(
        a.trace, a.policy, sizes, latent_row_bytes(s.model, s.deployment.kv_dtype), std::max(1, a.threads), fallback, K,
        vm.count("rescale-trace-top-k") > 0));
    out.info.miss_label = "measured (replayed top-k trace, steady state)";
  } else {
    out.misses = std::make_unique<sim::MissCurves>(std::move(fallback));
    out.info.miss_label = fmt::format("fitted (miss surface {}, steady state)",
                                      a.miss_curve.empty() ? sim::kDefaultMissSurface : a.miss_curve);
  }
  out.info.miss_source = out.misses->description();
  return out;
}

std::vector<sim::ContextMix> advise_mixes(const AdviseArgs& a, const Scenario& s, const std::string& command) {
  std::vector<sim::ContextMix> mixes;
  if (!a.seq_lens.empty() || a.workload.empty()) {
    const std::vector<int64_t> lens =
        a.seq_lens.empty() ? default_seq_lens()
                           : parse_count_list(a.seq_lens, command, "--seq-lens", 1, int64_t{1} << 30, "16K,32K,65536");
    for (int64_t n : lens) {
      sim::ContextMix m = sim::ContextMix::single(n);
      m.label = n % 1024 == 0 ? fmt::format("{}K", n / 1024) : std::to_string(n);
      mixes.push_back(m);
    }
  }
  if (!a.workload.empty()) {
    const sim::Workload w = sim::load_workload(a.workload);
    std::vector<std::pair<int64_t, int64_t>> io;
    // The first output token comes from prefill; decode steps see contexts input + 1 … input + output − 1.
    for (const auto& r : w.requests) io.emplace_back(int64_t{r.input_tokens} + 1, int64_t{r.output_tokens} - 1);
    if (a.mix_classes < 1) throw_error("{}: --mix-classes {} (expected >= 1)", command, a.mix_classes);
    mixes.push_back(sim::decode_context_mix(io, 8, a.mix_classes,
                                            fmt::format("workload {} ({} requests)", w.name, w.requests.size())));
  }
  for (const auto& m : mixes)
    for (const auto& c : m.classes)
      if (c.seq_len > s.deployment.context_length)
        throw_error("{}: context length {} exceeds the deployment's context_length {} ({})", command, c.seq_len,
                    s.deployment.context_length, s.source);
  return mixes;
}

void add_extrapolation_warnings(AdviseSetup& setup, const std::vector<sim::Advice>& advices) {
  for (const auto& a : advices) {
    const sim::Candidate* rec = a.recommended();
    if (!rec || rec->mode != sim::KvMode::kHiSparse) continue;
    const int32_t H = rec->buffer_size;
    std::vector<int64_t> lens;
    for (const auto& c : a.mix.classes)
      if (c.seq_len > H && setup.misses->extrapolated(H, c.seq_len)) lens.push_back(c.seq_len);
    if (lens.empty()) continue;
    std::string list;
    for (int64_t n : lens) list += fmt::format("{}{}", list.empty() ? "" : ", ", n);
    setup.info.warnings.push_back(fmt::format(
        "{}: the recommendation (H = {}, H/K {:.3g}) reads the miss model outside the range it was measured over at "
        "n = {} (n/H {:.3g}–{:.3g}): the nearest measured fraction is held, capped by the steady-state bound "
        "(n − H)/(K − 1); a trace recorded at these lengths (--trace) would measure it",
        a.mix.label, H, static_cast<double>(H) / setup.scenario.deployment.hisparse.top_k, list,
        static_cast<double>(lens.front()) / H, static_cast<double>(lens.back()) / H));
  }
}

}  // namespace hisparse::apps
