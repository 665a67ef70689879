// @brief What the Python module hisparse._core calls: the project's trace readers and writers, the replay engine and
// report, behind an interface of standard types only; plan / advise / validate take the library's own request
// structs (commands.h), which module.cpp binds field by field.
//
// Errors: bad arrays throw std::invalid_argument; everything the project itself rejects throws hisparse::Error with
// the CLI's message, hisparse::NotFoundError where a named file or scenario does not exist. module.cpp raises them
// as ValueError, ValueError and FileNotFoundError.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hisparse::python {

/// One request of a trace held in numpy arrays (C-contiguous int32, owned by the caller).
struct ArrayRequest {
  int64_t id = 0;
  const int32_t* topk = nullptr;      // [steps][layers][width]
  const int32_t* seq_lens = nullptr;  // [steps]
  int64_t steps = 0;
};

/// A whole trace held in arrays: every request has the same layers and list width.
struct ArrayTrace {
  int32_t layers = 0;
  int32_t width = 0;   // K of the arrays' last axis
  int32_t top_k = 0;   // the trace's top_k (0: the width); a narrower one packs the valid entries as --top-k does
  std::string initial_state = "identity";
  std::vector<ArrayRequest> requests;
};

/// Every step through the readers' checks (traces/step_validation.h); throws std::invalid_argument naming
/// "topk arrays: request R, step S, layer L" and what is wrong.
void check_array_trace(const ArrayTrace& trace);

/// Writes the arrays as a native file or an `.npy` directory ("native" | "npy") with the project's writers (temporary
/// name, then renamed). `topk_dtype_bytes` / `seq_lens_dtype_bytes` (4 or 8) set the `.npy` element sizes.
void write_array_trace(const std::string& path, const std::string& format, const ArrayTrace& trace,
                       int32_t topk_dtype_bytes, int32_t seq_lens_dtype_bytes, int32_t zstd_level);

/// A trace read whole into memory by open_trace (any format).
struct LoadedRequest {
  int64_t id = 0;
  std::vector<int32_t> topk;      // [steps][layers][top_k]
  std::vector<int32_t> seq_lens;  // [steps]
};
struct LoadedTrace {
  int32_t layers = 0;
  int32_t top_k = 0;
  std::string initial_state;
  std::string source;
  std::string format;  // native | npy | jsonl
  int32_t topk_dtype_bytes = 4;
  int32_t seq_lens_dtype_bytes = 4;
  std::vector<int64_t> request_ids;
  std::vector<LoadedRequest> requests;  // empty when only the meta was asked for
};

/// `top_k` 0 and `initial_state` "" keep what the trace declares (TraceOpenOptions).
LoadedTrace read_trace(const std::string& path, int32_t top_k, const std::string& initial_state, bool meta_only);

struct ReplayArgs {
  std::vector<std::string> policies;
  std::vector<int32_t> buffer_sizes;  // replayed in ascending order, as `hisparse replay --buffer-sizes` does
  int64_t row_bytes = 1152;
  int threads = 0;  // 0: the hardware threads, as the CLI
  int64_t lookahead_mb = 1024;
  bool per_step = true;  // collect the rows of `--per-step-csv`
};

/// The replay's output: replay.json and replay.csv byte for byte as the CLI writes them (recommendation: none, no
/// deployment given), and the per-step CSV's rows as columns, in the CLI's row order.
struct ReplayOutput {
  std::string json;
  std::string csv;
  std::vector<std::string> config_policy;  // per configuration, policy-major
  std::vector<int32_t> config_buffer_size;
  // One entry per (request, configuration, layer, step) row.
  std::vector<int32_t> config, layer, seq_len, selected, hits, newest_hits, misses;
  std::vector<int64_t> request, step, h2d_bytes;
  // What the run cost (measured; not part of replay.json).
  double seconds = 0;
  int64_t entries = 0;
  int threads = 1;
};

ReplayOutput replay_path(const std::string& path, int32_t top_k, const std::string& initial_state,
                         const ReplayArgs& args);
ReplayOutput replay_arrays(const ArrayTrace& trace, const ReplayArgs& args);

struct CudaStatus {
  bool built = false;      // the CUDA backend was compiled in (HISPARSE_CUDA found nvcc)
  bool available = false;  // and a usable GPU is present
  std::string why;         // why not, when not
  std::string device;      // the GPU's name, when available
};
CudaStatus cuda_status();

/// Flushes C's stdout (what the commands print goes through it) so a redirection can be undone cleanly.
void flush_stdout();

}  // namespace hisparse::python
