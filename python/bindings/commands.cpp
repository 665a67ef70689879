// @brief hisparse.plan / advise / validate: the CLI's own subcommand functions (apps/), run in this process with the
// arguments the CLI would get, so the JSON and the validation are the CLI's byte for byte.
#include <cstdio>
#include <string>
#include <vector>

#include "apps/command.h"
#include "apps/validate.h"
#include "core/error.h"
#include "cuda/runtime.h"
#include "python/bindings/facade.h"

namespace hisparse::python {

namespace {

/// argv as main() hands it to a subcommand: argv[0] is the subcommand's name. The strings outlive the call.
struct Argv {
  explicit Argv(const std::string& name, const std::vector<std::string>& args) : strings(args) {
    strings.insert(strings.begin(), name);
    for (auto& s : strings) pointers.push_back(s.data());
    pointers.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(strings.size()); }
  char** argv() { return pointers.data(); }
  std::vector<std::string> strings;
  std::vector<char*> pointers;
};

}  // namespace

int run_command(const std::string& name, const std::vector<std::string>& args) {
  Argv a(name, args);
  int rc = 0;
  if (name == "plan") {
    rc = apps::run_plan(a.argc(), a.argv());
  } else if (name == "advise") {
    rc = apps::run_advise(a.argc(), a.argv());
  } else {
    throw_error("hisparse._core.run_command: '{}' is not one of plan, advise", name);
  }
  std::fflush(stdout);
  return rc;
}

int run_validate(const std::vector<std::string>& args, std::vector<ValidateRow>& rows) {
  Argv a("validate", args);
  std::vector<apps::OpReport> reports;
  const int rc = apps::run_validate_reports(a.argc(), a.argv(), &reports);
  std::fflush(stdout);
  for (const auto& r : reports) {
    ValidateRow v;
    v.op = r.op;
    v.variant = r.variant;
    v.first_mismatch = r.first_mismatch;
    v.cases = r.cases;
    v.values = r.values;
    v.mismatched_cases = r.mismatched_cases;
    v.rejected_both = r.rejected_both;
    v.seconds = r.seconds;
    rows.push_back(v);
  }
  return rc;
}

CudaStatus cuda_status() {
  CudaStatus s;
#ifdef HISPARSE_HAVE_CUDA
  s.built = true;
#endif
  s.available = cuda::cuda_available(&s.why);
  if (s.available) s.device = cuda::device_name();
  return s;
}

void flush_stdout() { std::fflush(stdout); }

}  // namespace hisparse::python
