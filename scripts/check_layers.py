#!/usr/bin/python3
# @brief Layer check (run by CTest as `layers`): the include graph keeps the direction the architecture promises.
"""Checks, standard library only, over every tracked C++/CUDA file (git ls-files):

1. Layers: core -> cpu_ref, traces -> sim -> apps. A file of a layer includes project headers of its own layer or of
   a layer below it only (core: core; cpu_ref: core; traces: core; sim: core, cpu_ref, traces; validate: core,
   cpu_ref, traces, cuda; apps, bench, python, tests: anything).
2. sim/ has no file at its root but README.md, and no include cycle between its concept folders (sim/<folder>/...;
   a nested folder such as sim/miss/counters counts as its top folder).
3. No sim/ file includes cuda/ except those of the CUDA replay target (sim/replay/cuda/), which is built only where
   the CUDA backend is and links it.

Prints one line per problem and exits 1 if there is any; prints a summary and exits 0 otherwise.
Usage: /usr/bin/python3 scripts/check_layers.py [repository root, default: this script's parent folder]
"""
import os
import re
import subprocess
import sys

ALLOWED = {
    "core": {"core"},
    "cpu_ref": {"core", "cpu_ref"},
    "traces": {"core", "traces"},
    "sim": {"core", "cpu_ref", "traces", "sim"},
    "cuda": {"core", "cpu_ref", "cuda"},
    "validate": {"core", "cpu_ref", "traces", "cuda", "validate"},
}
CUDA_CLIENTS_IN_SIM = "sim/replay/cuda/"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE = (".h", ".cpp", ".cu", ".cuh")


def tracked(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         check=True, stdout=subprocess.PIPE).stdout
    return sorted(p for p in out.decode().split("\0") if p and os.path.isfile(os.path.join(root, p)))


def sim_folder(path):
    parts = path.split("/")
    return parts[1] if len(parts) > 2 else None


def find_cycle(graph):
    """One cycle of the folder graph as a list of folders, or None (iterative colouring DFS)."""
    colour = {}
    for start in sorted(graph):
        if colour.get(start):
            continue
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        colour[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                colour[node] = 2
                stack.pop()
                path.pop()
            elif colour.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not colour.get(nxt):
                colour[nxt] = 1
                stack.append((nxt, iter(sorted(graph.get(nxt, ())))))
                path.append(nxt)
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = []
    files = tracked(root)
    graph = {}
    edges_why = {}
    for f in files:
        if f.startswith("sim/") and f.count("/") == 1 and f != "sim/README.md":
            problems.append(f"{f}: a file at sim/'s root (expected every file in a concept folder, sim/<folder>/)")
        if not f.endswith(SOURCE):
            continue
        layer = f.split("/")[0]
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            for lineno, line in enumerate(fh, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = m.group(1)
                top = target.split("/")[0]
                if top not in ALLOWED and top not in ("apps", "tests", "bench", "python"):
                    continue  # a header of the same folder or a third-party one
                if layer in ALLOWED and top not in ALLOWED[layer]:
                    if not (layer == "sim" and top == "cuda" and f.startswith(CUDA_CLIENTS_IN_SIM)):
                        problems.append(f"{f}:{lineno}: includes {target}: layer {layer} may include only "
                                        f"{', '.join(sorted(ALLOWED[layer]))}")
                if layer == "sim" and top == "sim":
                    a, b = sim_folder(f), sim_folder(target)
                    if a and b and a != b:
                        graph.setdefault(a, set()).add(b)
                        edges_why.setdefault((a, b), f"{f}:{lineno} includes {target}")
    cycle = find_cycle(graph)
    if cycle:
        steps = "; ".join(edges_why[(cycle[i], cycle[i + 1])] for i in range(len(cycle) - 1))
        problems.append(f"sim/ folders form a cycle {' -> '.join(cycle)} ({steps})")
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"check_layers: {len(files)} files, {sum(len(v) for v in graph.values())} edges between "
          f"{len(graph)} sim/ folders, no cycle, layers hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
