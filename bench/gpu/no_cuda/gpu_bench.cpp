// @brief CPU-only build: the GPU benchmarks (copies, layouts, DeltaKV, attention, top-k) exist so `hisparse bench` links, and say the build has no CUDA.
#include "core/error.h"
#include "bench/gpu/copy_bench.h"
#include "bench/gpu/op_bench.h"

namespace hisparse::bench {
namespace {
[[noreturn]] void no_cuda() {
  throw_error("hisparse bench: built without CUDA (configured without nvcc or with -DHISPARSE_CUDA=OFF)");
}
}  // namespace

std::vector<BenchRow> bench_swap_in(const BenchOptions&) { no_cuda(); }
std::vector<BenchRow> bench_gather(const BenchOptions&) { no_cuda(); }
std::vector<BenchRow> bench_backup(const BenchOptions&) { no_cuda(); }
std::vector<BenchRow> bench_bulk(const BenchOptions&) { no_cuda(); }
std::vector<BenchRow> bench_layouts(const BenchOptions&) { no_cuda(); }
std::vector<BenchRow> bench_deltakv(const BenchOptions&) { no_cuda(); }
std::vector<OpBenchRow> bench_attention(const OpBenchOptions&) { no_cuda(); }
std::vector<OpBenchRow> bench_topk(const OpBenchOptions&) { no_cuda(); }

}  // namespace hisparse::bench
