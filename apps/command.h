// @brief The subcommand table of the `hisparse` CLI: one entry per file in apps/.
#pragma once

#include <string>
#include <vector>

namespace hisparse::apps {

/// A subcommand receives its own arguments (argv[0] is the subcommand name) and returns the exit code.
using CommandFn = int (*)(int argc, char** argv);

struct Command {
  const char* name;
  const char* summary;
  CommandFn run;
};

/// The registration list, explicit rather than static self-registration so every command is seen in one place.
/// Defined in main.cpp.
const std::vector<Command>& commands();

// One declaration per subcommand file.
int run_info(int argc, char** argv);
int run_validate(int argc, char** argv);
int run_validate_engine_record(const std::string& path);  // validate_engine_record.cpp: `validate --engine-record`
int run_bench(int argc, char** argv);
int run_bench_ops(int argc, char** argv);  // bench_attention.cpp: `bench attention|topk`
int run_bench_step(int argc, char** argv);  // bench_step.cpp: `bench step`
int run_trace(int argc, char** argv);
int run_simulate(int argc, char** argv);
int run_replay(int argc, char** argv);
int run_plan(int argc, char** argv);
int run_check(int argc, char** argv);  // check.cpp: `check`, the pool check plan and advise run first
int run_fit_miss_model(int argc, char** argv);
int run_advise(int argc, char** argv);
int run_select(int argc, char** argv);
int run_sweep(int argc, char** argv);  // sweep.cpp (+ sweep_mpi.cpp): `sweep GRID.yaml`
int run_calibrate(int argc, char** argv);  // calibrate.cpp: `calibrate --from-metrics`
int run_fidelity(int argc, char** argv);   // fidelity.cpp: published field measurements vs the tool

}  // namespace hisparse::apps
