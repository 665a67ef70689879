// @brief What an advice becomes on disk: advise.json, the plots, advise.md and advise.html (see advise_request.h).
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/io/output_file.h"
#include "core/io/read_file.h"
#include "sim/api/advise_request.h"
#include "sim/report/plot_script.h"

namespace hisparse::sim {

namespace {

namespace fs = std::filesystem;

}  // namespace

void write_advice_files(const AdviseOutcome& outcome, const std::string& out_dir, bool with_plots) {
  const AdviceSetup& setup = outcome.setup;
  const std::vector<Advice>& advices = outcome.advices;
  create_output_directory(out_dir);
  const fs::path dir(out_dir);
  write_file_atomically((dir / "advise.json").string(), outcome.json());
  std::vector<AdvicePlot> plots = advice_plot_list(advices.size());
  // Plots of an earlier run (more mixes, or before --no-plots) must not be mistaken for this one's.
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("advise_", 0) == 0 && entry.path().extension() == ".png") fs::remove(entry.path());
  }
  if (with_plots) {
    run_plot_script("plot_advise.py", out_dir, "advise");
    for (auto& p : plots) p.png = read_file_or_empty((dir / p.file).string());
  }
  write_file_atomically((dir / "advise.md").string(), advice_to_markdown(setup.scenario, advices, setup.info, plots));
  write_file_atomically((dir / "advise.html").string(), advice_to_html(setup.scenario, advices, setup.info, plots));
}

}  // namespace hisparse::sim
