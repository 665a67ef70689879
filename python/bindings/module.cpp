// @brief hisparse._core, the compiled half of the Python package: numpy arrays in and out of facade.h, and the
// library's own request structs (sim/api/requests.h, validate/validate_request.h) bound field by field for plan,
// advise, simulate and validate, and their outcomes as read-only structs (the rows the CLI prints), each struct's
// fields named once (bind_fields). Argument checks that name Python arguments live in python/hisparse/*.py; this
// layer only converts (and releases the GIL while the C++ side runs, so replays and plans of several Python threads
// proceed in parallel).
#include <cstdint>
#include <deque>
#include <stdexcept>
#include <exception>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "core/io/io_error.h"
#include "core/not_found_error.h"
#include "python/bindings/commands.h"
#include "python/bindings/facade.h"
#include "sim/cost/step/kv_mode.h"

namespace nb = nanobind;
using namespace nb::literals;

// KvMode to Python as its name ("full", "hisparse", "dynamic"), as the CLI's tables print it; it is never passed in.
namespace nanobind::detail {
template <>
struct type_caster<hisparse::sim::KvMode> {
  NB_TYPE_CASTER(hisparse::sim::KvMode, const_name("str"))
  bool from_python(handle, uint8_t, cleanup_list*) noexcept { return false; }
  static handle from_cpp(hisparse::sim::KvMode mode, rv_policy, cleanup_list*) noexcept {
    return PyUnicode_FromString(hisparse::sim::to_string(mode));
  }
};
}  // namespace nanobind::detail

namespace hisparse::python {

namespace {

using TopkArray = nb::ndarray<const int32_t, nb::ndim<3>, nb::c_contig, nb::device::cpu>;
using SeqArray = nb::ndarray<const int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using RequestArrays = std::tuple<int64_t, TopkArray, SeqArray>;

/// The arrays' trace; the ndarrays in `requests` keep the memory alive while the trace is used.
ArrayTrace to_array_trace(const std::vector<RequestArrays>& requests, int32_t top_k, const std::string& initial_state) {
  ArrayTrace t;
  t.top_k = top_k;
  t.initial_state = initial_state;
  for (size_t i = 0; i < requests.size(); ++i) {
    const auto& [id, topk, seq] = requests[i];
    const auto layers = static_cast<int32_t>(topk.shape(1));
    const auto width = static_cast<int32_t>(topk.shape(2));
    if (i == 0) {
      t.layers = layers;
      t.width = width;
    } else if (layers != t.layers || width != t.width) {
      throw std::invalid_argument("topk[" + std::to_string(i) + "]: shape [steps, " + std::to_string(layers) + ", " +
                                  std::to_string(width) + "] differs from topk[0]'s [steps, " +
                                  std::to_string(t.layers) + ", " + std::to_string(t.width) + "]");
    }
    if (topk.shape(0) != seq.shape(0))
      throw std::invalid_argument("seq_lens[" + std::to_string(i) + "]: " + std::to_string(seq.shape(0)) +
                                  " entries for " + std::to_string(topk.shape(0)) + " steps of topk[" +
                                  std::to_string(i) + "]");
    t.requests.push_back(ArrayRequest{id, topk.data(), seq.data(), static_cast<int64_t>(topk.shape(0))});
  }
  if (t.requests.empty()) throw std::invalid_argument("topk: no request (expected at least one array)");
  return t;
}

/// Hands a vector's memory to numpy without a copy.
template <typename T>
nb::object to_numpy(std::vector<T>&& v, std::vector<size_t> shape) {
  auto* heap = new std::vector<T>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::cast(nb::ndarray<nb::numpy, T>(heap->data(), shape.size(), shape.data(), owner));
}

nb::dict replay_to_dict(ReplayOutput&& r) {
  nb::dict d;
  d["json"] = r.json;
  d["csv"] = r.csv;
  d["config_policy"] = r.config_policy;
  d["config_buffer_size"] = r.config_buffer_size;
  const size_t n = r.config.size();
  nb::dict cols;
  cols["config"] = to_numpy(std::move(r.config), {n});
  cols["request"] = to_numpy(std::move(r.request), {n});
  cols["layer"] = to_numpy(std::move(r.layer), {n});
  cols["step"] = to_numpy(std::move(r.step), {n});
  cols["seq_len"] = to_numpy(std::move(r.seq_len), {n});
  cols["selected"] = to_numpy(std::move(r.selected), {n});
  cols["hits"] = to_numpy(std::move(r.hits), {n});
  cols["newest_hits"] = to_numpy(std::move(r.newest_hits), {n});
  cols["misses"] = to_numpy(std::move(r.misses), {n});
  cols["h2d_bytes"] = to_numpy(std::move(r.h2d_bytes), {n});
  d["steps"] = cols;
  d["seconds"] = r.seconds;
  d["entries"] = r.entries;
  d["threads"] = r.threads;
  return d;
}

constexpr bool kReadWrite = true, kReadOnly = false;

/// `names` ("a, b, c") split at its commas; each name is kept for the module's life (nanobind refers to it).
std::vector<const char*> field_names(const char* names) {
  static std::deque<std::string> kept;
  std::vector<const char*> out;
  std::string text(names);
  for (size_t at = 0; at <= text.size();) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const size_t first = text.find_first_not_of(' ', at);
    kept.push_back(text.substr(first, end - first));
    out.push_back(kept.back().c_str());
    at = end + 1;
  }
  return out;
}

/// "PlanRow(seq_len=16384, mode='full', ...)": a bound struct's repr, its `fields` in order.
std::string fields_repr(nb::handle self) {
  std::string out = nb::cast<std::string>(self.type().attr("__name__")) + "(";
  const char* separator = "";
  for (nb::handle name : self.type().attr("fields")) {
    out += separator + nb::cast<std::string>(name) + "=" + nb::cast<std::string>(nb::repr(self.attr(name)));
    separator = ", ";
  }
  return out + ")";
}

/// Binds `members` of a struct as attributes named by `names` (comma-separated, in the members' order) and puts the
/// names before those of the class's bases in its `fields` tuple: the columns Python's tables and to_pandas() read,
/// and its repr. One call per struct, so each field is named in one place.
template <typename Class, typename... Member>
void bind_fields(Class&& c, bool writable, const char* names, Member... members) {
  const std::vector<const char*> n = field_names(names);
  if (n.size() != sizeof...(Member))
    throw std::logic_error(std::string("bind_fields: ") + std::to_string(n.size()) + " names for " +
                           std::to_string(sizeof...(Member)) + " members: " + names);
  size_t i = 0;
  if (writable) (c.def_rw(n[i++], members), ...);
  else (c.def_ro(n[i++], members), ...);
  nb::list fields;
  for (const char* name : n) fields.append(nb::str(name));
  if (nb::hasattr(c, "fields"))
    for (nb::handle base : c.attr("fields")) fields.append(base);
  c.attr("fields") = nb::tuple(fields);
  c.def("__repr__", &fields_repr);
}

/// `f` as a function that releases the GIL while the C++ side runs (its result is converted after).
template <typename Result, typename... Arg>
auto without_gil(Result (*f)(Arg...)) {
  return [f](Arg... args) -> Result {
    nb::gil_scoped_release release;
    return f(std::forward<Arg>(args)...);
  };
}

/// replay's arguments after the trace, as hisparse/replay.py passes them: policies, buffer sizes, row bytes, threads,
/// look-ahead MB, per-step rows.
using ReplayOptions = std::tuple<std::vector<std::string>, std::vector<int32_t>, int64_t, int, int64_t, bool>;

/// `run` (a replay of one trace, given its ReplayArgs) with the GIL released, and its output as replay.py reads it.
template <typename Run>
nb::dict replay_without_gil(const ReplayOptions& options, Run&& run) {
  ReplayArgs a;
  std::tie(a.policies, a.buffer_sizes, a.row_bytes, a.threads, a.lookahead_mb, a.per_step) = options;
  ReplayOutput r;
  {
    nb::gil_scoped_release release;
    r = run(a);
  }
  return replay_to_dict(std::move(r));
}

}  // namespace

}  // namespace hisparse::python

NB_MODULE(_core, m) {
  using namespace hisparse::python;
  m.doc() = "HiSparse Lab's C++ core (traces, replay, plan, advise, validate); use the `hisparse` package instead.";

  // The project's errors are the user's input rejected (a bad value, a file or scenario that does not exist), so
  // Python sees the built-in exceptions for those, not RuntimeError; the message is the CLI's.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const hisparse::NotFoundError& e) {
      PyErr_SetString(PyExc_FileNotFoundError, e.what());
    } catch (const hisparse::IoError& e) {
      // OSError(errno, message), as Python's own open() and write() raise: `except OSError` sees a full disk.
      if (e.error_number() == 0) {
        PyErr_SetString(PyExc_OSError, e.what());
      } else {
        PyObject* args = Py_BuildValue("(is)", e.error_number(), e.what());
        PyErr_SetObject(PyExc_OSError, args);
        Py_XDECREF(args);
      }
    } catch (const hisparse::Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  m.def(
      "check_trace",
      [](const std::vector<RequestArrays>& requests, int32_t top_k, const std::string& initial_state) {
        const ArrayTrace t = to_array_trace(requests, top_k, initial_state);
        nb::gil_scoped_release release;
        check_array_trace(t);
      },
      "requests"_a, "top_k"_a, "initial_state"_a);

  m.def(
      "write_trace",
      [](const std::string& path, const std::string& format, const std::vector<RequestArrays>& requests, int32_t top_k,
         const std::string& initial_state, int32_t topk_dtype_bytes, int32_t seq_lens_dtype_bytes, int32_t zstd_level) {
        const ArrayTrace t = to_array_trace(requests, top_k, initial_state);
        nb::gil_scoped_release release;
        write_array_trace(path, format, t, topk_dtype_bytes, seq_lens_dtype_bytes, zstd_level);
      },
      "path"_a, "format"_a, "requests"_a, "top_k"_a, "initial_state"_a, "topk_dtype_bytes"_a, "seq_lens_dtype_bytes"_a,
      "zstd_level"_a);

  m.def(
      "read_trace",
      [](const std::string& path, int32_t top_k, const std::string& initial_state, bool meta_only) {
        LoadedTrace t;
        {
          nb::gil_scoped_release release;
          t = read_trace(path, top_k, initial_state, meta_only);
        }
        nb::dict d;
        d["layers"] = t.layers;
        d["top_k"] = t.top_k;
        d["initial_state"] = t.initial_state;
        d["source"] = t.source;
        d["format"] = t.format;
        d["topk_dtype_bytes"] = t.topk_dtype_bytes;
        d["seq_lens_dtype_bytes"] = t.seq_lens_dtype_bytes;
        d["request_ids"] = t.request_ids;
        nb::list reqs;
        for (auto& r : t.requests) {
          const size_t steps = r.seq_lens.size();
          reqs.append(nb::make_tuple(
              r.id, to_numpy(std::move(r.topk), {steps, static_cast<size_t>(t.layers), static_cast<size_t>(t.top_k)}),
              to_numpy(std::move(r.seq_lens), {steps})));
        }
        d["requests"] = reqs;
        return d;
      },
      "path"_a, "top_k"_a, "initial_state"_a, "meta_only"_a);

  m.def(
      "replay_path",
      [](const std::string& path, int32_t top_k, const std::string& initial_state, const ReplayOptions& options) {
        return replay_without_gil(options,
                                  [&](const ReplayArgs& a) { return replay_path(path, top_k, initial_state, a); });
      },
      "path"_a, "top_k"_a, "initial_state"_a, "options"_a);
  m.def(
      "replay_arrays",
      [](const std::vector<RequestArrays>& requests, int32_t top_k, const std::string& initial_state,
         const ReplayOptions& options) {
        const ArrayTrace t = to_array_trace(requests, top_k, initial_state);
        return replay_without_gil(options, [&](const ReplayArgs& a) { return replay_arrays(t, a); });
      },
      "requests"_a, "top_k"_a, "initial_state"_a, "options"_a);

  namespace sim = hisparse::sim;
  namespace val = hisparse::validation;
  // The library's request structs, field by field, read-write (sim/api/requests.h, validate/validate_request.h).
  using Ov = sim::ScenarioOverrides;
  bind_fields(nb::class_<Ov>(m, "ScenarioOverrides").def(nb::init<>()), kReadWrite,
              "device_buffer_size, host_to_device_ratio, top_k, max_running_requests, mem_fraction_static, page_size, "
              "kv_dtype, swap_in_kernel, tpot_slo_ms, mtp_draft_tokens, mtp_acceptance, host_dram_bytes, "
              "host_reserve_bytes, hbm_bytes, weight_bytes, weights_per_gpu_bytes, activation_reserve_bytes, "
              "kv_budget_bytes, full_pool_tokens, device_pool_tokens, host_pool_tokens, hisparse_prefetch",
              &Ov::device_buffer_size, &Ov::host_to_device_ratio, &Ov::top_k, &Ov::max_running_requests,
              &Ov::mem_fraction_static, &Ov::page_size, &Ov::kv_dtype, &Ov::swap_in_kernel, &Ov::tpot_slo_ms,
              &Ov::mtp_draft_tokens, &Ov::mtp_acceptance, &Ov::host_dram_bytes, &Ov::host_reserve_bytes, &Ov::hbm_bytes,
              &Ov::weight_bytes, &Ov::weights_per_gpu_bytes, &Ov::activation_reserve_bytes, &Ov::kv_budget_bytes,
              &Ov::full_pool_tokens, &Ov::device_pool_tokens, &Ov::host_pool_tokens, &Ov::hisparse_prefetch);
  using Ch = sim::ScenarioChoice;
  nb::class_<Ch> choice(m, "ScenarioChoice");
  bind_fields(choice.def(nb::init<>()), kReadWrite,
              "scenario, overrides, cost_params, calibration, step_calibration, attention_table, op_tables",
              &Ch::scenario, &Ch::overrides, &Ch::cost_params, &Ch::calibration, &Ch::step_calibration,
              &Ch::attention_table, &Ch::op_tables);
  // The overlap mode by its flag spelling (none | two-batch; None: the cost parameters').
  choice.def_prop_rw(
      "overlap",
      [](const Ch& c) -> std::optional<std::string> {
        if (!c.overlap) return std::nullopt;
        return std::string(sim::to_string(*c.overlap));
      },
      [](Ch& c, std::optional<std::string> v) {
        if (v) c.overlap = sim::parse_overlap_mode(*v, "--overlap");
        else c.overlap.reset();
      });
  using Mi = sim::MissChoice;
  bind_fields(nb::class_<Mi>(m, "MissChoice").def(nb::init<>()), kReadWrite,
              "surface, fraction, trace, policy, threads, rescale_trace_top_k", &Mi::surface, &Mi::fraction,
              &Mi::trace, &Mi::policy, &Mi::threads, &Mi::rescale_trace_top_k);
  using St = sim::StrategyOptions;
  bind_fields(nb::class_<St>(m, "StrategyOptions").def(nb::init<>()), kReadWrite,
              "enabled, eviction_budget, compression_sinks, compression_recent, compression_ratio, reconstruct_bytes, "
              "recall_file, recall_top_k",
              &St::enabled, &St::eviction_budget, &St::compression_sinks, &St::compression_recent,
              &St::compression_ratio, &St::reconstruct_bytes, &St::recall_file, &St::recall_top_k);
  using Pr = sim::PlanRequest;
  bind_fields(nb::class_<Pr>(m, "PlanRequest").def(nb::init<>()), kReadWrite,
              "setup, misses, seq_lens, workload, sweep_buffer_sizes, sweep_ratios, batch_cap, memory_only, "
              "strategies, command_line",
              &Pr::setup, &Pr::misses, &Pr::seq_lens, &Pr::workload, &Pr::sweep_buffer_sizes, &Pr::sweep_ratios,
              &Pr::batch_cap, &Pr::memory_only, &Pr::strategies, &Pr::command_line);
  using Ar = sim::AdviseRequest;
  bind_fields(nb::class_<Ar>(m, "AdviseRequest").def(nb::init<>()), kReadWrite,
              "setup, misses, seq_lens, workload, mix_classes, buffer_sizes, ratios, command_line, decision_rule, "
              "compare_miss_curves, layouts",
              &Ar::setup, &Ar::misses, &Ar::seq_lens, &Ar::workload, &Ar::mix_classes, &Ar::buffer_sizes, &Ar::ratios,
              &Ar::command_line, &Ar::decision_rule, &Ar::compare_miss_curves, &Ar::layouts);
  using Sr = sim::SimulateRequest;
  bind_fields(nb::class_<Sr>(m, "SimulateRequest").def(nb::init<>()), kReadWrite,
              "setup, misses, prefill_instances, link_model, workload, duration_s, miss_model, admission, "
              "v2_coordinator, max_retries, mode, both_overlaps, concurrency, think_time_s, num_requests, "
              "timeline_start_s, timeline_length_s, force, prefix_cache",
              &Sr::setup, &Sr::misses, &Sr::prefill_instances, &Sr::link_model, &Sr::workload, &Sr::duration_s,
              &Sr::miss_model, &Sr::admission, &Sr::v2_coordinator, &Sr::max_retries, &Sr::mode, &Sr::both_overlaps,
              &Sr::concurrency, &Sr::think_time_s, &Sr::num_requests, &Sr::timeline_start_s, &Sr::timeline_length_s,
              &Sr::force, &Sr::prefix_cache);
  using Vo = val::ValidateOptions;
  bind_fields(nb::class_<Vo>(m, "ValidateOptions").def(nb::init<>()), kReadWrite,
              "cases, start_case, seed, trace, trace_steps, only, progress", &Vo::cases, &Vo::start_case, &Vo::seed,
              &Vo::trace, &Vo::trace_steps, &Vo::only, &Vo::progress);
  using Vr = val::ValidateRequest;
  bind_fields(nb::class_<Vr>(m, "ValidateRequest").def(nb::init<>()), kReadWrite, "backend, kernel_config, options",
              &Vr::backend, &Vr::kernel_config, &Vr::options);

  // The outcomes: read-only structs of figures, the rows the CLI prints, not JSON text. Each class's `fields` tuple
  // names its columns in order (hisparse's to_pandas reads it).
  using Pt = sim::PlanTableRow;
  bind_fields(nb::class_<Pt>(m, "PlanRow"), kReadOnly,
              "seq_len, mode, applicable, max_per_rank, max_concurrency, binding_limit, tpot_ms, decode_tokens_per_s, "
              "hbm_bytes_per_request, host_bytes_per_request, resident_per_rank",
              &Pt::seq_len, &Pt::mode, &Pt::applicable, &Pt::max_per_rank, &Pt::max_concurrency, &Pt::binding_limit,
              &Pt::tpot_ms, &Pt::decode_tokens_per_s, &Pt::hbm_bytes_per_request, &Pt::host_bytes_per_request,
              &Pt::resident_per_rank);
  bind_fields(nb::class_<PlanOutput>(m, "PlanOutput"), kReadOnly, "scenario, rows, warnings, json, text",
              &PlanOutput::scenario, &PlanOutput::rows, &PlanOutput::warnings, &PlanOutput::json, &PlanOutput::text);
  using Rc = sim::AdviceRecommendation;
  bind_fields(nb::class_<Rc>(m, "AdviceRecommendation"), kReadOnly,
              "context, fits, setting, mode, device_buffer_size, host_to_device_ratio, concurrency, binding_limit, "
              "goodput_tokens_per_s, tpot_ms, sglang_flags",
              &Rc::context, &Rc::fits, &Rc::setting, &Rc::mode, &Rc::device_buffer_size, &Rc::host_to_device_ratio,
              &Rc::concurrency, &Rc::binding_limit, &Rc::goodput_tokens_per_s, &Rc::tpot_ms, &Rc::sglang_flags);
  using At = sim::AdviceTableRow;
  bind_fields(nb::class_<At>(m, "AdviceRow"), kReadOnly,
              "context, setting, mode, device_buffer_size, host_to_device_ratio, concurrency, binding_limit, "
              "goodput_tokens_per_s, vs_recommended, tpot_ms, hbm_bytes_per_request, recommended",
              &At::context, &At::setting, &At::mode, &At::device_buffer_size, &At::host_to_device_ratio,
              &At::concurrency, &At::binding_limit, &At::goodput_tokens_per_s, &At::vs_recommended, &At::tpot_ms,
              &At::hbm_bytes_per_request, &At::recommended);
  bind_fields(nb::class_<AdviseOutput>(m, "AdviseOutput"), kReadOnly,
              "scenario, recommendations, rows, warnings, json, text", &AdviseOutput::scenario,
              &AdviseOutput::recommendations, &AdviseOutput::rows, &AdviseOutput::warnings, &AdviseOutput::json,
              &AdviseOutput::text);
  using Lt = sim::LayoutTableRow;
  bind_fields(nb::class_<Lt>(m, "LayoutRow"), kReadOnly,
              "workload, input_tokens, output_tokens, layout, hisparse, applicable, not_applicable, gpus, prefill_gpus, "
              "pd, batch_per_rank, tpot_ms, prefill_s, requests_per_s, tokens_per_s_per_gpu, binding, winner",
              &Lt::workload, &Lt::input_tokens, &Lt::output_tokens, &Lt::layout, &Lt::hisparse, &Lt::applicable,
              &Lt::not_applicable, &Lt::gpus, &Lt::prefill_gpus, &Lt::pd, &Lt::batch_per_rank, &Lt::tpot_ms,
              &Lt::prefill_s, &Lt::requests_per_s, &Lt::tokens_per_s_per_gpu, &Lt::binding, &Lt::winner);
  bind_fields(nb::class_<AdviseLayoutsOutput>(m, "AdviseLayoutsOutput"), kReadOnly, "scenario, rows, text",
              &AdviseLayoutsOutput::scenario, &AdviseLayoutsOutput::rows, &AdviseLayoutsOutput::text);
  using Sp = sim::SweepPoint;
  bind_fields(nb::class_<Sp>(m, "SimulateSweepRow"), kReadOnly,
              "concurrency, mode, tokens_per_s, tpot_p50_ms, tpot_p99_ms, wait_p50_ms, wait_p99_ms, ttft_p50_ms, "
              "ttft_p99_ms, batch_per_rank, steady_tokens_per_s, finished, rejected, host_alloc_failures",
              &Sp::concurrency, &Sp::mode, &Sp::tokens_per_s, &Sp::tpot_p50_ms, &Sp::tpot_p99_ms, &Sp::wait_p50_ms,
              &Sp::wait_p99_ms, &Sp::ttft_p50_ms, &Sp::ttft_p99_ms, &Sp::batch_per_rank, &Sp::steady_tokens_per_s,
              &Sp::finished, &Sp::rejected, &Sp::host_alloc_failures);
  // A run is a sweep row (its figures) and more; its two CSV tables are attributes, not columns.
  using Ro = SimulateRunOutput;
  nb::class_<Ro, Sp> run(m, "SimulateRun");
  bind_fields(run, kReadOnly,
              "tag, overlap, arrivals, admitted, demotions, events, ttft_modelled, tokens_per_s_per_gpu, hit_rate, "
              "pcie_h2d_util, io_stall_fraction, tpot_slo_attainment, wall_s, prefix_cache, prefix_hit_rate, "
              "prefill_tokens_saved, ttft_mean_ms, prefix_cache_peak_bytes, prefix_cache_mean_bytes, v2_coordinator, "
              "v2_admitted_as_v2, v2_standard_no_whole_page, v2_standard_shorter_than_buffer, v2_standard_host_capacity, "
              "v2_standard_indexer_pages, v2_standard_temp_buffer, v2_evictions, v2_evicted_tokens, v2_evicted_share_mean",
              &Ro::tag, &Ro::overlap, &Ro::arrivals, &Ro::admitted, &Ro::demotions, &Ro::events, &Ro::ttft_modelled,
              &Ro::tokens_per_s_per_gpu, &Ro::hit_rate, &Ro::pcie_h2d_util, &Ro::io_stall_fraction,
              &Ro::tpot_slo_attainment, &Ro::wall_s, &Ro::prefix_cache, &Ro::prefix_hit_rate,
              &Ro::prefill_tokens_saved, &Ro::ttft_mean_ms, &Ro::prefix_cache_peak_bytes, &Ro::prefix_cache_mean_bytes,
              &Ro::v2_coordinator, &Ro::v2_admitted_as_v2, &Ro::v2_standard_no_whole_page,
              &Ro::v2_standard_shorter_than_buffer, &Ro::v2_standard_host_capacity, &Ro::v2_standard_indexer_pages,
              &Ro::v2_standard_temp_buffer, &Ro::v2_evictions, &Ro::v2_evicted_tokens, &Ro::v2_evicted_share_mean);
  run.def_ro("requests_csv", &Ro::requests_csv).def_ro("steps_csv", &Ro::steps_csv).def("__repr__", [](const Ro& r) {
    return "<SimulateRun " + r.tag + " concurrency=" + std::to_string(r.concurrency) + " finished=" +
           std::to_string(r.finished) + ">";
  });
  using So = SimulateOutput;
  bind_fields(nb::class_<So>(m, "SimulateOutput"), kReadOnly,
              "scenario, workload, workload_source, workload_requests, runs, sweep, crossover, text", &So::scenario,
              &So::workload, &So::workload_source, &So::workload_requests, &So::runs, &So::sweep, &So::crossover,
              &So::text);

  // The commands run with the GIL released, so several Python threads plan, advise and simulate in parallel.
  m.def("plan", without_gil(&plan), "request"_a, "out"_a, "plots"_a);
  m.def("advise", without_gil(&advise), "request"_a, "out"_a, "plots"_a);
  m.def("advise_layouts", without_gil(&advise_layouts), "request"_a);
  m.def("simulate", without_gil(&simulate), "request"_a, "out"_a, "plots"_a);
  m.def("parse_bytes", &parse_bytes, "text"_a, "what"_a);

  // The settings table (sim/api/settings_table.h): its rows as structs, and a setting set or read by its name, which
  // is how hisparse.plan / advise take every override keyword (python/hisparse/commands.py walks the table).
  using Sg = SettingRow;
  bind_fields(nb::class_<Sg>(m, "SettingRow"), kReadOnly,
              "name, flag, sglang_alias, kind, unit, range, default, help, groups, out_of_range, example", &Sg::name,
              &Sg::flag, &Sg::sglang_alias, &Sg::kind, &Sg::unit, &Sg::range, &Sg::default_text, &Sg::help, &Sg::groups,
              &Sg::out_of_range, &Sg::example);
  m.def("settings", &settings);
  m.def("set_setting", &set_setting, "choice"_a, "name"_a, "text"_a, "where"_a);
  m.def("get_setting", &get_setting, "choice"_a, "name"_a);
  m.def("setting_range_error", &setting_range_error, "name"_a, "spelling"_a, "text"_a);

  using Op = val::OpReport;
  bind_fields(nb::class_<Op>(m, "OpReport"), kReadOnly,
              "operation, variant, cases, values, mismatched_cases, rejected_both, first_mismatch, seconds", &Op::op,
              &Op::variant, &Op::cases, &Op::values, &Op::mismatched_cases, &Op::rejected_both, &Op::first_mismatch,
              &Op::seconds);
  m.def(
      "validate",
      [](const val::ValidateRequest& request) {
        val::ValidateResult result;
        {
          nb::gil_scoped_release release;
          result = validate(request);
        }
        return nb::make_tuple(result.passed() ? 0 : 1, result.reports);
      },
      "request"_a);

  bind_fields(nb::class_<CudaStatus>(m, "CudaStatus"), kReadOnly, "built, available, why, device", &CudaStatus::built,
              &CudaStatus::available, &CudaStatus::why, &CudaStatus::device);
  m.def("cuda_status", &cuda_status);

  m.def("flush_stdout", &flush_stdout);
  m.def("set_bundled_scenario_dir", &set_bundled_scenario_dir, "dir"_a);
}
