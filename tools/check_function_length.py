#!/usr/bin/env python3
"""Checks that no function of src/ is longer than 80 lines unless the comment above it says why.

Issue 31: "no function over 80 lines without a comment above it saying why". Every function
definition in src/ (a free function, a method defined in its class or outside it; a lambda is
part of the function around it) is measured from the first line of its declaration (a
`template <...>` or return type line above the name included) to its closing brace. One of more
than MAX_LINES lines fails, named by file:line with its name and length, unless the block of
`//` comment lines right above its declaration holds a line of the form

    // Over 80 lines: <why a split would make it worse>

with a reason of at least REASON_WORDS words. Definitions are found by universal-ctags
(`--kinds-C++=f --fields=+ne`: the name's line and the closing brace's), which parses C++,
multi-line signatures, macros and nested classes included; a definition whose end ctags did
not find, or whose end line holds no `}`, fails too, so a parse gone wrong cannot pass silently.

Usage: check_function_length.py [--root DIR] [--results FILE] | --self-test [--results FILE]
RESULTS_FILE gets one line a check, "PASS label" or "FAIL label: why", for tools/count_tests.py.
Exits 1 when a check failed.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from check_lines import expectation_failures, report

MAX_LINES = 80
REASON_WORDS = 4
MARKER = re.compile(r"^\s*//\s*Over 80 lines:\s*(.*)$")
SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".inc")


def source_files(src):
    """Paths of the sources under src/, relative to it, sorted."""
    found = []
    for root, dirs, files in os.walk(src):
        dirs.sort()
        found += [os.path.relpath(os.path.join(root, f), src) for f in sorted(files) if f.endswith(SOURCE_SUFFIXES)]
    return found


def function_tags(src, paths):
    """[(path, name line, end line or None, name)] of every function definition, by ctags."""
    if shutil.which("ctags") is None:
        raise RuntimeError("ctags is not installed (universal-ctags: bash tools/setup.sh --tests)")
    out = subprocess.run(["ctags", "--output-format=json", "--language-force=C++", "--kinds-C++=f",
                          "--fields=+ne", "-f", "-", "-L", "-"], cwd=src, input="\n".join(paths) + "\n",
                         capture_output=True, text=True, check=True).stdout
    tags = []
    for line in out.splitlines():
        tag = json.loads(line)
        if tag.get("_type") != "tag" or tag.get("kind") != "function":
            continue
        name = tag["name"]
        if name.startswith("__anon"):
            continue  # a lambda: part of the function around it
        if tag.get("scopeKind") in ("class", "struct", "union"):
            name = tag["scope"].split("::")[-1] + "::" + name
        tags.append((tag["path"], tag["line"], tag.get("end"), name))
    return tags


def is_code_above(line):
    """Whether a line above a function's name is still part of its declaration (return type,
    template header, attributes), not the end of something before it or a comment."""
    text = line.strip()
    if not text or text.startswith(("//", "/*", "*", "#")):
        return False
    if text.endswith((";", "{", "}", "*/")) or re.fullmatch(r"(public|private|protected)\s*:", text):
        return False
    return True


def declaration_start(lines, name_line):
    """1-based first line of the declaration whose name is on name_line."""
    start = name_line
    while start > 1 and is_code_above(lines[start - 2]):
        start -= 1
    return start


def reason_above(lines, start):
    """(reason text or None, line of the marker) from the // block right above line start."""
    number = start - 1
    while number >= 1 and lines[number - 1].strip().startswith("//"):
        m = MARKER.match(lines[number - 1])
        if m:
            return m.group(1).strip(), number
        number -= 1
    return None, None


def check(root, max_lines=MAX_LINES):
    """(failures, summary) for the tree at root (its src/)."""
    src = os.path.join(root, "src")
    paths = source_files(src)
    failures, long_with_reason, count, texts = [], 0, 0, {}
    for path, name_line, end, name in function_tags(src, paths):
        count += 1
        if path not in texts:
            with open(os.path.join(src, path), encoding="utf-8") as f:
                texts[path] = f.read().split("\n")
        lines = texts[path]
        where = f"src/{path}:{name_line}: {name}"
        if end is None or end > len(lines) or "}" not in lines[end - 1]:
            failures.append(f"{where}: ctags found no closing brace for it (end line {end}); "
                            "write it so ctags parses it")
            continue
        start = declaration_start(lines, name_line)
        length = end - start + 1
        if length <= max_lines:
            continue
        reason, marker_line = reason_above(lines, start)
        if reason is None:
            failures.append(f"{where} is {length} lines (lines {start}-{end}), over {max_lines}: split it, or write "
                            f"'// Over 80 lines: <why>' right above it")
        elif len(reason.split()) < REASON_WORDS:
            failures.append(f"src/{path}:{marker_line}: the reason above {name} ({length} lines) is '{reason}': "
                            f"say why a split would make it worse, in at least {REASON_WORDS} words")
        else:
            long_with_reason += 1
    summary = (f"{count} functions in {len(paths)} sources of src/, none over {max_lines} lines without a reason "
               f"above ({long_with_reason} with one)")
    return failures, summary


def body(lines):
    return "".join(f"  x += {i};\n" for i in range(lines))


# (label, source, what the failures must contain: [] for none). Bodies of 85 lines make functions
# of 87 or more; the limit is 80.
SELF_TEST_CASES = [
    ("a short function", "int f() {\n" + body(10) + "  return 0;\n}\n", []),
    ("a long function", "int x;\n\nint long_one() {\n" + body(85) + "  return 0;\n}\n",
     ["src/a.cpp:3: long_one is 88 lines (lines 3-90), over 80"]),
    ("a long function with its reason",
     "// What it does.\n// Over 80 lines: one table of cases, read top to bottom, would scatter.\n"
     "int long_one() {\n" + body(85) + "  return 0;\n}\n", []),
    ("a reason too short", "// Over 80 lines: long.\nint long_one() {\n" + body(85) + "}\n",
     ["src/a.cpp:1: the reason above long_one (87 lines) is 'long.'"]),
    ("a reason not right above", "// Over 80 lines: one table of cases, read top to bottom.\n\n"
     "int long_one() {\n" + body(85) + "}\n", ["src/a.cpp:3: long_one is 87 lines"]),
    ("a multi-line signature, out of its class",
     "namespace n {\nstruct Model { int quantize(int a, int b); };\n\n"
     "template <typename T>\nstatic inline int\nModel::quantize(\n    int a,\n    int b) {\n" + body(76) + "}\n}\n",
     ["src/a.cpp:6: Model::quantize is 82 lines (lines 4-85)"]),
    ("a method in its class, with a lambda",
     "struct S {\n public:\n  int run() {\n    auto f = [&](int y) {\n" + body(80) + "    };\n    return f(1);\n  }\n};\n",
     ["src/a.cpp:3: S::run is 85 lines"]),
    ("a function of exactly 80 lines", "void f() {\n" + body(78) + "}\n", []),
]


def self_test():
    failures = []
    for label, text, want in SELF_TEST_CASES:
        with tempfile.TemporaryDirectory(prefix="check-function-length-") as root:
            os.makedirs(os.path.join(root, "src"))
            with open(os.path.join(root, "src", "a.cpp"), "w", encoding="utf-8") as f:
                f.write(text)
            got, _ = check(root)
        failures += expectation_failures(label, got, want, exact_count=True)
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        help="the repository (its src/); default: this script's")
    parser.add_argument("--results", help="write PASS/FAIL lines here for tools/count_tests.py")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    try:
        if args.self_test:
            failures = self_test()
            lines = [f"FAIL function length self-test: {f}" for f in failures] or \
                [f"PASS function length self-test: {len(SELF_TEST_CASES)} sources"]
        else:
            failures, summary = check(args.root)
            lines = [f"FAIL function length: {f}" for f in failures] or [f"PASS function length: {summary}"]
    except (RuntimeError, subprocess.CalledProcessError) as e:
        failures, lines = [str(e)], [f"FAIL function length: {e}"]
    report(lines, args.results)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
