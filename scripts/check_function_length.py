#!/usr/bin/env python3
"""Lists the functions of sim/ and apps/ longer than the project's limit (120 lines, header to closing brace).

Why a script and not a linter: clang-tidy's readability-function-size counts statements, not the lines a reader
scrolls through, and needs a compile database of the CUDA build. This scanner only tracks braces outside strings,
characters and comments, and calls a brace a function body when it opens at namespace or class scope after a
parameter list. Exit status 1 when any function is over the limit (CTest `docs/function_length`).

Usage: check_function_length.py [--limit N] [--list] [paths...]   (default paths: sim apps)
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def strip_code(text):
    """The text with comments, string and character literals blanked (newlines kept), so braces inside them vanish."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^()\\ ]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i + m.end())
            end = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # digit separator 1'000
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def long_functions(path, limit):
    code = strip_code(path.read_text(encoding="utf-8", errors="replace"))
    found = []
    scopes = []  # 'ns', 'class', 'func', 'other'
    stmt_start = 0
    for i, c in enumerate(code):
        if c in ";":
            stmt_start = i + 1
        elif c == "{":
            header = code[stmt_start:i]
            outer = scopes[-1][0] if scopes else "ns"
            kind = "other"
            if outer in ("ns", "class"):
                h = re.sub(r"\s+", " ", header).strip()
                if re.search(r"\bnamespace\b", h) or h.startswith('extern "C"') or h == "extern":
                    kind = "ns"
                elif re.search(r"\b(class|struct|union|enum)\b[^()]*$", h):
                    kind = "class"
                elif re.search(r"=\s*$", h):
                    kind = "other"
                elif "(" in h:
                    kind = "func"
            first = stmt_start + (len(header) - len(header.lstrip()))
            scopes.append((kind, code.count("\n", 0, first) + 1))
            stmt_start = i + 1
        elif c == "}":
            if scopes:
                kind, line = scopes.pop()
                if kind == "func":
                    end = code.count("\n", 0, i) + 1
                    if end - line + 1 > limit:
                        name = re.sub(r"\s+", " ", code[code.rfind("\n", 0, 0) + 1:0])
                        found.append((line, end - line + 1))
            stmt_start = i + 1
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=120)
    ap.add_argument("paths", nargs="*", default=["sim", "apps"])
    args = ap.parse_args()
    over = []
    for p in args.paths:
        base = ROOT / p
        files = [base] if base.is_file() else sorted(list(base.rglob("*.cpp")) + list(base.rglob("*.h")) + list(base.rglob("*.cu")))
        for f in files:
            for line, length in long_functions(f, args.limit):
                over.append((f.relative_to(ROOT), line, length))
    for f, line, length in sorted(over, key=lambda x: -x[2]):
        text = (ROOT / f).read_text(encoding="utf-8", errors="replace").splitlines()[line - 1].strip()
        print(f"{f}:{line}: {length} lines (limit {args.limit}): {text[:90]}")
    if over:
        print(f"check_function_length: {len(over)} function(s) over {args.limit} lines", file=sys.stderr)
        return 1
    print(f"check_function_length: no function over {args.limit} lines in {' '.join(args.paths)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
