// @brief libFuzzer target: the native trace reader on arbitrary bytes (checksums are not enforced in fuzz builds).
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hisparse::fuzz::exercise([&] { return hisparse::traces::open_trace_memory(data, size, "t.hstrace"); });
  return 0;
}
