// @brief `mpirun -np N hisparse sweep GRID.yaml`: the sweep across MPI ranks. Every rank expands the same grid and
// work list (deterministic); rank 0 hands out work items one at a time in grid order to ranks 1..N-1 as they become
// free (points and replay request shards alike), gathers their result texts, shows progress and writes the same table
// the local pool writes. With one rank, rank 0 runs every item itself. Built only where CMake found MPI
// (HISPARSE_MPI); elsewhere running under a launcher says so. Rank 0 alone keeps the journal (DIR/sweep.journal),
// appending each result as it arrives, so --resume works the same as for the local pool.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "apps/sweep_exec.h"
#include "core/error.h"

#if HISPARSE_MPI_BUILT
// The C API only: the deprecated C++ bindings would need libmpi_cxx, which we do not link.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace hisparse::apps {

#if HISPARSE_MPI_BUILT

namespace {

enum Tag : int { kReady = 1, kResult = 2, kWork = 3, kStop = 4 };

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw_error("sweep: {} failed (MPI error {})", what, rc);
}

/// Rank 0: serves the pending items until every worker is stopped; each result goes to `run` (journal, progress) as
/// it arrives, so a job killed mid-sweep keeps what finished.
void coordinate(const std::vector<sim::sweep::WorkItem>& items, int size, SweepRun& run) {
  const std::vector<size_t> pending = run.pending();
  size_t next = 0;
  int active = size - 1;
  std::string buf;
  while (active > 0) {
    MPI_Status st;
    // MPI_Probe spins on OpenMPI: on a node whose cores all compute, the coordinator would take one from them.
    for (int flag = 0;;) {
      check(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st), "MPI_Iprobe");
      if (flag) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    int bytes = 0;
    check(MPI_Get_count(&st, MPI_CHAR, &bytes), "MPI_Get_count");
    buf.assign(static_cast<size_t>(bytes), '\0');
    check(MPI_Recv(buf.data(), bytes, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          "MPI_Recv");
    if (st.MPI_TAG == kResult) {
      // "<item>\n" + run_item_message().
      const size_t nl = buf.find('\n');
      const long long item = nl == std::string::npos ? -1 : std::atoll(buf.substr(0, nl).c_str());
      if (item < 0 || item >= static_cast<long long>(items.size()))
        throw_error("sweep: rank {} sent a result for unknown item '{}'", st.MPI_SOURCE, buf.substr(0, nl));
      run.item_done(static_cast<size_t>(item), parse_item_message(buf.substr(nl + 1)));
    }
    if (next < pending.size()) {
      const long long item = static_cast<long long>(pending[next++]);
      check(MPI_Send(&item, 1, MPI_LONG_LONG, st.MPI_SOURCE, kWork, MPI_COMM_WORLD), "MPI_Send");
    } else {
      const long long none = -1;
      check(MPI_Send(&none, 1, MPI_LONG_LONG, st.MPI_SOURCE, kStop, MPI_COMM_WORLD), "MPI_Send");
      --active;
    }
  }
}

void serve(const sim::sweep::Grid& grid, const std::vector<sim::sweep::WorkItem>& items) {
  check(MPI_Send(nullptr, 0, MPI_CHAR, 0, kReady, MPI_COMM_WORLD), "MPI_Send");
  while (true) {
    long long item = -1;
    MPI_Status st;
    check(MPI_Recv(&item, 1, MPI_LONG_LONG, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st), "MPI_Recv");
    if (st.MPI_TAG == kStop) return;
    const std::string msg = fmt::format("{}\n", item) + run_item_message(grid, items[static_cast<size_t>(item)]);
    check(MPI_Send(msg.data(), static_cast<int>(msg.size()), MPI_CHAR, 0, kResult, MPI_COMM_WORLD), "MPI_Send");
  }
}

}  // namespace

int run_sweep_mpi(const SweepInvocation& inv) {
  // Ranks never fork workers: the launcher placed them, and forking an MPI process is not portable.
  check(MPI_Init(nullptr, nullptr), "MPI_Init");
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int code = 0;
  std::string error;
  try {
    // Every rank reads the grid: a bad one fails identically everywhere, so the ranks agree on stopping.
    const sim::sweep::Grid grid = sim::sweep::load_grid(inv.grid_path);
    const std::vector<sim::sweep::WorkItem> items = sim::sweep::plan_work(grid);
    if (rank == 0) {
      // The journal is opened (a bad --out fails) before any rank computes: the others wait for their first item.
      SweepRun run(inv, grid, items,
                   fmt::format("sweep (MPI, {} rank{}{})", size, size == 1 ? "" : "s",
                               size > 1 ? fmt::format(": rank 0 coordinates, {} compute", size - 1) : ""),
                   std::max(1, size - 1));
      if (size == 1) {
        for (size_t i : run.pending()) run.item_done(i, parse_item_message(run_item_message(grid, items[i])));
      } else {
        coordinate(items, size, run);
      }
      code = run.finish(fmt::format("MPI, {} rank{}", size, size == 1 ? "" : "s"));
    } else {
      serve(grid, items);
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!error.empty()) {
    // The same grid error on every rank: rank 0 reports it; a rank-local failure (MPI, files) is reported by its rank.
    if (rank == 0 || error.find("sweep: ") == 0)
      fmt::print(stderr, "hisparse sweep: error (rank {} of {}): {}\n", rank, size, error);
    // A rank cannot know whether the others reached the same point: abort the job rather than wait forever.
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
  MPI_Finalize();
  return code;
}

#else

int run_sweep_mpi(const SweepInvocation& inv) {
  (void)inv;
  throw_error("sweep: started by an MPI launcher (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK is set) but this "
              "hisparse was built without MPI support (HISPARSE_MPI=OFF, or CMake found no MPI: install openmpi-bin and "
              "libopenmpi-dev and reconfigure); run `hisparse sweep GRID.yaml --jobs N` without mpirun for the local "
              "process pool");
}

#endif

}  // namespace hisparse::apps
