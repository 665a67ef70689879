// @brief libFuzzer target: `replay` end to end on arbitrary bytes — the trace readers (JSON lines or native, by the
// first byte), then the replay engine with online and offline policies at several buffer sizes. Only
// hisparse::Error may escape; a crash, a sanitizer report, a timeout or running out of memory is a finding.
#include "sim/replay/replay_engine.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  // First byte picks the format, so one corpus covers both parsers in front of the engine.
  const std::string path = hisparse::fuzz::scratch() + ((data[0] & 1) ? "/r.jsonl" : "/r.hstrace");
  hisparse::fuzz::write_bytes(path, data + 1, size - 1);
  try {
    auto src = hisparse::traces::open_trace(path);
    const int32_t K = src->meta().top_k;
    hisparse::sim::ReplayOptions o;
    o.policies = {"sglang-lru", "belady", "fifo"};
    o.buffer_sizes = {K, K + 1, 2 * K};
    o.threads = 1;
    o.keep_step_rows = true;
    hisparse::sim::run_replay(*src, o, [](const hisparse::sim::ReplayRequestRows&) {});
  } catch (const hisparse::Error&) {
  }
  return 0;
}
