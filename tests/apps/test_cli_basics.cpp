// @brief What a newcomer meets first: --version, --help of every trace subcommand (no "'--out' is required"), bench
// --help naming every benchmark, validate's hint on a machine without a GPU, and trace convert refusing to write a
// JSON-lines name in another format.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/apps/cli_test_util.h"

namespace fs = std::filesystem;
using hisparse::test::cli;
using hisparse::test::slurp;
using hisparse::test::Run;
using hisparse::test::run;

TEST_CASE("hisparse --version and the help of every subcommand exit 0") {
  const fs::path dir = hisparse::test::scratch_dir("cli_basics");
  const Run v = run("--version", dir);
  CHECK(v.status == 0);
  CHECK(v.out.rfind("hisparse 0.", 0) == 0);
  for (const char* sub : {"trace gen --help", "trace info --help", "trace convert --help", "replay --help",
                          "plan --help", "advise --help", "simulate --help", "validate --help", "info --help",
                          "fit-miss-model --help", "calibrate --help", "fidelity --help", "select --help",
                          "sweep --help"}) {
    CAPTURE(sub);
    const Run h = run(sub, dir);
    CHECK(h.status == 0);
    CHECK(h.err.find("required") == std::string::npos);
    CHECK(h.out.find("--") != std::string::npos);
  }
  const Run b = run("bench --help", dir);
  CHECK(b.status == 0);
  CHECK(b.out.find("attention") != std::string::npos);
  CHECK(b.out.find("topk") != std::string::npos);
  CHECK(b.out.find("bench step") != std::string::npos);
  const Run st = run("bench step --help", dir);
  CHECK(st.status == 0);
  CHECK(st.out.find("--batches") != std::string::npos);
  // Bad input is named before any GPU is looked for.
  const Run bad = run("bench step --model no-such-model", dir);
  CHECK(bad.status != 0);
  CHECK(bad.err.find("no models/no-such-model.yaml") != std::string::npos);
  const Run badb = run("bench step --batches 0", dir);
  CHECK(badb.status != 0);
  CHECK(badb.err.find("--batches") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("validate without a GPU says how to run on the CPU, and the CPU run shows progress") {
  const fs::path dir = hisparse::test::scratch_dir("cli_validate");
  const Run r = run("validate --cases 1 --only swap-in", dir);
  // On a GPU machine this validates one case; without one it must fail with the way forward.
  if (r.status != 0) {
    CHECK(r.err.find("--backend cpu") != std::string::npos);
    CHECK(r.err.find("(the default)") != std::string::npos);
  }
  // The CPU run shows its progress per operation on stderr.
  const Run cpu = run("validate --backend cpu --cases 2 --only swap-in indexer indexer-fp8", dir);
  CHECK(cpu.status == 0);
  CHECK(cpu.err.find("validate: swap-in ...") != std::string::npos);
  CHECK(cpu.err.find("validate: indexer done in") != std::string::npos);
  CHECK(cpu.err.find("validate: indexer-fp8 done in") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("trace convert: a JSON-lines or .npy name never silently receives the native format") {
  const fs::path dir = hisparse::test::scratch_dir("cli_convert");
  REQUIRE(run("trace gen --preset tiny --out " + (dir / "t.hstrace").string(), dir).status == 0);
  const Run j = run("trace convert " + (dir / "t.hstrace").string() + " " + (dir / "t.jsonl").string(), dir);
  CHECK(j.status != 0);
  CHECK(j.err.find("writing JSON lines is not supported") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "t.jsonl"));
  const Run n = run("trace convert " + (dir / "t.hstrace").string() + " " + (dir / "t.npy").string(), dir);
  CHECK(n.status != 0);
  CHECK(n.err.find("--format npy") != std::string::npos);
  const Run ok = run("trace convert " + (dir / "t.hstrace").string() + " " + (dir / "npy_dir").string() + " --format npy", dir);
  CHECK(ok.status == 0);
  fs::remove_all(dir);
}

TEST_CASE("an interrupted trace gen leaves no temporary file or directory behind (native and .npy)") {
  for (const char* format : {"native", "npy"}) {
    INFO("format " << format);
    const fs::path dir = hisparse::test::scratch_dir("cli_interrupt");
    const fs::path out = dir / (std::string("big.") + format);
    // Far more than a second of work; SIGTERM after a second (a background job of sh ignores SIGINT, so the test
    // uses the other signal the handler covers; tests/traces/test_interrupt_cleanup.cpp raises all three).
    const std::string cmd = "sh -c '" + cli() + " trace gen --preset default --requests 100000 --format " + format +
                            " --out " + out.string() +
                            " > /dev/null 2>&1 & pid=$!; sleep 1; kill -TERM $pid; wait $pid; exit 0'";
    REQUIRE(std::system(cmd.c_str()) == 0);
    CHECK_FALSE(fs::exists(out));
    int leftovers = 0;
    for (const auto& e : fs::directory_iterator(dir))
      leftovers += e.path().filename().string().find(".tmp") != std::string::npos;
    CHECK(leftovers == 0);
    fs::remove_all(dir);
  }
}

TEST_CASE("scenario names resolve in the working directory's scenarios/ before the build's source tree") {
  const fs::path dir = hisparse::test::scratch_dir("cli_scenario_dir");
  fs::create_directories(dir / "scenarios" / "deployments");
  std::string yaml = slurp(fs::path(HISPARSE_SOURCE_DIR) / "scenarios" / "deployments" / "dsv32-8xh200-1tb.yaml");
  yaml.replace(yaml.find("name: dsv32-8xh200-1tb"), std::string("name: dsv32-8xh200-1tb").size(), "name: my-node");
  yaml.replace(yaml.find("host_to_device_ratio: 5"), std::string("host_to_device_ratio: 5").size(), "host_to_device_ratio: 3");
  { std::ofstream(dir / "scenarios" / "deployments" / "my-node.yaml") << yaml; }
  // Model and hardware are not in the working directory's copy: they come from the next directory searched.
  const std::string cmd = "cd " + dir.string() + " && " + cli() + " info --scenario my-node > out.txt 2> err.txt";
  CHECK(std::system(cmd.c_str()) == 0);
  const std::string out = slurp(dir / "out.txt");
  CHECK(out.find((dir / "scenarios" / "deployments" / "my-node.yaml").string()) != std::string::npos);
  CHECK(out.find("host_to_device_ratio") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("oversized requests get a clear error before anything is allocated") {
  const fs::path dir = hisparse::test::scratch_dir("cli_sizes");
  // One JSON-lines record claiming a 2^31 − 1 token context: refused by the reader, naming the field.
  { std::ofstream(dir / "huge.jsonl") << R"({"request_id": 0, "step_idx": 0, "layer_id": 0, "seq_len": 2147483647, "selected_token_pos": [0, 5]})" << "\n"; }
  const Run j = run("replay --trace " + (dir / "huge.jsonl").string() + " --buffer-sizes 2 --quiet", dir);
  CHECK(j.status != 0);
  CHECK(j.err.find("seq_len") != std::string::npos);
  // A buffer beyond the longest context is a typo.
  REQUIRE(run("trace gen --preset tiny --out " + (dir / "t.hstrace").string(), dir).status == 0);
  const Run b = run("replay --trace " + (dir / "t.hstrace").string() + " --buffer-sizes 100000000 --quiet", dir);
  CHECK(b.status != 0);
  CHECK(b.err.find("--buffer-sizes: '100000000' is not an integer in [1, 16777216]") != std::string::npos);
  // A generated trace of a billion requests is refused up front instead of running for days.
  const Run g = run("trace gen --requests 1000000000 --out " + (dir / "g.hstrace").string(), dir);
  CHECK(g.status != 0);
  CHECK(g.err.find("requests = 1000000000") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "g.hstrace"));
  fs::remove_all(dir);
}
