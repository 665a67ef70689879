#!/usr/bin/python3
# @brief Golden outputs of `hisparse replay` (tests/golden/replay/manifest.tsv): reruns each line with a binary and
# compares its outputs byte for byte with the checked-in files (CTest 'replay/golden'), or writes them (--update).
"""Standard library only. usage: replay_golden.py --check BIN | --update BIN [--work DIR]

The golden files were written once by the replay before its redesign (the manifest names the commit); --update is
for a deliberate change of the replay's output, which the commit that makes it must explain."""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(ROOT, "tests", "golden", "replay")
MANIFEST = os.path.join(GOLDEN, "manifest.tsv")


def read_manifest():
    entries = []
    with open(MANIFEST, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) != 3:
                sys.exit(f"{MANIFEST}:{number}: expected 3 tab-separated columns (id, arguments, outputs), got {len(cols)}")
            entries.append((cols[0], cols[1], cols[2].split(",")))
    return entries


def normalise_stdout(text, out):
    # The speed line is the command's own timing (measured on this machine): the one machine-dependent line.
    lines = [l for l in text.splitlines(keepends=True) if not l.startswith("speed: ")]
    return "".join(lines).replace(out, "{out}").replace(ROOT, "{root}")


def run(binary, ident, args, outputs, work):
    out = os.path.join(work, ident)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    argv = [binary, "replay"] + [a.replace("{out}", out) for a in args.split(" ")]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"replay_golden: {ident}: `{' '.join(argv)}` exited {proc.returncode}:\n{proc.stderr}")
    got = {}
    for o in outputs:
        if o == "stdout":
            got[f"{ident}.stdout.txt"] = normalise_stdout(proc.stdout, out)
        elif o.endswith("#sha256"):
            name = o[: -len("#sha256")]
            data = open(os.path.join(out, name), "rb").read()
            lines = data.count(b"\n")
            got[f"{ident}.{name}.sha256"] = f"{hashlib.sha256(data).hexdigest()}  {lines} lines\n"
        else:
            got[f"{ident}.{o}"] = open(os.path.join(out, o), encoding="utf-8").read().replace(out, "{out}")
    return got


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", metavar="BIN")
    mode.add_argument("--update", metavar="BIN")
    parser.add_argument("--work", default=os.path.join(ROOT, "build", "replay_golden"))
    a = parser.parse_args()
    binary = os.path.abspath(a.check or a.update)
    failures = 0
    for ident, args, outputs in read_manifest():
        for name, text in run(binary, ident, args, outputs, a.work).items():
            path = os.path.join(GOLDEN, name)
            if a.update:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
                continue
            want = open(path, encoding="utf-8").read() if os.path.exists(path) else None
            if want != text:
                failures += 1
                print(f"replay_golden: {name} differs from the golden file {os.path.relpath(path, ROOT)} "
                      f"(expected byte-identical output; rerun with --update only for an intended change)")
            else:
                print(f"replay_golden: {name} identical")
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
