// @brief libFuzzer target: the JSON-lines trace reader (and format detection) on arbitrary bytes.
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hisparse::fuzz::exercise([&] { return hisparse::traces::open_trace_memory(data, size, "t.jsonl"); });
  return 0;
}
