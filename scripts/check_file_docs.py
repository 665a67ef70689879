#!/usr/bin/python3
# @brief The tree's maps cannot fall behind the tree (CTest 'docs/file_map'): every file under sim/ is named in
# sim/README.md, and every folder ARCHITECTURE.md must describe has its line there.
"""Standard library only. Files are those git tracks plus new ones it does not ignore (a file is checked before its
first commit; in a clean clone the two lists are the same).

sim/README.md: every file under sim/ (README.md itself aside) must be named in a code span of the file table, as a
path relative to sim/. A span may group files with braces: `engine/simulator.{h,cpp}` names engine/simulator.h and
engine/simulator.cpp; `serving/{pools,ranks}.{h,cpp}` names four files. A name that matches no file is reported too
(a removed file must leave the map).

ARCHITECTURE.md: every top-level folder, and every folder at any depth beneath core/, cpu_ref/, cuda/, sim/,
traces/, apps/, python/ and tests/, must be the first cell of a table row, as a code span ending in '/'
(`sim/miss/counters/`); braces group sibling folders (`tests/fuzz/corpus/{jsonl,native}/`). A named folder that does
not exist is reported too.

Prints one line per problem and exits 1 if there is any.
Usage: /usr/bin/python3 scripts/check_file_docs.py [repository root, default: this script's parent folder]
"""
import itertools
import os
import re
import subprocess
import sys

DEEP_FOLDERS = ("core", "cpu_ref", "cuda", "sim", "traces", "apps", "python", "tests")
CODE_SPAN = re.compile(r"`([^`]+)`")
BRACES = re.compile(r"\{([^{}]*)\}")


def files_of(root):
    cmd = ["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE).stdout.decode("utf-8", "surrogateescape")
    # A file deleted in the work tree but still in the index is gone for the reader.
    return sorted(p for p in set(out.split("\0")) if p and os.path.exists(os.path.join(root, p)))


def expand(span):
    """`a/{b,c}.{h,cpp}` -> [a/b.h, a/b.cpp, a/c.h, a/c.cpp]."""
    parts = BRACES.split(span)
    # split() alternates literal text and brace contents.
    choices = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
    return ["".join(c) for c in itertools.product(*choices)]


def table_first_cells(text):
    for number, line in enumerate(text.splitlines(), 1):
        cells = line.split("|")
        if line.lstrip().startswith("|") and len(cells) > 2:
            yield number, cells[1]


def check_sim(root, files):
    problems = []
    readme = os.path.join(root, "sim", "README.md")
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    named = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.lstrip().startswith("|"):
            continue
        for span in CODE_SPAN.findall(line):
            if " " in span or "." not in span:
                continue  # a flag, a type name or a command, not a file
            for name in expand(span):
                named.setdefault(name, number)
    sim_files = {p[len("sim/"):] for p in files if p.startswith("sim/") and p != "sim/README.md"}
    for missing in sorted(sim_files - set(named)):
        problems.append(f"sim/README.md: sim/{missing} is not named in the file table "
                        "(add it to its folder's row)")
    for name, number in sorted(named.items()):
        # Only names that look like paths of this tree's source files: other spans of the table name types.
        if re.search(r"\.(h|cpp|cu|cuh|txt|md|py)$", name) and name not in sim_files:
            problems.append(f"sim/README.md:{number}: names sim/{name}, which does not exist")
    return problems


def check_architecture(root, files):
    problems = []
    path = os.path.join(root, "ARCHITECTURE.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    named = {}
    for number, cell in table_first_cells(text):
        for span in CODE_SPAN.findall(cell):
            if span.endswith("/"):
                for name in expand(span):
                    named.setdefault(name.rstrip("/"), number)
    folders = set()
    for p in files:
        parts = p.split("/")[:-1]
        if not parts:
            continue
        folders.add(parts[0])
        if parts[0] in DEEP_FOLDERS:
            for depth in range(2, len(parts) + 1):
                folders.add("/".join(parts[:depth]))
    for missing in sorted(folders - set(named)):
        problems.append(f"ARCHITECTURE.md: folder {missing}/ has no line (a table row whose first cell is "
                        f"`{missing}/`)")
    for name, number in sorted(named.items()):
        if not os.path.isdir(os.path.join(root, name)):
            problems.append(f"ARCHITECTURE.md:{number}: names {name}/, which does not exist")
    return problems


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    files = files_of(root)
    problems = check_sim(root, files) + check_architecture(root, files)
    for p in problems:
        print(p)
    if problems:
        return 1
    sim_count = sum(1 for p in files if p.startswith("sim/"))
    print(f"check_file_docs: sim/README.md names all {sim_count - 1} files under sim/; ARCHITECTURE.md has a line "
          "for every folder it must describe")
    return 0


if __name__ == "__main__":
    sys.exit(main())
