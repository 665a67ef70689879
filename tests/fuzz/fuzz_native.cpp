// @brief libFuzzer target: the native trace reader on arbitrary bytes (checksums are not enforced in fuzz builds).
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = hisparse::fuzz::scratch() + "/t.hstrace";
  hisparse::fuzz::write_bytes(path, data, size);
  hisparse::fuzz::exercise(path);
  return 0;
}
