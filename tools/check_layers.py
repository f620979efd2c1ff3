#!/usr/bin/env python3
"""Checks that every #include "..." of src/ goes down the layer order, never up or sideways.

DESIGN.md section 9: "An include goes down only." The folders of src/ are floors, written once,
bottom to top, in LAYERS below, each with what it is and why it sits where it does. A file may
include headers of its own folder and of the folders listed before its own; an include of a
folder listed after it (above it, or beside it: a total order leaves nothing beside) fails, named
by file:line with the rule ("nn may not include quant: quant is above nn"), and so does every
cycle of folders (each edge shown by one include). Also checked, so the order cannot drift:
  - every folder of src/ holding a source is in LAYERS, and every folder in LAYERS exists;
  - README.md's "## Layout" block names every folder of LAYERS, in the same order (a line
    `src/FOLDER  what it is`, the first word being the folder).
An include is a line `#include "PATH"`; PATH is looked up under src/, then beside the including
file; one found in neither (stb_image.h, a system header in quotes) is outside src/ and ignored.

Usage: check_layers.py [--root DIR] [--results FILE] | --self-test [--results FILE]
RESULTS_FILE gets one line a check, "PASS label" or "FAIL label: why", for tools/count_tests.py.
Exits 1 when a check failed.
"""
import argparse
import os
import re
import sys
import tempfile

from check_lines import expectation_failures, report

# Bottom to top. README.md's Layout lists the same folders in the same order.
LAYERS = [
    # Status/Result, checks, the counted allocator, RNG, fp16 scalars, thread pool, files and
    # paths: needs nothing of the project, so everything may use it.
    "base",
    # A typed n-d array over base's allocator; knows no kernel.
    "tensor",
    # The kernel contracts and their xsimd templates: what every ISA level instantiates and the
    # kernel tables point to; below cpu/, whose tables name them.
    "cpu/ukernels",
    # CPU detection and the kernel tables that pick a level's kernels; reaches the kernels only
    # through ukernels' declarations, never cpu/isa.
    "cpu",
    # The math, templated on float/double, and the dispatchers that run it on the kernel tables
    # (GEMMs, int8 training's dynamic GEMM, fixed-point requantization, int8 parameters).
    "ops",
    # Kernel instantiations, one file per ISA level. The reference level is ops' scalar math
    # (ops/activation.h, ops/fixed_point.h), so this sits above ops; nothing includes it.
    "cpu/isa",
    # The OpenCL driver and the launchers of kernels/*.cl: the device's counterpart of cpu/ and
    # ops/, taking ops' types (UnaryOp, LossKind, QuantParams); knows no layer or model.
    "opencl",
    # The MPI communicator and how ranks share a batch: a transport that knows no dataset,
    # layer or model; the data prefetcher reads its rank's rows through it.
    "dist",
    # Datasets and their readers, the inflated-data cache, batches and their prefetching.
    "data",
    # Layers, losses, the model, its optimizers, cfg parser and presets: the f32/f16 CPU model.
    "nn",
    # The int8 engines (post-training quantization) and quantization-aware training, built on
    # nn's layers and models.
    "quant",
    # The device models: nn's, quant's and the optimizer's mirrors on an OpenCL device, built
    # on opencl/'s launchers; executors the trainer drives, so below train.
    "opencl/model",
    # What training and the study print and measure: progress, process and system figures,
    # hardware table and peaks, roofline, charts; reads models, never trains them.
    "report",
    # Schedules, checkpoints, the training loop (CPU, device, MPI), GANs, memory planning.
    "train",
    # The study: runs training as child processes in interleaved rounds and reports on them.
    "study",
    # The command line, on top of everything.
    "app",
]

SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def source_files(src):
    """Paths of the sources under src/, relative to it, sorted."""
    found = []
    for root, dirs, files in os.walk(src):
        dirs.sort()
        found += [os.path.relpath(os.path.join(root, f), src) for f in sorted(files) if f.endswith(SOURCE_SUFFIXES)]
    return found


def folder_of(path):
    return os.path.dirname(path).replace(os.sep, "/")


def includes(src, path):
    """[(line number, include text, included file relative to src)] of one source, those in src/ only."""
    found = []
    with open(os.path.join(src, path), encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            text = m.group(1)
            for candidate in (text, os.path.join(folder_of(path), text)):
                full = os.path.normpath(os.path.join(src, candidate))
                if os.path.isfile(full) and os.path.commonpath([full, os.path.abspath(src)]) == os.path.abspath(src):
                    found.append((number, text, os.path.relpath(full, src).replace(os.sep, "/")))
                    break
    return found


def check_includes(src, order, failures):
    """Every include goes to its own folder or one below; returns the folder graph
    {(from, to): first include} and the number of includes read."""
    rank = {folder: i for i, folder in enumerate(order)}
    edges, count = {}, 0
    for path in source_files(src):
        here = folder_of(path)
        if here not in rank:
            continue  # check_folders names it
        for number, text, target in includes(src, path):
            count += 1
            there = folder_of(target)
            if there == here:
                continue
            where = f'src/{path}:{number}: #include "{text}"'
            edges.setdefault((here, there), where)
            if there not in rank:
                failures.append(f"{where}: {there}/ is not in tools/check_layers.py's LAYERS")
            elif rank[there] > rank[here]:
                failures.append(f"{where}: {here} may not include {there}: {there} is above {here}")
    return edges, count


def cycles(edges):
    """One cycle per strongly connected set of folders, as [folder, ..., folder] (first = last)."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):  # Tarjan; the graph has a few dozen nodes, recursion is fine
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                members.add(w)
                if w == v:
                    break
            if len(members) > 1:
                found.append(cycle_through(graph, members, min(members)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def cycle_through(graph, members, start):
    """A shortest path start -> ... -> start inside one strongly connected set (breadth first)."""
    previous, frontier = {}, [start]
    while frontier:
        step = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w not in members or w in previous:
                    continue
                previous[w] = v
                if w == start:
                    path = [start]
                    while True:
                        path.append(previous[path[-1]])
                        if path[-1] == start:
                            return path[::-1]
                step.append(w)
        frontier = step
    return [start, start]


def check_folders(src, order, failures):
    present = sorted({folder_of(p) for p in source_files(src)})
    for folder in present:
        if folder == "":
            failures.append("src/ itself holds sources: each belongs in a folder of LAYERS")
        elif folder not in order:
            failures.append(f"src/{folder}/ is not in tools/check_layers.py's LAYERS: place it on its floor there "
                            "and in README.md's Layout")
    for folder in order:
        if folder not in present:
            failures.append(f"tools/check_layers.py's LAYERS names src/{folder}/, which holds no source")


def readme_layout(readme):
    """[(line number, folder)] named by README's "## Layout" code block, or None without one."""
    with open(readme, encoding="utf-8") as f:
        lines = f.read().split("\n")
    try:
        start = lines.index("## Layout")
    except ValueError:
        return None
    named, in_block = [], False
    for number, line in enumerate(lines[start + 1:], start + 2):
        if line.startswith("## "):
            break
        if line.startswith("```"):
            if in_block:
                break
            in_block = True
            continue
        m = re.match(r"src/(\S+)", line) if in_block else None
        if m:
            named.append((number, m.group(1).rstrip("/")))
    return named


def check_readme(root, order, failures):
    readme = "README.md"
    named = readme_layout(os.path.join(root, readme))
    if named is None:
        failures.append(f"{readme}: no '## Layout' section")
        return
    folders = [folder for _, folder in named]
    for folder in order:
        if folder not in folders:
            failures.append(f"{readme}: the Layout section does not name src/{folder}")
    for number, folder in named:
        if folder not in order:
            failures.append(f"{readme}:{number}: the Layout section names src/{folder}, which is not in LAYERS")
    expected = [f for f in order if f in folders]
    for (number, folder), want in zip([n for n in named if n[1] in order], expected):
        if folder != want:
            failures.append(f"{readme}:{number}: the Layout section names src/{folder} where LAYERS has src/{want} "
                            f"(bottom to top: {', '.join(order)})")
            break


def check(root, order):
    """(failures, summary) for the tree at root (its src/ and README.md)."""
    src, failures = os.path.join(root, "src"), []
    check_folders(src, order, failures)
    edges, count = check_includes(src, order, failures)
    for cycle in cycles(edges):
        shown = "; ".join(edges[(a, b)] for a, b in zip(cycle, cycle[1:]))
        failures.append(f"folders include each other: {' -> '.join(cycle)} ({shown})")
    check_readme(root, order, failures)
    return failures, f"{count} includes of src/ go down the {len(order)} floors, README's Layout names them in order"


def make_tree(root, files, readme_folders):
    for path, text in files.items():
        full = os.path.join(root, "src", path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)
    with open(os.path.join(root, "README.md"), "w", encoding="utf-8") as f:
        f.write("# t\n\n## Layout\n\n```\n" + "".join(f"src/{d:<8} what\n           more\n" for d in readme_folders) +
                "tests/    tests\n```\n\n## Next\n\nsrc/later is not in the block\n")


# (label, files, README's folders, what the failures must contain: [] for none)
SELF_TEST_ORDER = ["low", "mid", "top", "top/sub"]
GOOD = {
    "low/a.h": "#pragma once\n#include <vector>\n",
    "mid/b.h": '#pragma once\n#include "low/a.h"\n#include "b_local.h"\n',
    "mid/b_local.h": "#pragma once\n",
    "top/c.cpp": '#include "mid/b.h"\n#include "stb_image.h"\n// #include "top/sub/d.h"\n',
    "top/sub/d.h": '#pragma once\n#include "top/c.h"\n',
    "top/c.h": "#pragma once\n",
}
SELF_TEST_CASES = [
    ("a good tree", GOOD, SELF_TEST_ORDER, []),
    ("an include going up", {**GOOD, "low/a.cpp": '#include "low/a.h"\n\n  #  include "mid/b.h"\n'},
     SELF_TEST_ORDER, ['src/low/a.cpp:3: #include "mid/b.h": low may not include mid: mid is above low',
                       "folders include each other: low -> mid -> low"]),
    ("a nested folder including its parent's floor above", {**GOOD, "top/c.h": '#include "top/sub/d.h"\n'},
     SELF_TEST_ORDER, ["top may not include top/sub: top/sub is above top", "top -> top/sub -> top"]),
    ("a folder not in the order", {**GOOD, "extra/e.h": '#include "low/a.h"\n'}, SELF_TEST_ORDER,
     ["src/extra/ is not in tools/check_layers.py's LAYERS"]),
    ("an include of a folder not in the order", {**GOOD, "extra/e.h": "\n", "low/f.h": '#include "extra/e.h"\n'},
     SELF_TEST_ORDER, ['src/low/f.h:1: #include "extra/e.h": extra/ is not in']),
    ("README missing a folder", GOOD, ["low", "mid", "top"], ["the Layout section does not name src/top/sub"]),
    ("README out of order", GOOD, ["low", "top", "mid", "top/sub"],
     ["names src/top where LAYERS has src/mid"]),
    ("README naming a folder too many", GOOD, SELF_TEST_ORDER + ["gone"],
     ["names src/gone, which is not in LAYERS"]),
]


def self_test():
    failures = []
    for label, files, readme_folders, want in SELF_TEST_CASES:
        with tempfile.TemporaryDirectory(prefix="check-layers-") as root:
            make_tree(root, files, readme_folders)
            got, _ = check(root, SELF_TEST_ORDER)
        failures += expectation_failures(label, got, want)
    with tempfile.TemporaryDirectory(prefix="check-layers-") as root:
        make_tree(root, {"low/a.h": "\n", "mid/b.h": "\n"}, ["low", "mid"])
        got, _ = check(root, ["low", "mid", "top"])
        if not any("names src/top/, which holds no source" in g for g in got):
            failures.append(f"a floor of the order with no folder: not reported; got {got}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        help="the repository (its src/ and README.md); default: this script's")
    parser.add_argument("--results", help="write PASS/FAIL lines here for tools/count_tests.py")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        failures = self_test()
        lines = [f"FAIL layers self-test: {f}" for f in failures] or \
            [f"PASS layers self-test: {len(SELF_TEST_CASES) + 1} trees"]
    else:
        failures, summary = check(args.root, LAYERS)
        lines = [f"FAIL layers: {f}" for f in failures] or [f"PASS layers: {summary}"]
    report(lines, args.results)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
