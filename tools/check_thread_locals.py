#!/usr/bin/env python3
"""Checks that every thread_local of src/, tests/ and bench/ has a trivial destructor.

MinGW's emulated TLS frees a thread_local's storage before the object's destructor runs at thread
exit (mingw-w64 bugs 527 and 859, GCC bug 80816): a thread_local std::vector crashed the 32-bit
Windows build about one run in four as a ThreadPool's workers ended. A thread's objects with
destructors go through src/base/thread_scratch.h instead; a thread_local here is a scalar or a
pointer (the scanner accepts the types in TRIVIAL and any pointer; anything else is refused).

Usage: check_thread_locals.py [--root DIR] [--results FILE] | --self-test [--results FILE]
RESULTS_FILE gets one line a check, "PASS label" or "FAIL label: why", for tools/count_tests.py.
"""
import argparse
import os
import re
import sys
import tempfile

from check_lines import expectation_failures, report
from check_unity_names import strip_comments_and_literals

FOLDERS = ("src", "tests", "bench")
SUFFIXES = (".h", ".cpp", ".cc")
TRIVIAL = {"bool", "char", "int", "unsigned", "signed", "long", "short", "float", "double", "size_t", "int8_t", "uint8_t", "int16_t",
           "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "uintptr_t"}
QUALIFIERS = {"static", "const", "constexpr", "inline", "volatile"}
DECLARATION = re.compile(r"\bthread_local\b([^;={(]*?)\b\w+\s*(?:\[[^\]]*\]\s*)?[;={(]")


def without_template_arguments(text):
    """The text with every <...> (nested too) removed: std::vector<float*> -> std::vector."""
    out, depth = [], 0
    for c in text:
        depth += c == "<"
        if depth == 0:
            out.append(c)
        depth -= c == ">" and depth > 0
    return "".join(out)


def trivial(type_text):
    """Whether the declared type (qualifiers and all) is a pointer or one of TRIVIAL."""
    type_text = without_template_arguments(type_text)
    if "*" in type_text:
        return True
    words = [w.replace("std::", "") for w in type_text.split() if w not in QUALIFIERS]
    return bool(words) and all(w in TRIVIAL for w in words)


def check(root):
    """(failures, count of thread_locals seen) for the sources under root's FOLDERS."""
    failures, count = [], 0
    for folder in FOLDERS:
        for dirpath, dirs, files in os.walk(os.path.join(root, folder)):
            dirs.sort()
            for name in sorted(f for f in files if f.endswith(SUFFIXES)):
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = strip_comments_and_literals(f.read())
                for match in DECLARATION.finditer(text):
                    count += 1
                    if not trivial(match.group(1)):
                        line = text.count("\n", 0, match.start()) + 1
                        failures.append(f"{os.path.relpath(path, root)}:{line}: thread_local{match.group(1).rstrip()} has a "
                                        "destructor: MinGW frees its storage first (use base/thread_scratch.h)")
    return failures, count


SELF_TEST_CASES = [  # (label, source, what the failures must contain: [] for none)
    ("scalars and pointers", "thread_local uint32_t a = 0;\nstatic thread_local Foo* p = nullptr;\n"
     "thread_local const unsigned long n{3};\n// thread_local std::vector<float> in a comment\n", []),
    ("a vector", "void f() {\n  thread_local std::vector<float> pack;\n}\n",
     ["a.cpp:2: thread_local std::vector<float> has a destructor"]),
    ("a class", "static thread_local Tensor block;\n", ["a.cpp:1: thread_local Tensor has a destructor"]),
    ("an array of strings", "thread_local std::string names[4];\n", ["a.cpp:1:"]),
    ("a vector of pointers", "thread_local std::vector<float*> v;\n", ["a.cpp:1:"]),
    ("a pointer to a template", "thread_local std::vector<float>* v = nullptr;\n", []),
]


def self_test():
    failures = []
    for label, source, want in SELF_TEST_CASES:
        with tempfile.TemporaryDirectory(prefix="check-thread-locals-") as root:
            os.makedirs(os.path.join(root, "src"))
            with open(os.path.join(root, "src", "a.cpp"), "w") as f:
                f.write(source)
            got, _ = check(root)
        failures += expectation_failures(label, got, want, exact_count=True)
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--results", help="write PASS/FAIL lines here for tools/count_tests.py")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        failures = self_test()
        lines = [f"FAIL thread-locals self-test: {f}" for f in failures] or \
            [f"PASS thread-locals self-test: {len(SELF_TEST_CASES)} sources"]
    else:
        failures, count = check(args.root)
        lines = [f"FAIL thread-locals: {f}" for f in failures] or \
            [f"PASS thread-locals: {count} thread_locals of {', '.join(FOLDERS)}, each a scalar or a pointer"]
    report(lines, args.results)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
