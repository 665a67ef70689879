// @brief libFuzzer target: `replay` end to end on arbitrary bytes — the trace readers (JSON lines or native, told
// apart by the content after a first byte that the corpus keeps for compatibility), then the replay engine with the
// contract's policy and the offline one at two buffer sizes. Only hisparse::Error may escape; a crash, a sanitizer
// report, a timeout or running out of memory is a finding.
//
// Configurations are chosen for coverage per execution: sglang-lru runs the contract's swap-in (direct and hashed
// position tables, by n / (K + H)); belady runs the layer future (dense and sparse) and the step skeleton every other
// policy shares (classify_step, emit_loads, commit_loads). H = K puts every step with n > K on the slow path at the
// smallest buffer; 2K keeps some on the fast path. Four configurations instead of the nine of sglang-lru, belady and
// fifo at K, K + 1 and 2K: 2.25x fewer per input; the other policies' victim choices are unit-tested
// (tests/cpu_ref/test_policies.cpp).
#include "sim/replay/replay_engine.h"
#include "tests/fuzz/fuzz_common.h"

namespace {
constexpr int64_t kMaxStepEntries = 4096;  // layers x top_k replayed per input
constexpr int32_t kStepsPerSlot = 8;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  try {
    auto src = hisparse::traces::open_trace_memory(data + 1, size - 1, "r.trace");
    const int32_t K = src->meta().top_k;
    // The engine's per-step work and histograms are O(layers x K) (x H for the swap-in): a wider step runs the same
    // code for milliseconds. Such inputs still go through the reader fuzzers; here they would cut executions 10x.
    if (int64_t{K} * src->meta().layers > kMaxStepEntries) return 0;
    hisparse::sim::ReplayOptions o;
    o.policies = {"sglang-lru", "belady"};
    o.buffer_sizes = {K, 2 * K};
    o.threads = 1;
    o.keep_step_rows = true;
    // The CPU session stages batch_bytes of lists per slot (up to 4096 steps at the 4 MiB default), allocated per
    // execution whatever the input's length: at the default that fixed cost took most of each execution (about 660
    // executions/s measured on 2026-11-28, CI fell under the floor). Eight steps per slot keeps the staging small
    // and puts slot boundaries inside the fuzzed traces, which the default never reached on inputs this short.
    o.batch_bytes = size_t{kStepsPerSlot} * static_cast<size_t>(K) * static_cast<size_t>(src->meta().layers) * 4;
    hisparse::sim::run_replay(*src, o, [](const hisparse::sim::ReplayRequestRows&) {});
  } catch (const hisparse::Error&) {
  }
  return 0;
}
