#!/usr/bin/python3
# @brief No hand-assembled JSON (CTest 'json_writer_only', issue 41): every JSON text that sim/, apps/ and
# python/bindings write goes through core/io/json_writer.h, so escaping and number formatting live in one place.
"""Standard library only. Scans every .cpp under sim/, apps/ and python/bindings/ for the marks of JSON built by
string formatting:

  \\"key\\":        an escaped quoted key followed by ": " inside a C++ string literal
  fmt::format("{{   a format string that opens a JSON object
  json_quote(       a string quoted for JSON by hand (YAML writers use yaml_quote, core/io/output_file.h)

core/io/json_writer.cpp, the writer itself, is outside the scanned folders. PENDING may name files not converted yet;
each must still hold a mark (so a converted file leaves the list), and no other file may hold one.

Prints one line per finding and exits 1 if there is any.
Usage: /usr/bin/python3 scripts/check_json_writer.py [repository root, default: this script's parent folder]
"""
import pathlib
import re
import sys

FOLDERS = ("sim", "apps", "python/bindings")
MARKS = re.compile(r'\\"[A-Za-z_0-9]+\\": |fmt::format\("\{\{|json_quote\(')
# Files not converted yet (issue 41): none left; a file named here must still hold a mark.
PENDING: set = set()


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    problems, marked = [], set()
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.cpp")):
            rel = path.relative_to(root).as_posix()
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if MARKS.search(line):
                    marked.add(rel)
                    if rel not in PENDING:
                        problems.append(f"{rel}:{n}: JSON assembled by hand; write it with JsonWriter "
                                        f"(core/io/json_writer.h): {line.strip()}")
    for rel in sorted(PENDING - marked):
        problems.append(f"{rel}: no hand-assembled JSON left; remove it from PENDING in scripts/check_json_writer.py")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
