#!/usr/bin/python3
# @brief The figures README.md and docs/*.md quote from a command's output, kept true: checked-in expected outputs
# (tests/expected/), regenerated from the built binary and diffed (CTest 'docs/expected'), and the Markdown excerpts
# that quote them, rewritten from them (--update) or compared with them (--check).
"""Standard library only.

tests/expected/manifest.tsv lists one command invocation per line (tab-separated; '#' lines are comments):

    id    command    outputs    [mask]

- command: a shell command run from the repository root, where `hisparse` is the built binary and `{out}` a fresh
  empty folder (for commands that write report files);
- outputs: comma-separated; `stdout` is the command's standard output, any other name a file the command wrote under
  `{out}`. Output `stdout` of id X is stored as tests/expected/X.txt, a report file F as tests/expected/X.F.txt
  (the .txt suffix keeps report Markdown out of the documentation link check);
- mask (optional): a Python regular expression; each match is replaced by "[varies]" before storing or comparing,
  for what depends on the machine (a command's own timing). Lines are kept, so excerpt line numbers stay stable.

Every run replaces the folder {out} and the repository root in outputs by those two tokens, so the files do not
depend on where the clone or the build lives.

In Markdown (README.md, docs/*.md) two markers tie text to an expected output:

    <!-- expected: ID[:FILE] lines A-B -->        the text up to <!-- /expected --> equals lines A..B (1-based,
    ```                                           inclusive) of that output; if the text is a fenced block, its
    ...                                           inside is compared and the fence kept
    ```
    <!-- /expected -->

  Anchored forms follow their block when an output gains lines above it (what an update after another change needs):
    <!-- expected: ID[:FILE] from "X" to "Y" -->  from the one line containing X through the next containing Y
    <!-- expected: ID[:FILE] from "X" lines N -->  N lines from the one line containing X

    <!-- expected-quote: ID[:FILE] "s1" "s2" -->   each string occurs in that output and in the paragraph that
                                                   follows the marker (up to the next blank line; further marker
                                                   lines before it are skipped): for figures quoted in prose

Modes:
  --check BIN     regenerate every output into build/expected (or --work DIR) with BIN, diff each against
                  tests/expected (naming the id and printing a unified diff), and compare every marked excerpt and
                  quote with the checked-in expected files; exit 1 on any difference.
  --update BIN    regenerate every expected output into tests/expected and rewrite every marked excerpt from it;
                  quotes cannot be rewritten (they are prose): a quote that no longer holds is reported, exit 1.
  --check-docs    only the Markdown check against the checked-in files (no binary needed).
  --only ID,...   restrict regeneration to these ids.
"""
import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPECTED = os.path.join(ROOT, "tests", "expected")
MANIFEST = os.path.join(EXPECTED, "manifest.tsv")

BLOCK_START = re.compile(r"^<!-- expected: ([A-Za-z0-9_.-]+(?::[A-Za-z0-9_.-]+)?) "
                         r"(lines \d+-\d+|from \"[^\"]+\"(?: to \"[^\"]+\"| lines \d+)) -->\s*$")
SLICE = re.compile(r"^lines (\d+)-(\d+)$|^from \"([^\"]+)\"(?: to \"([^\"]+)\"| lines (\d+))$")
BLOCK_END = re.compile(r"^<!-- /expected -->\s*$")
QUOTE = re.compile(r"^<!-- expected-quote: ([A-Za-z0-9_.-]+(?::[A-Za-z0-9_.-]+)?)((?: \"[^\"]+\")+) -->\s*$")
MARKER_ANY = re.compile(r"^<!-- /?expected")
FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")


class Entry:
    def __init__(self, line_no, ident, command, outputs, mask):
        self.line_no, self.ident, self.command, self.outputs = line_no, ident, command, outputs
        self.mask = re.compile(mask, re.M) if mask else None

    def expected_name(self, output):
        return f"{self.ident}.txt" if output == "stdout" else f"{self.ident}.{output}.txt"


def read_manifest():
    entries = []
    with open(MANIFEST, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) not in (3, 4):
                sys.exit(f"{MANIFEST}:{number}: expected 3 or 4 tab-separated columns, got {len(cols)}")
            entries.append(Entry(number, cols[0], cols[1], cols[2].split(","), cols[3] if len(cols) == 4 else ""))
    idents = [e.ident for e in entries]
    duplicates = sorted(set(i for i in idents if idents.count(i) > 1))
    if duplicates:
        sys.exit(f"{MANIFEST}: duplicate ids {duplicates}")
    return entries


def normalise(text, out_dir, entry):
    # Longest first: the out folder may lie inside the clone (build/expected/...).
    text = text.replace(out_dir, "{out}").replace(ROOT, "{root}")
    if entry.mask:
        text = entry.mask.sub("[varies]", text)
    return text


def run_entry(entry, binary, work):
    """Runs one manifest command; returns {expected file name: normalised text}."""
    out_dir = os.path.join(work, entry.ident)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    # `hisparse` as the first word of the command or of a piped/chained part is the binary under test.
    command = re.sub(r"(^|[;&|]\s*)hisparse\b", lambda m: m.group(1) + shlex_quote(binary), entry.command)
    command = command.replace("{out}", shlex_quote(out_dir))
    env = dict(os.environ, LC_ALL="C")
    # A user's own scenario folder must not change what the shipped scenarios print.
    env.pop("HISPARSE_SCENARIO_DIR", None)
    env.pop("HISPARSE_DATA_DIR", None)
    started = time.monotonic()
    proc = subprocess.run(["sh", "-c", command], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    elapsed = time.monotonic() - started
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr.decode("utf-8", "replace"))
        raise RuntimeError(f"{entry.ident}: exit {proc.returncode}: {entry.command}")
    results = {}
    for output in entry.outputs:
        if output == "stdout":
            text = proc.stdout.decode("utf-8")
        else:
            path = os.path.join(out_dir, output)
            if not os.path.isfile(path):
                raise RuntimeError(f"{entry.ident}: the command wrote no {output} under {{out}}")
            with open(path, encoding="utf-8") as f:
                text = f.read()
        results[entry.expected_name(output)] = normalise(text, out_dir, entry)
    return results, elapsed


def shlex_quote(s):
    import shlex
    return shlex.quote(s)


def markdown_files():
    files = [os.path.join(ROOT, "README.md")]
    docs = os.path.join(ROOT, "docs")
    files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    return files


def source_lines(source, expected_dir):
    ident, _, output = source.partition(":")
    name = f"{ident}.txt" if not output else f"{ident}.{output}.txt"
    path = os.path.join(expected_dir, name)
    if not os.path.isfile(path):
        return None, name
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n"), name


def slice_of(src, where):
    """The lines an excerpt quotes: `lines A-B` (1-based, inclusive), or anchored on text so that the excerpt follows
    its block when lines are added above it: `from "X" to "Y"` (the one line containing X through the first line
    after it containing Y) or `from "X" lines N`. Returns (lines, error or None)."""
    m = SLICE.match(where)
    if m.group(1):
        first, last = int(m.group(1)), int(m.group(2))
        if not 1 <= first <= last <= len(src):
            return None, f"outside the file ({len(src)} lines)"
        return src[first - 1:last], None
    start_text, end_text, count = m.group(3), m.group(4), m.group(5)
    starts = [k for k, l in enumerate(src) if start_text in l]
    if len(starts) != 1:
        # An anchor must name one place, or an update could quietly quote another block.
        return None, f"\"{start_text}\" is on {len(starts)} lines, not one"
    first = starts[0]
    if count:
        last = first + int(count) - 1
        if last >= len(src):
            return None, f"fewer than {count} lines from the anchor"
        return src[first:last + 1], None
    ends = [k for k in range(first, len(src)) if end_text in src[k]]
    if not ends:
        return None, f"no line containing \"{end_text}\" from the anchor on"
    return src[first:ends[0] + 1], None


def scan_markdown(path, expected_dir, rewrite):
    """Checks (or rewrites) every marker of one Markdown file; returns (problems, new text or None)."""
    rel = os.path.relpath(path, ROOT)
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    problems, out, i = [], [], 0
    while i < len(lines):
        line = lines[i]
        start = BLOCK_START.match(line)
        quote = QUOTE.match(line)
        if start:
            source, where = start.group(1), start.group(2)
            end = next((j for j in range(i + 1, len(lines)) if BLOCK_END.match(lines[j])), None)
            if end is None:
                problems.append(f"{rel}:{i + 1}: <!-- expected: {source} --> has no <!-- /expected -->")
                out.append(line)
                i += 1
                continue
            body = lines[i + 1:end]
            fenced = len(body) >= 2 and FENCE.match(body[0]) and FENCE.match(body[-1])
            # An unfenced excerpt (a Markdown table of a report) sits between blank lines, so that it renders as its
            # own block; the blank lines are not part of the quoted slice.
            lead = trail = 0
            if not fenced:
                while lead < len(body) and not body[lead].strip():
                    lead += 1
                while trail < len(body) - lead and not body[len(body) - 1 - trail].strip():
                    trail += 1
            inner = body[1:-1] if fenced else body[lead:len(body) - trail]
            src, name = source_lines(source, expected_dir)
            if src is None:
                problems.append(f"{rel}:{i + 1}: excerpt names {source}, but tests/expected/{name} does not exist")
                want = inner
            else:
                want, error = slice_of(src, where)
                if error:
                    problems.append(f"{rel}:{i + 1}: {where} of {name}: {error}")
                    want = inner
            if want != inner:
                if rewrite:
                    sys.stderr.write(f"{rel}:{i + 1}: excerpt of {source} {where} rewritten\n")
                else:
                    diff = difflib.unified_diff(want, inner, f"tests/expected/{name} {where}",
                                                f"{rel} (excerpt at line {i + 1})", lineterm="")
                    problems.append(f"{rel}:{i + 1}: excerpt differs from {source} {where}:\n" + "\n".join(diff))
            out.append(line)
            if fenced:
                out.extend([body[0]] + want + [body[-1]])
            else:
                out.extend([""] + want + [""])
            out.append(lines[end])
            i = end + 1
            continue
        if quote:
            source = quote.group(1)
            strings = re.findall(r"\"([^\"]+)\"", quote.group(2))
            j = i + 1
            while j < len(lines) and MARKER_ANY.match(lines[j]):
                j += 1
            paragraph = []
            while j < len(lines) and lines[j].strip():
                paragraph.append(lines[j])
                j += 1
            paragraph = " ".join(l.strip() for l in paragraph)
            src, name = source_lines(source, expected_dir)
            for s in strings:
                if src is None:
                    problems.append(f"{rel}:{i + 1}: quote names {source}, but tests/expected/{name} does not exist")
                    break
                if s not in "\n".join(src):
                    problems.append(f"{rel}:{i + 1}: \"{s}\" is no longer in tests/expected/{name}: "
                                    "the prose below the marker quotes a figure the command no longer prints")
                if s not in paragraph:
                    problems.append(f"{rel}:{i + 1}: \"{s}\" is not in the paragraph after the marker")
        out.append(line)
        i += 1
    new_text = "\n".join(out)
    return problems, new_text


def check_markdown(expected_dir, rewrite):
    problems = []
    for path in markdown_files():
        found, new_text = scan_markdown(path, expected_dir, rewrite)
        problems += found
        if rewrite:
            with open(path, encoding="utf-8") as f:
                old = f.read()
            if new_text != old:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(new_text)
    if rewrite:
        # After rewriting, the only problems left are those a rewrite cannot fix (missing sources, quotes).
        problems = []
        for path in markdown_files():
            problems += scan_markdown(path, expected_dir, False)[0]
    return problems


def used_sources():
    """Every output that some marker quotes (an expected file nobody quotes is allowed: it is still diffed)."""
    used = set()
    for path in markdown_files():
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = BLOCK_START.match(line) or QUOTE.match(line)
                if m:
                    used.add(m.group(1))
    return used


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", metavar="BIN")
    mode.add_argument("--update", metavar="BIN")
    mode.add_argument("--check-docs", action="store_true")
    parser.add_argument("--work", default=os.path.join(ROOT, "build", "expected"))
    parser.add_argument("--only", default="")
    args = parser.parse_args()

    entries = read_manifest()
    known = {e.ident for e in entries}
    for source in used_sources():
        if source.partition(":")[0] not in known:
            sys.exit(f"a Markdown marker names {source}, which is not an id of {os.path.relpath(MANIFEST, ROOT)}")
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - known
        if unknown:
            sys.exit(f"--only: unknown ids {sorted(unknown)}")
        entries = [e for e in entries if e.ident in wanted]

    problems = []
    # A file no manifest line produces is a leftover of a removed or renamed command: it would look checked and is not.
    produced = {e.expected_name(o) for e in read_manifest() for o in e.outputs} | {"manifest.tsv"}
    for leftover in sorted(set(os.listdir(EXPECTED)) - produced):
        problems.append(f"tests/expected/{leftover} is produced by no line of manifest.tsv (remove it)")
    binary = args.check or args.update
    if binary:
        binary = os.path.abspath(binary)
        if not os.access(binary, os.X_OK):
            sys.exit(f"{binary}: not an executable")
        work = os.path.abspath(args.work)
        os.makedirs(work, exist_ok=True)
        total = 0.0
        for entry in entries:
            try:
                results, elapsed = run_entry(entry, binary, work)
            except RuntimeError as e:
                problems.append(str(e))
                continue
            total += elapsed
            sys.stderr.write(f"{entry.ident}: {elapsed:.1f} s\n")
            for name, text in results.items():
                target = os.path.join(EXPECTED, name)
                if args.update:
                    with open(target, "w", encoding="utf-8") as f:
                        f.write(text)
                    continue
                with open(os.path.join(work, name), "w", encoding="utf-8") as f:
                    f.write(text)
                if not os.path.isfile(target):
                    problems.append(f"{entry.ident}: tests/expected/{name} is missing "
                                    f"(run scripts/update_expected.sh)")
                    continue
                with open(target, encoding="utf-8") as f:
                    want = f.read()
                if want != text:
                    diff = difflib.unified_diff(want.split("\n"), text.split("\n"), f"tests/expected/{name}",
                                                f"{entry.ident}: {entry.command}", lineterm="")
                    problems.append(f"{entry.ident}: output differs from tests/expected/{name}:\n"
                                    + "\n".join(diff))
        sys.stderr.write(f"{len(entries)} commands in {total:.1f} s\n")

    problems += check_markdown(EXPECTED, rewrite=bool(args.update))
    for p in problems:
        print(p)
    if problems:
        if not args.update:
            print("If the change is intended: scripts/update_expected.sh (regenerates tests/expected and the "
                  "excerpts; prose quotes are fixed by hand).")
        return 1
    print(f"expected outputs: {'updated' if args.update else 'match'}; "
          f"Markdown excerpts and quotes: match ({len(used_sources())} sources quoted)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
