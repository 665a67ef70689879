// @brief libFuzzer target: the `.npy` directory reader. The input is split at "#SPLIT#\n" markers into
// req_0_topk.npy, req_0_seq_lens.npy and (optionally) meta.json.
#include <cstring>

#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char kMarker[] = "#SPLIT#\n";
  const size_t m = sizeof kMarker - 1;
  const std::string dir = hisparse::fuzz::scratch() + "/npy";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const char* names[] = {"req_0_topk.npy", "req_0_seq_lens.npy", "meta.json"};
  size_t start = 0;
  for (int part = 0; part < 3 && start <= size; ++part) {
    size_t end = size;
    if (part < 2) {
      for (size_t i = start; i + m <= size; ++i) {
        if (std::memcmp(data + i, kMarker, m) == 0) {
          end = i;
          break;
        }
      }
    }
    hisparse::fuzz::write_bytes(dir + "/" + names[part], data + start, end - start);
    if (end == size) break;
    start = end + m;
  }
  hisparse::fuzz::exercise(dir);
  return 0;
}
