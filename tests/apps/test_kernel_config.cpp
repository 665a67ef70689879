// @brief --kernel-config: every key parses within its range and nothing else does, the canonical spec round-trips,
// and the retired environment knobs are refused by validate and bench instead of being silently ignored.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "cuda/kernel_config.h"
#include "tests/apps/cli_test_util.h"

using namespace hisparse;
namespace fs = std::filesystem;

TEST_CASE("kernel config: defaults, every key, and the canonical spec round trip") {
  CHECK(cuda::parse_kernel_config("") == cuda::KernelConfig{});
  CHECK(cuda::parse_kernel_config("default") == cuda::KernelConfig{});
  CHECK(cuda::to_spec(cuda::KernelConfig{}) == "default");
  const cuda::KernelConfig c = cuda::parse_kernel_config(
      " swap_in.cluster=4, swap_in.cluster_max_batch=-1,swap_in.large_batch_cluster=1,swap_in.table_bits=0,"
      "swap_in.pdl=0,swap_in.phase_timer=1,topk.blocks_per_sm=3,topk.min_chunk=4096 ");
  CHECK(c.swap_in.cluster == 4);
  CHECK(c.swap_in.cluster_max_batch == -1);
  CHECK(c.swap_in.large_batch_cluster);
  CHECK(c.swap_in.table_bits == 0);
  CHECK_FALSE(c.swap_in.pdl);
  CHECK(c.swap_in.phase_timer);
  CHECK(c.topk.blocks_per_sm == 3);
  CHECK(c.topk.min_chunk == 4096);
  CHECK(cuda::parse_kernel_config(cuda::to_spec(c)) == c);
  // Only what differs from the default is spelled out.
  CHECK(cuda::to_spec(cuda::parse_kernel_config("swap_in.cluster=8,topk.min_chunk=1024")) == "topk.min_chunk=1024");
  for (const char* key : {"swap_in.cluster", "swap_in.cluster_max_batch", "swap_in.large_batch_cluster",
                          "swap_in.table_bits", "swap_in.pdl", "swap_in.phase_timer", "topk.blocks_per_sm",
                          "topk.min_chunk"})
    CHECK(cuda::kernel_config_help().find(key) != std::string::npos);
}

TEST_CASE("kernel config: typos, bad values and repeats are errors naming the key and what is expected") {
  CHECK_THROWS_WITH_AS(cuda::parse_kernel_config("swap_in.clustr=4"), doctest::Contains("unknown key 'swap_in.clustr'"),
                       Error);
  CHECK_THROWS_WITH_AS(cuda::parse_kernel_config("swap_in.cluster=3"), doctest::Contains("0, 1, 2, 4, 8 or 16"), Error);
  CHECK_THROWS_WITH_AS(cuda::parse_kernel_config("swap_in.table_bits=3"), doctest::Contains("0 .. 2"), Error);
  CHECK_THROWS_WITH_AS(cuda::parse_kernel_config("swap_in.pdl=yes"), doctest::Contains("swap_in.pdl = 'yes'"), Error);
  CHECK_THROWS_WITH_AS(cuda::parse_kernel_config("topk.min_chunk=100"), doctest::Contains("512"), Error);
  CHECK_THROWS_WITH_AS(cuda::parse_kernel_config("topk.min_chunk=99999999999999999999"), doctest::Contains("expected"),
                       Error);
  CHECK_THROWS_WITH_AS(cuda::parse_kernel_config("swap_in.pdl"), doctest::Contains("not key=value"), Error);
  CHECK_THROWS_WITH_AS(cuda::parse_kernel_config("swap_in.pdl=0,swap_in.pdl=1"), doctest::Contains("twice"), Error);
  CHECK_THROWS_WITH_AS(cuda::parse_kernel_config("swap_in.pdl="), doctest::Contains("expected"), Error);
}

TEST_CASE("validate and bench refuse a retired kernel environment variable and a bad --kernel-config") {
  const fs::path dir = test::scratch_dir("cli_kernel_config");
  const std::string err = (dir / "stderr.txt").string();
  auto run = [&](const std::string& prefix, const std::string& args) {
    const int status = std::system((prefix + test::cli() + " " + args + " > /dev/null 2> " + err).c_str());
    return std::make_pair(status, test::slurp(err));
  };
  auto [s1, e1] = run("HISPARSE_SWAP_IN_CLUSTER=4 ", "validate --backend cpu --cases 1 --only swap-in");
  CHECK(s1 != 0);
  CHECK(e1.find("HISPARSE_SWAP_IN_CLUSTER=4 is no longer read") != std::string::npos);
  auto [s2, e2] = run("HISPARSE_GATHER_KERNEL=flat ", "bench gather --iters 1");
  CHECK(s2 != 0);
  CHECK(e2.find("no longer read") != std::string::npos);
  auto [s3, e3] = run("", "validate --backend cuda --kernel-config swap_in.cluster=5 --cases 1");
  CHECK(s3 != 0);
  CHECK(e3.find("0, 1, 2, 4, 8 or 16") != std::string::npos);
  auto [s4, e4] = run("", "validate --backend cpu --kernel-config swap_in.pdl=0 --cases 1");
  CHECK(s4 != 0);
  CHECK(e4.find("only the cuda backend") != std::string::npos);
  auto [s5, e5] = run("", "bench topk --kernel-config topk.nope=1");
  CHECK(s5 != 0);
  CHECK(e5.find("unknown key 'topk.nope'") != std::string::npos);
  fs::remove_all(dir);
}
