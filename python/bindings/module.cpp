// @brief hisparse._core, the compiled half of the Python package: numpy arrays in and out of facade.h, and the
// library's own request structs (sim/api/requests.h, validate/validate_request.h) bound field by field for plan,
// advise, simulate and validate, and simulate's outcome as read-only structs. Argument checks that name Python arguments live in python/hisparse/*.py; this layer only
// converts (and releases the GIL while the C++ side runs, so replays and plans of several Python threads proceed in
// parallel).
#include <cstdint>
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

namespace nb = nanobind;
using namespace nb::literals;

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

ReplayArgs replay_args(std::vector<std::string> policies, std::vector<int32_t> buffer_sizes, int64_t row_bytes,
                       int threads, int64_t lookahead_mb, bool per_step) {
  ReplayArgs a;
  a.policies = std::move(policies);
  a.buffer_sizes = std::move(buffer_sizes);
  a.row_bytes = row_bytes;
  a.threads = threads;
  a.lookahead_mb = lookahead_mb;
  a.per_step = per_step;
  return a;
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
      [](const std::string& path, int32_t top_k, const std::string& initial_state, std::vector<std::string> policies,
         std::vector<int32_t> buffer_sizes, int64_t row_bytes, int threads, int64_t lookahead_mb, bool per_step) {
        const ReplayArgs a = replay_args(std::move(policies), std::move(buffer_sizes), row_bytes, threads,
                                         lookahead_mb, per_step);
        ReplayOutput r;
        {
          nb::gil_scoped_release release;
          r = replay_path(path, top_k, initial_state, a);
        }
        return replay_to_dict(std::move(r));
      },
      "path"_a, "top_k"_a, "initial_state"_a, "policies"_a, "buffer_sizes"_a, "row_bytes"_a, "threads"_a,
      "lookahead_mb"_a, "per_step"_a);

  m.def(
      "replay_arrays",
      [](const std::vector<RequestArrays>& requests, int32_t top_k, const std::string& initial_state,
         std::vector<std::string> policies, std::vector<int32_t> buffer_sizes, int64_t row_bytes, int threads,
         int64_t lookahead_mb, bool per_step) {
        const ArrayTrace t = to_array_trace(requests, top_k, initial_state);
        const ReplayArgs a = replay_args(std::move(policies), std::move(buffer_sizes), row_bytes, threads,
                                         lookahead_mb, per_step);
        ReplayOutput r;
        {
          nb::gil_scoped_release release;
          r = replay_arrays(t, a);
        }
        return replay_to_dict(std::move(r));
      },
      "requests"_a, "top_k"_a, "initial_state"_a, "policies"_a, "buffer_sizes"_a, "row_bytes"_a, "threads"_a,
      "lookahead_mb"_a, "per_step"_a);

  namespace sim = hisparse::sim;
  namespace val = hisparse::validation;
#define HS_RW(cls, field) .def_rw(#field, &cls::field)
  nb::class_<sim::ScenarioOverrides>(m, "ScenarioOverrides")
      .def(nb::init<>()) HS_RW(sim::ScenarioOverrides, device_buffer_size)
      HS_RW(sim::ScenarioOverrides, host_to_device_ratio) HS_RW(sim::ScenarioOverrides, top_k)
      HS_RW(sim::ScenarioOverrides, max_running_requests) HS_RW(sim::ScenarioOverrides, mem_fraction_static)
      HS_RW(sim::ScenarioOverrides, page_size) HS_RW(sim::ScenarioOverrides, kv_dtype)
      HS_RW(sim::ScenarioOverrides, swap_in_kernel)
      HS_RW(sim::ScenarioOverrides, tpot_slo_ms) HS_RW(sim::ScenarioOverrides, mtp_draft_tokens)
      HS_RW(sim::ScenarioOverrides, mtp_acceptance) HS_RW(sim::ScenarioOverrides, host_dram_bytes)
      HS_RW(sim::ScenarioOverrides, host_reserve_bytes) HS_RW(sim::ScenarioOverrides, hbm_bytes)
      HS_RW(sim::ScenarioOverrides, weight_bytes) HS_RW(sim::ScenarioOverrides, weights_per_gpu_bytes)
      HS_RW(sim::ScenarioOverrides, activation_reserve_bytes) HS_RW(sim::ScenarioOverrides, kv_budget_bytes)
      HS_RW(sim::ScenarioOverrides, full_pool_tokens) HS_RW(sim::ScenarioOverrides, device_pool_tokens)
      HS_RW(sim::ScenarioOverrides, host_pool_tokens) HS_RW(sim::ScenarioOverrides, hisparse_prefetch);
  nb::class_<sim::ScenarioChoice>(m, "ScenarioChoice")
      .def(nb::init<>()) HS_RW(sim::ScenarioChoice, scenario) HS_RW(sim::ScenarioChoice, overrides)
      HS_RW(sim::ScenarioChoice, cost_params) HS_RW(sim::ScenarioChoice, calibration)
      HS_RW(sim::ScenarioChoice, step_calibration) HS_RW(sim::ScenarioChoice, attention_table)
      HS_RW(sim::ScenarioChoice, op_tables)
      // The overlap mode by its flag spelling (none | two-batch; None: the cost parameters').
      .def_prop_rw(
          "overlap",
          [](const sim::ScenarioChoice& c) -> std::optional<std::string> {
            if (!c.overlap) return std::nullopt;
            return std::string(sim::to_string(*c.overlap));
          },
          [](sim::ScenarioChoice& c, std::optional<std::string> v) {
            if (v) c.overlap = sim::parse_overlap_mode(*v, "--overlap");
            else c.overlap.reset();
          });
  nb::class_<sim::MissChoice>(m, "MissChoice")
      .def(nb::init<>()) HS_RW(sim::MissChoice, surface) HS_RW(sim::MissChoice, fraction)
      HS_RW(sim::MissChoice, trace) HS_RW(sim::MissChoice, policy) HS_RW(sim::MissChoice, threads)
      HS_RW(sim::MissChoice, rescale_trace_top_k);
  nb::class_<sim::StrategyOptions>(m, "StrategyOptions")
      .def(nb::init<>()) HS_RW(sim::StrategyOptions, enabled) HS_RW(sim::StrategyOptions, eviction_budget)
      HS_RW(sim::StrategyOptions, compression_sinks) HS_RW(sim::StrategyOptions, compression_recent)
      HS_RW(sim::StrategyOptions, compression_ratio) HS_RW(sim::StrategyOptions, reconstruct_bytes)
      HS_RW(sim::StrategyOptions, recall_file) HS_RW(sim::StrategyOptions, recall_top_k);
  nb::class_<sim::PlanRequest>(m, "PlanRequest")
      .def(nb::init<>()) HS_RW(sim::PlanRequest, setup) HS_RW(sim::PlanRequest, misses)
      HS_RW(sim::PlanRequest, seq_lens) HS_RW(sim::PlanRequest, workload) HS_RW(sim::PlanRequest, sweep_buffer_sizes)
      HS_RW(sim::PlanRequest, sweep_ratios) HS_RW(sim::PlanRequest, batch_cap) HS_RW(sim::PlanRequest, memory_only)
      HS_RW(sim::PlanRequest, strategies) HS_RW(sim::PlanRequest, command_line);
  nb::class_<sim::AdviseRequest>(m, "AdviseRequest")
      .def(nb::init<>()) HS_RW(sim::AdviseRequest, setup) HS_RW(sim::AdviseRequest, misses)
      HS_RW(sim::AdviseRequest, seq_lens) HS_RW(sim::AdviseRequest, workload) HS_RW(sim::AdviseRequest, mix_classes)
      HS_RW(sim::AdviseRequest, buffer_sizes) HS_RW(sim::AdviseRequest, ratios) HS_RW(sim::AdviseRequest, command_line)
      HS_RW(sim::AdviseRequest, decision_rule) HS_RW(sim::AdviseRequest, compare_miss_curves);
  nb::class_<sim::SimulateRequest>(m, "SimulateRequest")
      .def(nb::init<>()) HS_RW(sim::SimulateRequest, setup) HS_RW(sim::SimulateRequest, misses)
      HS_RW(sim::SimulateRequest, prefill_instances) HS_RW(sim::SimulateRequest, link_model)
      HS_RW(sim::SimulateRequest, workload) HS_RW(sim::SimulateRequest, duration_s)
      HS_RW(sim::SimulateRequest, miss_model) HS_RW(sim::SimulateRequest, admission)
      HS_RW(sim::SimulateRequest, max_retries) HS_RW(sim::SimulateRequest, mode)
      HS_RW(sim::SimulateRequest, both_overlaps) HS_RW(sim::SimulateRequest, concurrency)
      HS_RW(sim::SimulateRequest, think_time_s) HS_RW(sim::SimulateRequest, num_requests)
      HS_RW(sim::SimulateRequest, timeline_start_s) HS_RW(sim::SimulateRequest, timeline_length_s)
      HS_RW(sim::SimulateRequest, force) HS_RW(sim::SimulateRequest, prefix_cache);
  // simulate's outcome: read-only structs of figures (python/bindings/commands.h), not JSON text.
#define HS_RO(cls, field) .def_ro(#field, &cls::field)
  nb::class_<SimulateRunOutput>(m, "SimulateRun")
      HS_RO(SimulateRunOutput, mode) HS_RO(SimulateRunOutput, overlap) HS_RO(SimulateRunOutput, tag)
      HS_RO(SimulateRunOutput, concurrency) HS_RO(SimulateRunOutput, arrivals) HS_RO(SimulateRunOutput, admitted)
      HS_RO(SimulateRunOutput, finished) HS_RO(SimulateRunOutput, rejected)
      HS_RO(SimulateRunOutput, host_alloc_failures) HS_RO(SimulateRunOutput, demotions)
      HS_RO(SimulateRunOutput, events) HS_RO(SimulateRunOutput, ttft_modelled)
      HS_RO(SimulateRunOutput, tokens_per_s) HS_RO(SimulateRunOutput, tokens_per_s_per_gpu)
      HS_RO(SimulateRunOutput, steady_tokens_per_s) HS_RO(SimulateRunOutput, tpot_p50_ms)
      HS_RO(SimulateRunOutput, tpot_p99_ms) HS_RO(SimulateRunOutput, ttft_p50_ms) HS_RO(SimulateRunOutput, ttft_p99_ms)
      HS_RO(SimulateRunOutput, wait_p50_ms) HS_RO(SimulateRunOutput, wait_p99_ms)
      HS_RO(SimulateRunOutput, batch_per_rank_mean) HS_RO(SimulateRunOutput, hit_rate)
      HS_RO(SimulateRunOutput, pcie_h2d_util) HS_RO(SimulateRunOutput, io_stall_fraction)
      HS_RO(SimulateRunOutput, tpot_slo_attainment) HS_RO(SimulateRunOutput, wall_s)
      HS_RO(SimulateRunOutput, prefix_cache) HS_RO(SimulateRunOutput, prefix_hit_rate)
      HS_RO(SimulateRunOutput, ttft_mean_ms) HS_RO(SimulateRunOutput, prefill_tokens_saved)
      HS_RO(SimulateRunOutput, prefix_cache_peak_bytes) HS_RO(SimulateRunOutput, prefix_cache_mean_bytes)
      HS_RO(SimulateRunOutput, requests_csv) HS_RO(SimulateRunOutput, steps_csv)
      .def("__repr__", [](const SimulateRunOutput& r) {
        return "<SimulateRun " + r.tag + " concurrency=" + std::to_string(r.concurrency) + " finished=" +
               std::to_string(r.finished) + ">";
      });
  nb::class_<SimulateSweepRow>(m, "SimulateSweepRow")
      HS_RO(SimulateSweepRow, concurrency) HS_RO(SimulateSweepRow, mode) HS_RO(SimulateSweepRow, tokens_per_s)
      HS_RO(SimulateSweepRow, tpot_p50_ms) HS_RO(SimulateSweepRow, tpot_p99_ms) HS_RO(SimulateSweepRow, wait_p50_ms)
      HS_RO(SimulateSweepRow, wait_p99_ms) HS_RO(SimulateSweepRow, ttft_p50_ms) HS_RO(SimulateSweepRow, ttft_p99_ms)
      HS_RO(SimulateSweepRow, batch_per_rank) HS_RO(SimulateSweepRow, steady_tokens_per_s)
      HS_RO(SimulateSweepRow, finished) HS_RO(SimulateSweepRow, rejected)
      HS_RO(SimulateSweepRow, host_alloc_failures);
  nb::class_<SimulateOutput>(m, "SimulateOutput")
      HS_RO(SimulateOutput, scenario) HS_RO(SimulateOutput, workload) HS_RO(SimulateOutput, workload_source)
      HS_RO(SimulateOutput, workload_requests) HS_RO(SimulateOutput, runs) HS_RO(SimulateOutput, sweep)
      HS_RO(SimulateOutput, crossover) HS_RO(SimulateOutput, text);
#undef HS_RO
  nb::class_<val::ValidateOptions>(m, "ValidateOptions")
      .def(nb::init<>()) HS_RW(val::ValidateOptions, cases) HS_RW(val::ValidateOptions, start_case)
      HS_RW(val::ValidateOptions, seed) HS_RW(val::ValidateOptions, trace) HS_RW(val::ValidateOptions, trace_steps)
      HS_RW(val::ValidateOptions, only);
  nb::class_<val::ValidateRequest>(m, "ValidateRequest")
      .def(nb::init<>()) HS_RW(val::ValidateRequest, backend) HS_RW(val::ValidateRequest, kernel_config)
      HS_RW(val::ValidateRequest, options);
#undef HS_RW

  m.def(
      "plan",
      [](const sim::PlanRequest& request, const std::string& out, bool plots) {
        CommandOutput r;
        {
          nb::gil_scoped_release release;
          r = plan(request, out, plots);
        }
        return nb::make_tuple(r.json, r.text);
      },
      "request"_a, "out"_a, "plots"_a);

  m.def(
      "advise",
      [](const sim::AdviseRequest& request, const std::string& out, bool plots) {
        CommandOutput r;
        {
          nb::gil_scoped_release release;
          r = advise(request, out, plots);
        }
        return nb::make_tuple(r.json, r.text);
      },
      "request"_a, "out"_a, "plots"_a);

  m.def(
      "simulate",
      [](const sim::SimulateRequest& request, const std::string& out, bool plots) {
        nb::gil_scoped_release release;
        return simulate(request, out, plots);
      },
      "request"_a, "out"_a, "plots"_a);

  m.def("parse_bytes", &parse_bytes, "text"_a, "what"_a);

  // The settings table (sim/api/settings_table.h): its rows as dicts, and a setting set or read by its name, which
  // is how hisparse.plan / advise take every override keyword (python/hisparse/commands.py walks the table).
  m.def("settings", [] {
    nb::list rows;
    for (const SettingRow& r : settings()) {
      nb::dict d;
      d["name"] = r.name;
      d["flag"] = r.flag;
      d["sglang_alias"] = r.sglang_alias;
      d["kind"] = r.kind;
      d["unit"] = r.unit;
      d["range"] = r.range;
      d["default"] = r.default_text;
      d["help"] = r.help;
      d["groups"] = r.groups;
      d["out_of_range"] = r.out_of_range;
      d["example"] = r.example;
      rows.append(d);
    }
    return rows;
  });
  m.def("set_setting", &set_setting, "choice"_a, "name"_a, "text"_a, "where"_a);
  m.def("get_setting", &get_setting, "choice"_a, "name"_a);
  m.def("setting_range_error", &setting_range_error, "name"_a, "spelling"_a, "text"_a);

  m.def(
      "validate",
      [](const val::ValidateRequest& request) {
        val::ValidateResult result;
        {
          nb::gil_scoped_release release;
          result = validate(request);
        }
        nb::list out;
        for (const auto& r : result.reports) {
          nb::dict d;
          d["operation"] = r.op;
          d["variant"] = r.variant;
          d["cases"] = r.cases;
          d["values"] = r.values;
          d["mismatched_cases"] = r.mismatched_cases;
          d["rejected_both"] = r.rejected_both;
          d["first_mismatch"] = r.first_mismatch;
          d["seconds"] = r.seconds;
          out.append(d);
        }
        return nb::make_tuple(result.passed() ? 0 : 1, out);
      },
      "request"_a);

  m.def("cuda_status", [] {
    const CudaStatus s = cuda_status();
    nb::dict d;
    d["built"] = s.built;
    d["available"] = s.available;
    d["why"] = s.why;
    d["device"] = s.device;
    return d;
  });

  m.def("flush_stdout", &flush_stdout);
  m.def("set_bundled_scenario_dir", &set_bundled_scenario_dir, "dir"_a);
}
