// @brief `hisparse sweep GRID.yaml [--out DIR] [--jobs N]`: expands a grid of plan / replay / simulate points
// (docs/sweep.md) and runs it on a pool of worker processes (this binary in its hidden `sweep --worker` mode, one
// work item at a time over pipes), or across MPI ranks when an MPI launcher started it (apps/sweep_mpi.cpp); one
// results table in grid order either way.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <thread>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "apps/command_line.h"
#include "apps/command.h"
#include "apps/sweep_exec.h"
#include "core/error.h"
#include "core/io/interrupt_cleanup.h"
#include "core/io/output_file.h"
#include "core/progress.h"
#include "core/work_estimate.h"
#include "sim/sweep/sweep_cost.h"
#include "sim/sweep/sweep_table.h"

extern char** environ;

namespace hisparse::apps {

namespace {

namespace po = boost::program_options;
namespace fs = std::filesystem;
using sim::sweep::Grid;
using sim::sweep::WorkItem;

std::string shard_label(const WorkItem& w) {
  return w.shards > 1 ? fmt::format("shard {}/{} (requests {}..{}): ", w.shard + 1, w.shards, w.first_request,
                                    w.first_request + w.requests - 1)
                      : std::string();
}

// ---- worker side -------------------------------------------------------------------------------------------------

bool read_full(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool write_full(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t r = ::write(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

/// Reads item indexes ("<i>\n") on stdin until it closes; answers each with "<i> <bytes>\n" + run_item_message().
int run_worker(const std::string& grid_path) {
  // The protocol owns the original stdout; anything a computation prints goes to stderr instead.
  const int out = ::dup(1);
  if (out < 0 || ::dup2(2, 1) < 0) throw_error("sweep --worker: cannot set up its output ({})", std::strerror(errno));
  const Grid grid = sim::sweep::load_grid(grid_path);
  const std::vector<WorkItem> items = sim::sweep::plan_work(grid);
  std::string line;
  char c = 0;
  while (read_full(0, &c, 1)) {
    if (c != '\n') {
      line += c;
      continue;
    }
    const long long i = std::atoll(line.c_str());
    line.clear();
    if (i < 0 || i >= static_cast<long long>(items.size())) throw_error("sweep --worker: item {} out of range", i);
    const std::string msg = run_item_message(grid, items[static_cast<size_t>(i)]);
    const std::string head = fmt::format("{} {}\n", i, msg.size());
    if (!write_full(out, head.data(), head.size()) || !write_full(out, msg.data(), msg.size())) return 1;
  }
  return 0;
}

// ---- pool side ---------------------------------------------------------------------------------------------------

struct Worker {
  pid_t pid = -1;
  int to = -1, from = -1;
  int64_t item = -1;  // in flight
  std::string buf;
};

Worker spawn_worker(const std::string& exe, const std::string& grid_path) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0)
    throw_error("sweep: cannot create pipes for a worker ({})", std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  // dup2 clears close-on-exec on the target: the worker keeps exactly stdin/stdout of its own pipes.
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  std::vector<std::string> args = {exe, "sweep", "--worker", grid_path};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  Worker w;
  const int rc = posix_spawn(&w.pid, exe.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(in[0]);
  ::close(out[1]);
  if (rc != 0) {
    ::close(in[1]);
    ::close(out[0]);
    throw_error("sweep: cannot start worker {} ({})", exe, std::strerror(rc));
  }
  w.to = in[1];
  w.from = out[0];
  return w;
}

std::string exit_text(int status) {
  if (WIFSIGNALED(status)) return fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return "ended";
}

int run_pool(const SweepInvocation& inv, int jobs) {
  const Grid grid = sim::sweep::load_grid(inv.grid_path);
  const std::vector<WorkItem> items = sim::sweep::plan_work(grid);
  const int n_workers = static_cast<int>(std::min<size_t>(static_cast<size_t>(std::max(1, jobs)), items.size()));
  SweepRun run(inv, grid, items, fmt::format("sweep ({} worker process{})", n_workers, n_workers == 1 ? "" : "es"),
               n_workers);
  const std::vector<size_t> pending = run.pending();
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  const std::string grid_abs = fs::absolute(inv.grid_path).string();
  // A worker that dies makes writes to its pipe fail with EPIPE instead of killing the pool.
  struct sigaction ignore{}, old{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);

  std::vector<Worker> workers;
  std::deque<size_t> queue(pending.begin(), pending.end());
  size_t done = 0;
  auto assign = [&](Worker& w) {
    if (queue.empty()) {
      if (w.to >= 0) ::close(w.to);  // EOF: the worker exits
      w.to = -1;
      return;
    }
    w.item = static_cast<int64_t>(queue.front());
    queue.pop_front();
    const std::string line = fmt::format("{}\n", w.item);
    if (!write_full(w.to, line.data(), line.size())) {
      // Reported when its output closes (below), with its exit status.
    }
  };
  for (int i = 0; i < n_workers && !queue.empty(); ++i) {
    workers.push_back(spawn_worker(exe, grid_abs));
    assign(workers.back());
  }
  while (done < pending.size()) {
    std::vector<pollfd> fds;
    for (const auto& w : workers) fds.push_back({w.from, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw_error("sweep: poll failed ({})", std::strerror(errno));
    }
    for (size_t k = 0; k < workers.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Worker& w = workers[k];
      char chunk[65536];
      const ssize_t r = ::read(w.from, chunk, sizeof chunk);
      if (r < 0 && errno == EINTR) continue;
      if (r > 0) {
        w.buf.append(chunk, static_cast<size_t>(r));
        // Complete messages: "<item> <bytes>\n" + bytes.
        while (true) {
          const size_t nl = w.buf.find('\n');
          if (nl == std::string::npos) break;
          long long item = -1, bytes = -1;
          if (std::sscanf(w.buf.c_str(), "%lld %lld", &item, &bytes) != 2 || item != w.item || bytes < 0)
            throw_error("sweep: worker {} sent a malformed header for item {}", w.pid, w.item);
          if (w.buf.size() < nl + 1 + static_cast<size_t>(bytes)) break;
          run.item_done(static_cast<size_t>(item), parse_item_message(w.buf.substr(nl + 1, static_cast<size_t>(bytes))));
          w.buf.erase(0, nl + 1 + static_cast<size_t>(bytes));
          ++done;
          w.item = -1;
          assign(w);
        }
        continue;
      }
      // Its output closed: the worker ended. An item in flight failed with it; a fresh worker takes over.
      ::close(w.from);
      if (w.to >= 0) ::close(w.to);
      int status = 0;
      while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
      }
      if (w.item >= 0) {
        run.item_done(static_cast<size_t>(w.item),
                      {true, false, fmt::format("the worker process running it {}", exit_text(status))});
        ++done;
      }
      workers.erase(workers.begin() + static_cast<std::ptrdiff_t>(k));
      if (!queue.empty()) {
        workers.push_back(spawn_worker(exe, grid_abs));
        assign(workers.back());
      }
      break;  // fds no longer matches workers
    }
  }
  for (auto& w : workers) {
    if (w.to >= 0) ::close(w.to);
    ::close(w.from);
    int status = 0;
    while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  sigaction(SIGPIPE, &old, nullptr);
  return run.finish(fmt::format("local process pool, {} worker{}", n_workers, n_workers == 1 ? "" : "s"));
}

}  // namespace

// ---- shared with sweep_mpi.cpp -----------------------------------------------------------------------------------

SweepRun::SweepRun(const SweepInvocation& inv, const Grid& grid, const std::vector<WorkItem>& items,
                   const std::string& who, int computing)
    : inv_(inv), grid_(grid), items_(items), results_(items.size()) {
  journal_ = std::make_unique<sim::sweep::SweepJournal>(inv.out_dir, sim::sweep::sweep_spec_hash(grid, items),
                                                        items.size(), inv.resume);
  const std::vector<double> cost = sim::sweep::work_item_seconds(grid, items);
  progress_ = std::make_unique<sim::sweep::SweepProgress>(
      grid.points.size(), items, cost, inv.quiet ? ProgressStyle::kOff : progress_style_by_default(), who);
  const auto& finished = journal_->finished();
  double cost_left = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!finished[i]) {
      cost_left += cost[i];
      continue;
    }
    results_[i] = {true, true, *finished[i]};
    progress_->item_resumed(i);
  }
  if (!inv.quiet)
    fmt::print(stderr,
               "{}: {} points, {} work items (a trace's buffer sizes replayed in one pass; replays of many requests "
               "split into request shards)\n",
               who, grid.points.size(), items.size());
  if (!inv.quiet && inv.resume)
    fmt::print(stderr, "sweep: --resume: {} of {} work items read back from {}, {} to compute\n",
               journal_->resumed_count(), items.size(), journal_->path(), items.size() - journal_->resumed_count());
  const size_t to_compute = items.size() - journal_->resumed_count();
  check_work_estimate({"sweep",
                       fmt::format("{} work item{} to compute, {} at a time", to_compute, to_compute == 1 ? "" : "s",
                                   std::max(1, computing)),
                       cost_left / std::max(1, computing), sim::sweep::work_item_basis(), ""},
                      inv.force, inv.quiet);
}

std::vector<size_t> SweepRun::pending() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < results_.size(); ++i)
    if (!results_[i].done) out.push_back(i);
  return out;
}

void SweepRun::item_done(size_t item, ItemResult result) {
  if (result.ok) {
    journal_->append(item, result.text);
    // Tests stand in for a job killed mid-sweep (a node lost, a wall-clock limit): no destructor, no flush.
    if (inv_.stop_after > 0 && ++journaled_ == inv_.stop_after) ::raise(SIGKILL);
  }
  results_[item] = std::move(result);
  progress_->item_done(item, results_[item].ok);
}

int SweepRun::finish(const std::string& how) {
  progress_->finish();
  const int code = write_sweep_results(grid_, items_, results_, inv_, how);
  journal_->remove();  // the tables hold every row now; a failed point's row says why
  return code;
}

std::string run_item_message(const Grid& grid, const WorkItem& item) {
  try {
    return "1\n" + sim::sweep::run_work_item(grid, item);
  } catch (const std::exception& e) {
    return "0\n" + shard_label(item) + e.what();
  } catch (...) {
    return "0\n" + shard_label(item) + "unknown exception";
  }
}

ItemResult parse_item_message(const std::string& m) {
  if (m.size() < 2 || (m[0] != '0' && m[0] != '1') || m[1] != '\n')
    return {true, false, "a malformed result came back from the process that ran it"};
  return {true, m[0] == '1', m.substr(2)};
}

int write_sweep_results(const Grid& grid, const std::vector<WorkItem>& items, const std::vector<ItemResult>& results,
                        const SweepInvocation& inv, const std::string& how) {
  std::vector<std::vector<size_t>> by_point(grid.points.size());
  for (size_t i = 0; i < items.size(); ++i)
    for (int64_t p : items[i].points) by_point[static_cast<size_t>(p)].push_back(i);
  std::vector<sim::sweep::PointRow> rows;
  for (size_t p = 0; p < grid.points.size(); ++p) {
    const auto& point = grid.points[p];
    std::vector<std::string> texts;
    std::string error;
    for (size_t i : by_point[p]) {
      if (!results[i].done) error = shard_label(items[i]) + "no result came back";
      else if (!results[i].ok) error = results[i].text;
      if (!error.empty()) break;
      texts.push_back(results[i].text);
    }
    if (error.empty()) {
      try {
        rows.push_back(sim::sweep::finish_point(grid, point, texts));
        continue;
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    rows.push_back(sim::sweep::failed_point(point, error));
  }
  const fs::path dir(inv.out_dir);  // created (and checked) by SweepRun before any computing
  const std::string md = sim::sweep::table_markdown(grid, rows);
  write_file_atomically((dir / "sweep.csv").string(), sim::sweep::table_csv(grid, rows));
  write_file_atomically((dir / "sweep.json").string(), sim::sweep::table_json(grid, rows));
  write_file_atomically((dir / "sweep.md").string(), md);
  fmt::print("{}", md);
  int64_t failed = 0;
  for (size_t p = 0; p < rows.size(); ++p) {
    if (rows[p].ok) continue;
    ++failed;
    fmt::print(stderr, "sweep: {} failed: {}\n", sim::sweep::describe_point(grid.points[p]), rows[p].error);
  }
  fmt::print("wrote {}/sweep.csv, sweep.json, sweep.md ({} points, {} failed; {})\n", inv.out_dir, rows.size(), failed,
             how);
  if (failed) fmt::print(stderr, "sweep: {} of {} points failed (their rows say why)\n", failed, rows.size());
  return failed ? 1 : 0;
}

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(v)) return true;
  return false;
}

namespace {

/// What an interrupted sweep prints on its way out (Ctrl-C, SIGTERM, SIGHUP): the journal keeps every finished work
/// item, so the same command with --resume continues it.
std::string sweep_resume_note(const std::string& command, const std::string& out_dir) {
  const bool has_resume = (" " + command + " ").find(" --resume ") != std::string::npos;
  return fmt::format("\nsweep: interrupted; the finished work items are in {}/sweep.journal: continue with\n  {}{}\n",
                     out_dir, command, has_resume ? "" : " --resume");
}

}  // namespace

int run_sweep(int argc, char** argv) {
  SweepInvocation inv;
  int jobs = 0;
  po::options_description desc(
      "hisparse sweep GRID.yaml [--out DIR] [--jobs N] [--resume]\n\n"
      "Expands GRID.yaml (docs/sweep.md) into points of kind plan, replay or simulate and runs them on N worker\n"
      "processes; under an MPI launcher (mpirun -np N hisparse sweep GRID.yaml) on the MPI ranks instead. Replays of\n"
      "many requests are split into request shards and merged exactly. Writes DIR/sweep.csv, sweep.json, sweep.md\n"
      "(rows in grid order whatever the completion order) and prints the Markdown table; a failed point is reported\n"
      "with its parameters and makes the exit status 1, the other rows are still written. Each finished work item is\n"
      "appended to DIR/sweep.journal as it completes (fsync'd; removed once the tables are written): an interrupted\n"
      "sweep continues with --resume, computing only what the journal lacks.\n\noptions");
  desc.add_options()("help,h", "this help")("grid", po::value(&inv.grid_path), "the grid YAML")(
      "out,o", po::value(&inv.out_dir)->default_value("sweep_out"), "output directory")(
      "jobs,j", po::value(&jobs), "worker processes (default: the hardware threads)")(
      "resume", "continue an interrupted sweep: skip the work items DIR/sweep.journal holds (same grid only)")(
      "quiet", "no progress on stderr")(
      "force", "run even when the up-front estimate (printed on stderr when 10 s or more) is over an hour");
  po::options_description hidden;
  hidden.add_options()("worker", po::value<std::string>(), "internal: run work items of GRID from stdin")(
      "stop-after", po::value(&inv.stop_after), "internal (tests): SIGKILL itself once N work items are journaled");
  po::options_description all;
  all.add(desc).add(hidden);
  po::positional_options_description pos;
  pos.add("grid", 1);
  po::variables_map vm;
  if (!parse_flags(parse_args(argc, argv, all, &pos), desc, vm)) return 0;
  if (vm.count("worker")) return run_worker(vm["worker"].as<std::string>());
  if (inv.grid_path.empty()) throw_error("sweep: no grid given (usage: hisparse sweep GRID.yaml [--out DIR] [--jobs N])");
  inv.quiet = vm.count("quiet") > 0;
  inv.resume = vm.count("resume") > 0;
  inv.force = vm.count("force") > 0;
  const InterruptNote resume_note(sweep_resume_note(quoted_command_line("sweep", argc, argv), inv.out_dir));
  if (launched_by_mpi()) {
    if (vm.count("jobs"))
      fmt::print(stderr, "sweep: --jobs is ignored under MPI: each rank runs one work item at a time\n");
    return run_sweep_mpi(inv);
  }
  if (!vm.count("jobs")) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (jobs < 1 || jobs > 4096) throw_error("sweep: --jobs {} (expected 1..4096)", jobs);
  return run_pool(inv, jobs);
}

}  // namespace hisparse::apps
