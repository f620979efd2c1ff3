#!/usr/bin/env python3
"""Checks that no two sources of one target define the same file-local name.

The build is a unity build (meson.build: unity=on): Meson compiles a target's sources 8 to a
compiler run, one after the other in one translation unit. Names with internal linkage (in an
anonymous namespace, `static`, or a namespace-scope const/constexpr variable) then share one
scope: the same name twice is a compile error in the run where the two meet, or, with another
signature, a silent overload that a call in the other file may pick. Which sources meet changes
whenever a source is added, so any repeat within a target is refused here, whichever chunk its
files are in.

The targets and their sources are read from the unity files Meson wrote
(BUILD/TARGET.p/TARGET-unity*.cpp). The C++ is read by a small scanner that knows comments,
string and character literals, braces and namespaces, enough for this code base.

Usage: check_unity_names.py [--build DIR] [--results FILE] | --self-test [--results FILE]
Exit 0 when every name is unique within its target; 1 otherwise, listing each repeat.
"""
import argparse
import collections
import glob
import os
import re
import sys

from check_lines import report

KEYWORDS = {"const", "constexpr", "static", "inline", "int", "float", "double", "bool", "char", "void", "auto",
            "unsigned", "signed", "long", "short", "struct", "class", "enum", "union", "return", "operator",
            "noexcept", "override", "final", "volatile", "extern", "thread_local", "typename", "template"}


def strip_comments_and_literals(text):
    """The text with comments removed and string/char literals emptied (raw strings too)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            out.append(" ")
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i)
            delimiter = text[i + 2:open_paren]
            end = text.find(")" + delimiter + '"', open_paren)
            i = n if end < 0 else end + len(delimiter) + 2
            out.append('""')
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # a digit separator: 1'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            out.append(c + c)
        else:
            out.append(c)
            i += 1
    return "".join(out)


def without_template_arguments(statement):
    """`std::array<int, 3> x` -> `std::array x`: what is between angle brackets, dropped."""
    previous = None
    while previous != statement:
        previous = statement
        statement = re.sub(r"<[^<>]*>", " ", statement)
    return statement


def declaration(statement):
    """(name, kind) of what a namespace-scope declaration or definition introduces, or None;
    kind: 'type', 'alias', 'function' or 'variable'."""
    s = without_template_arguments(" ".join(statement.split()))
    s = re.sub(r"^template\s*", "", s)
    if not s or s.startswith(("using namespace", "namespace", "extern ", "friend ", "static_assert", "#")):
        return None
    m = re.match(r"using\s+(\w+)\s*=", s)
    if m:
        return m.group(1), "alias"
    if s.startswith("using "):  # a using-declaration names another scope's entity
        return None
    m = re.match(r"(?:(?:static|inline|constexpr|const)\s+)*(?:struct|class|union|enum(?:\s+class|\s+struct)?)\s+(\w+)", s)
    if m:
        return m.group(1), "type"
    if "(" in s:
        head = s[:s.index("(")].rstrip()
        m = re.search(r"(\w+)$", head)
        if m and not head.endswith("operator") and m.group(1) not in KEYWORDS and "=" not in head:
            return m.group(1), "function"  # not a variable initialized by a call: no '=' before it
    head = re.split(r"[=\[{(;]", s, maxsplit=1)[0].rstrip()
    m = re.search(r"\b([A-Za-z_]\w*)$", head)
    return (m.group(1), "variable") if m and m.group(1) not in KEYWORDS else None


def is_body_head(before):
    """Whether a '{' after `before` opens a function's or a type's body, not a brace initializer."""
    s = " ".join(without_template_arguments(before).split())
    if re.match(r"(?:\w+\s+)*(?:struct|class|union|enum)\b", s) and "=" not in s:
        return True
    return bool(re.search(r"\)(\s*(const|noexcept|override|final|mutable))*(\s*->\s*[\w:&\* ]+)?$", s))


def has_internal_linkage(statement, kind, in_anonymous):
    """An anonymous namespace's names all do; elsewhere `static` ones and non-inline const variables."""
    if in_anonymous:
        return True
    words = without_template_arguments(statement).split()
    if words[:1] == ["static"] or words[:2] == ["template", "static"]:
        return True
    return kind == "variable" and words[0] in ("const", "constexpr") and "inline" not in words


def file_local_names(text):
    """Names with internal linkage this source defines at namespace scope."""
    text = strip_comments_and_literals(text)
    text = "\n".join(line for line in text.split("\n") if not line.lstrip().startswith("#"))
    names = set()
    scopes = []  # 'named' / 'anonymous' namespaces, 'body' for anything else
    resumes = []  # per scope: the statement to go on with after its '}' (a brace initializer's)
    statement = []
    i = 0
    while i < len(text):
        c = text[i]
        at_namespace_scope = all(kind != "body" for kind in scopes)
        if c == "{":
            before = "".join(statement).strip()
            resume = []
            if at_namespace_scope and re.fullmatch(r"namespace", before):
                scopes.append("anonymous")
            elif at_namespace_scope and re.fullmatch(r"namespace\s+[\w:]+", before):
                scopes.append("named")
            else:
                if at_namespace_scope and before:
                    found = declaration(before)  # a type's or function's body, or a brace initializer
                    if found and has_internal_linkage(before, found[1], "anonymous" in scopes):
                        names.add(found[0])
                    if not is_body_head(before):  # `kX{...}`, `= int64_t{1} << 20;`: the statement goes on
                        resume = statement + ["{}"]
                scopes.append("body")
            resumes.append(resume)
            statement = []
        elif c == "}":
            if scopes:
                scopes.pop()
            statement = resumes.pop() if resumes else []
        elif c == ";":
            before = "".join(statement).strip()
            if at_namespace_scope and before:
                found = declaration(before)  # forward declarations and prototypes define nothing
                if found and found[1] in ("variable", "alias") and \
                        has_internal_linkage(before, found[1], "anonymous" in scopes):
                    names.add(found[0])
            statement = []
        elif at_namespace_scope:
            statement.append(c)
        i += 1
    return names


def unity_targets(build):
    """{target: [source, ...]} from the unity files Meson wrote under build/ that its build.ninja
    compiles (a target set up again without unity leaves its old ones behind)."""
    targets = collections.defaultdict(list)
    with open(os.path.join(build, "build.ninja")) as f:
        compiled = set(re.findall(r"[^\s:$]*-unity\d+\.cpp", f.read()))
    for unity_file in sorted(glob.glob(os.path.join(build, "**", "*-unity*.cpp"), recursive=True)):
        if os.path.relpath(unity_file, build) not in compiled:
            continue
        target = re.sub(r"-unity\d+\.cpp$", "", os.path.basename(unity_file))
        with open(unity_file) as f:
            for line in f:
                m = re.match(r'#include\s*[<"](.+)[>"]', line.strip())
                if m:
                    path = m.group(1)
                    targets[target].append(path if os.path.isabs(path) else os.path.join(os.path.dirname(unity_file), path))
    return targets


def read_source(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def repeats(targets, read=read_source):
    """[(target, name, [source, ...])] for each name more than one source of a target defines."""
    found = []
    for target, sources in sorted(targets.items()):
        where = collections.defaultdict(list)
        for source in sources:
            for name in file_local_names(read(source)):
                where[name].append(os.path.relpath(source))
        found += [(target, name, files) for name, files in sorted(where.items()) if len(files) > 1]
    return found


SELF_TEST_CASES = [
    # (source, names expected)
    ("namespace rg {\nnamespace {\nconstexpr const char* kFile = \"a.cl\";\nint64_t elements(int64_t r) { return r; }\n"
     "struct Plan { int x; };\nusing Row = std::vector<float>;\ntemplate <class T>\nT twice(T v) { return v + v; }\n}\n}\n",
     {"kFile", "elements", "Plan", "Row", "twice"}),
    ("namespace rg {\nstatic int counter = 0;\nconstexpr int kLimit = 4;\ninline constexpr int kShared = 1;\n"
     "int exported(int x) { return x; }\nstruct Exported { void f(); };\nvoid Exported::f() {}\n"
     "const Table& table_of(int isa) { return kTables[isa]; }\n}\n",
     {"counter", "kLimit"}),
    ("namespace {\n// int commented(int);\nconst char* s = \"namespace { int hidden() {} }\";\n"
     "std::array<int, 3> kTable{1, 2, 3};\nconstexpr int64_t kBytes = int64_t{64} << 20;\nusing detail::u32;\nstruct Forward;\nint prototype(int);\n"
     "int with_lambda() { auto f = [](int a) { return a; }; return f(1); }\n}\n",
     {"s", "kTable", "kBytes", "with_lambda"}),
    ("namespace a::b {\nnamespace {\nstd::function<void(int)> callback = nullptr;\nint value = compute(3);\n}\n"
     "const std::string kName = \"x\";\n}\n",
     {"callback", "value", "kName"}),
]


def self_test():
    failures = []
    for source, expected in SELF_TEST_CASES:
        got = file_local_names(source)
        if got != expected:
            failures.append(f"expected {sorted(expected)}, got {sorted(got)} from:\n{source}")
    texts = {"a.cpp": "namespace {\nint f(int x) { return x; }\n}\n", "b.cpp": "namespace {\nint f(long x) { return 1; }\n}\n"}
    found = repeats({"t": ["a.cpp", "b.cpp"]}, read=texts.get)
    if found != [("t", "f", ["a.cpp", "b.cpp"])]:
        failures.append(f"an overload across two sources was not found: {found}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--results")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        failures = self_test()
        lines = [f"FAIL unity names self-test: {f}" for f in failures] or \
            [f"PASS unity names self-test: {len(SELF_TEST_CASES) + 1} cases"]
    else:
        targets = unity_targets(args.build) if os.path.exists(os.path.join(args.build, "build.ninja")) else {}
        if not targets:
            lines = [f"FAIL unity names: no unity files under {args.build} (is it a unity build? meson.build: unity=on)"]
        else:
            found = repeats(targets)
            lines = [f"FAIL unity names: '{name}' is file-local in {len(files)} sources of {target}: {', '.join(files)}"
                     for target, name, files in found] or \
                [f"PASS unity names: {sum(len(s) for s in targets.values())} sources of {len(targets)} unity targets, "
                 "every file-local name unique within its target"]
    report(lines, args.results)
    return 1 if any(line.startswith("FAIL") for line in lines) else 0


if __name__ == "__main__":
    sys.exit(main())
