// @brief libFuzzer target: the JSON-lines trace reader (and format detection) on arbitrary bytes.
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = hisparse::fuzz::scratch() + "/t.jsonl";
  hisparse::fuzz::write_bytes(path, data, size);
  hisparse::fuzz::exercise(path);
  return 0;
}
