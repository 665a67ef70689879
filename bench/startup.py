#!/usr/bin/env python3
"""Start-up benchmark of the `hisparse` CLI (issue 40): wall time and peak resident memory of `hisparse --version`,
`hisparse info` and the whole `hisparse replay` of the bundled trace, each started as a user starts it (a new
process per run), medians over the runs. `/bin/true` is timed the same way: the cost of starting any process here.

    /usr/bin/python3 bench/startup.py                                   # build/release/apps/hisparse
    /usr/bin/python3 bench/startup.py --baseline /path/to/older/hisparse  # both, command by command, same machine

Every figure it prints is measured. Wall time: spawn to exit (time.perf_counter around os.posix_spawn and
os.wait4), so Python's own start-up is not in it. CPU time: the child's user + system time (os.wait4's rusage), the
figure that other work sharing the cores does not inflate. Peak RSS: a child started from Python inherits Python's high-water
mark through exec (Linux keeps ru_maxrss across execve), so it is read from GNU time's %M (/usr/bin/time, Debian
package `time`), which forks the command from a small process; without it the column is the child's ru_maxrss, an
upper bound (never below the harness's own, shown on the /bin/true row), marked "<=". Writes nothing.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIO = "dsv32-8xh200-1tb"
TRACE = os.path.join(ROOT, "traces", "bundled", "default.hstrace")


def commands(binary):
    """(label, argv, runs): the fast commands often, the replay (seconds) a few times."""
    return [
        ("--version", [binary, "--version"], None),
        (f"info --scenario {SCENARIO}", [binary, "info", "--scenario", SCENARIO], None),
        ("replay --trace traces/bundled/default.hstrace", [binary, "replay", "--trace", TRACE], 3),
    ]


def run_once(argv):
    """Wall milliseconds, CPU milliseconds (user + system) and ru_maxrss (MiB) of one run; its output goes to
    /dev/null; a failed run is an error."""
    with open(os.devnull, "wb") as null:
        actions = [(os.POSIX_SPAWN_DUP2, null.fileno(), 1), (os.POSIX_SPAWN_DUP2, null.fileno(), 2)]
        t0 = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=actions)
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"startup.py: {' '.join(argv)} exited {os.waitstatus_to_exitcode(status)}")
    cpu = usage.ru_utime + usage.ru_stime  # the child's own: CPU times start at zero in a new process
    return wall * 1e3, cpu * 1e3, usage.ru_maxrss / 1024.0  # ru_maxrss is in KiB on Linux


def peak_rss_mib(argv, gnu_time):
    """The command's own peak RSS (MiB) from GNU time's %M, in a run of its own."""
    out = os.path.join(tempfile.gettempdir(), f"hisparse_startup_rss_{os.getpid()}")
    try:
        run_once([gnu_time, "-f", "%M", "-o", out] + argv)  # the wall and CPU of this run are GNU time's too
        with open(out) as f:
            return int(f.read().split()[-1]) / 1024.0
    finally:
        if os.path.exists(out):
            os.remove(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "release", "apps", "hisparse"))
    ap.add_argument("--baseline", help="another hisparse binary, timed in turn with --binary (e.g. main's build)")
    ap.add_argument("--runs", type=int, default=21, help="runs of each fast command (default 21; the replay: 3)")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error(f"--runs must be at least 1, got {args.runs}")
    binaries = [("this", args.binary)] + ([("baseline", args.baseline)] if args.baseline else [])
    for _, b in binaries:
        if not os.access(b, os.X_OK):
            sys.exit(f"startup.py: {b} is not an executable (build it: ./scripts/build.sh release hisparse)")
    for name, b in binaries:
        with os.popen(f"'{b}' --version") as f:
            print(f"{name}: {b}\n  {f.read().strip()}")
    gnu_time = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
    print(f"peak RSS from {'GNU time (%M)' if gnu_time else 'ru_maxrss, an upper bound (no /usr/bin/time)'}")
    print(f"cores: {os.cpu_count()}, load average {os.getloadavg()[0]:.2f} at the start")
    print(f"{'command':<48} {'binary':<9} {'runs':>4} {'median ms':>10} {'min ms':>8} {'CPU ms med':>11} {'peak RSS MiB':>13}")
    rows = [("/bin/true (any process)", "-", ["/bin/true"], None)]
    for i, (label, _, runs) in enumerate(commands(args.binary)):
        for name, b in binaries:
            rows.append((label, name, commands(b)[i][1], runs))
    for label, name, argv, runs in rows:
        n = runs or args.runs
        walls, cpus, rss = [], [], []
        for _ in range(n):
            w, c, r = run_once(argv)
            walls.append(w)
            cpus.append(c)
            rss.append(r)
        if gnu_time:
            rss = [peak_rss_mib(argv, gnu_time) for _ in range(min(n, 3))]
        print(f"{label:<48} {name:<9} {n:>4} {statistics.median(walls):>10.1f} {min(walls):>8.1f} "
              f"{statistics.median(cpus):>11.1f} {'' if gnu_time else '<='}{statistics.median(rss):>13.1f}")
    print("all figures measured on this machine now: wall from spawn to exit, CPU = the child's user + system time "
          "(what other work on the cores does not inflate), peak RSS as said above")


if __name__ == "__main__":
    main()
