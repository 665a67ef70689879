// @brief libFuzzer target: the `.npy` directory reader. The input is split at "#SPLIT#\n" markers into
// req_0_topk.npy, req_0_seq_lens.npy and (optionally) meta.json, held in memory.
#include <cstring>
#include <map>
#include <string_view>

#include "tests/fuzz/fuzz_common.h"
#include "traces/npy_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char kMarker[] = "#SPLIT#\n";
  const size_t m = sizeof kMarker - 1;
  const char* bytes = reinterpret_cast<const char*>(data);
  const char* names[] = {"req_0_topk.npy", "req_0_seq_lens.npy", "meta.json"};
  std::map<std::string, std::string_view> files;
  size_t start = 0;
  for (int part = 0; part < 3 && start <= size; ++part) {
    size_t end = size;
    if (part < 2) {
      // memchr (libc, not instrumented) finds each candidate '#': a compare per byte in this loop was traced by the
      // coverage instrumentation, thousands of callbacks per input for bytes the reader never looks at; memcmp only
      // where the marker can start (libFuzzer traces every memcmp).
      for (const char* p = bytes + start; size - static_cast<size_t>(p - bytes) >= m;) {
        p = static_cast<const char*>(std::memchr(p, '#', size - m + 1 - static_cast<size_t>(p - bytes)));
        if (!p) break;
        if (std::memcmp(p, kMarker, m) == 0) {
          end = static_cast<size_t>(p - bytes);
          break;
        }
        ++p;
      }
    }
    files[names[part]] = std::string_view(bytes + start, end - start);
    if (end == size) break;
    start = end + m;
  }
  hisparse::fuzz::exercise([&] { return hisparse::traces::open_npy_trace_memory("npy", files, {}); });
  return 0;
}
