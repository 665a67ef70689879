#!/usr/bin/python3
# @brief Documentation link check (run by scripts/test.sh): every relative Markdown link of every tracked *.md file
# must resolve inside the clone, and no tracked file may send the reader to a folder outside it.
"""Checks, standard library only:

1. In every tracked *.md file (git ls-files '*.md', plus new files git does not ignore), each inline link or image [text](target) and each reference
   definition [label]: target whose target is a relative path (not http(s)://, mailto: or a pure #anchor) must name
   an existing file or folder, resolved relative to the Markdown file, with any #fragment or ?query dropped. Links
   inside fenced code blocks and inline code spans are not links and are skipped.
2. No tracked file (build/ and .git excluded) may mention the sibling folder outside the clone that design documents
   and data once came from (the parent-relative 'shared/' path, or its absolute form): a clone does not have it.

Prints one line per problem (file:line: message) and exits 1 if there is any; prints a summary and exits 0 otherwise.
Usage: /usr/bin/python3 scripts/check_links.py [repository root, default: this script's parent folder]
"""
import os
import re
import subprocess
import sys

# Built from parts so that this file does not match its own check.
OUTSIDE_PATHS = ("../" + "shared/", "/work/" + "shared/")
SKIP_PREFIXES = ("build/", ".git/")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, ftp:, ...

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
# [text](target) and ![alt](target); the text may hold one level of nested brackets (e.g. [![badge](x)](y)).
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)"
                         r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")


def tracked_files(root, pattern=None):
    """git ls-files [pattern], plus files not yet added that git does not ignore (a new page is checked before its
    first commit; in a clean clone the two lists are the same)."""
    cmd = ["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    if pattern:
        cmd += ["--", pattern]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE).stdout
    return sorted(set(p for p in out.decode("utf-8", "surrogateescape").split("\0") if p))


def blank_code_spans(line):
    """The line with every inline code span replaced by spaces (columns kept)."""
    return CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)


def link_targets(text):
    """(line number, target) of every link outside code blocks and code spans."""
    in_fence = None
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if fence:
            marker = fence.group(1)
            if in_fence is None:
                in_fence = marker[0] * len(marker)
            elif marker.startswith(in_fence):
                in_fence = None
            continue
        if in_fence is not None:
            continue
        visible = blank_code_spans(line)
        for m in INLINE_LINK.finditer(visible):
            yield number, m.group(1)
        ref = REFERENCE_DEF.match(visible)
        if ref:
            yield number, ref.group(1)


def check_link(root, md_path, target):
    """None if the link is fine or not a relative path, else the problem in words."""
    if target.startswith("<") and target.endswith(">"):
        target = target[1:-1]
    target = target.strip()
    if not target or target.startswith("#") or EXTERNAL.match(target):
        return None
    path = target.split("#", 1)[0].split("?", 1)[0]
    if not path:
        return None
    if path.startswith("/"):
        return "absolute path: a clone has no such place (use a path relative to this file)"
    resolved = os.path.normpath(os.path.join(root, os.path.dirname(md_path), path))
    if os.path.relpath(resolved, root).startswith(".." + os.sep) or os.path.relpath(resolved, root) == "..":
        return "points outside the repository"
    if not os.path.exists(resolved):
        return "no such file or folder"
    return None


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    problems = []
    md_files = [p for p in tracked_files(root, "*.md") if not p.startswith(SKIP_PREFIXES)]
    links = 0
    for md in md_files:
        full = os.path.join(root, md)
        if not os.path.isfile(full):
            continue  # tracked but deleted in the working tree: nothing to read
        with open(full, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for number, target in link_targets(text):
            links += 1
            why = check_link(root, md, target)
            if why:
                problems.append(f"{md}:{number}: link target '{target}': {why}")

    scanned = 0
    for rel in tracked_files(root):
        if rel.startswith(SKIP_PREFIXES):
            continue
        full = os.path.join(root, rel)
        if not os.path.isfile(full):
            continue
        with open(full, "rb") as f:
            data = f.read()
        scanned += 1
        for needle in OUTSIDE_PATHS:
            key = needle.encode()
            if key not in data:
                continue
            for number, line in enumerate(data.split(b"\n"), 1):
                if key in line:
                    problems.append(f"{rel}:{number}: mentions '{needle}', a folder outside the repository "
                                    "(a clone does not have it; point at docs/ or the copy in the tree)")

    for p in problems:
        print(p)
    if problems:
        print(f"check_links: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"check_links: {links} relative links in {len(md_files)} Markdown files resolve; "
          f"{scanned} tracked files name no folder outside the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
