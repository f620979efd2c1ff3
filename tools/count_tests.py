#!/usr/bin/env python3
"""Counts test results and prints "N passed, N failed" as its last line.

Three kinds of input, any number of each:
  RESULTS_DIR TESTLOG      a folder of GoogleTest XML reports and the Meson log of the run
                           that wrote them (build/meson-logs/testlog*.json), given as a pair;
                           TESTLOG may be "-" when no Meson run goes with the folder.
                           Every test case counts. A program listed in the Meson log that
                           failed without writing a report (a crash, a timeout) counts as one
                           failed case, and so does a Meson log that is missing. So does
                           one that exited 0 without a report: it did not run its tests (a
                           32-bit .exe under wine64 without 32-bit Wine prints nothing and
                           exits 0).
  --xml-dir DIR            GoogleTest XML reports with no Meson log (tools/qemu_old_cpus.sh
                           writes its own and checks the exit codes itself).
  --checks FILE            one check a line, "PASS label" or "FAIL label: why", written by
                           tools/qemu_old_cpus.sh and tools/check_isa_leaks.py. A missing or
                           empty file counts as one failed check: its script did not finish.
Exits 1 when anything failed.
Usage: count_tests.py RESULTS_DIR TESTLOG [RESULTS_DIR TESTLOG ...] [--xml-dir DIR ...] [--checks FILE ...]
       count_tests.py --self-test RESULTS_FILE   (checks the rules above on made-up runs; writes
                                                 PASS/FAIL lines for --checks)
"""
import json
import os
import sys
import xml.etree.ElementTree as ET


class Tally:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def fail(self, message):
        self.failed += 1
        print(f"FAILED {message}")


def label_of(results_dir):
    """build/test-results-sse2 -> "sse2: ", build/test-results -> "" (names the pass in messages)."""
    base = os.path.basename(os.path.normpath(results_dir))
    return base[len("test-results-"):] + ": " if base.startswith("test-results-") else ""


def count_xml_dir(results_dir, tally):
    """Counts the cases of every report; returns (programs reported, programs with failures)."""
    label = label_of(results_dir)
    reported, programs_with_failures = set(), set()
    for name in sorted(os.listdir(results_dir)) if os.path.isdir(results_dir) else []:
        if not name.endswith(".xml"):
            continue
        program = name[:-4]
        try:
            root = ET.parse(os.path.join(results_dir, name)).getroot()
        except ET.ParseError:
            continue  # a half-written report: the program died; its log or exit check counts it
        reported.add(program)
        for case in root.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                tally.fail(f"{label}{program}: {case.get('classname')}.{case.get('name')}")
                programs_with_failures.add(program)
            elif case.get("result") == "skipped" or case.find("skipped") is not None:
                tally.skipped += 1
            else:
                tally.passed += 1
    return reported, programs_with_failures


def count_meson_log(testlog, reported, programs_with_failures, label, tally):
    if not os.path.exists(testlog):
        tally.fail(f"{label}{testlog} is missing: that test run did not happen")
        return
    with open(testlog) as f:
        for line in f:
            if not line.strip():
                continue
            entry = json.loads(line)
            if entry.get("result") == "OK" and entry.get("name") not in reported:
                tally.fail(f"{label}{entry.get('name')}: exited 0 without a GoogleTest report (its tests did not run)")
                continue
            if entry.get("result") in ("OK", "SKIP", "EXPECTEDFAIL"):
                continue
            if entry.get("name") in programs_with_failures:
                continue  # its failed cases are counted already
            # Died without a report, or exited non-zero although its cases passed.
            tally.fail(f"{label}{entry.get('name')}: {entry.get('result')}")


def count_checks(path, tally):
    lines = []
    if os.path.exists(path):
        with open(path) as f:
            lines = [line.rstrip("\n") for line in f if line.strip()]
    if not lines:
        tally.fail(f"{path} is missing or empty: the script that writes it did not finish")
        return
    for line in lines:
        word, _, rest = line.partition(" ")
        if word == "PASS":
            tally.passed += 1
        elif word == "SKIP":
            tally.skipped += 1
            print(f"SKIPPED {rest}")  # a check's reason is in no report: said here
        else:  # FAIL, or a line this script does not understand
            tally.fail(rest if word == "FAIL" else f"{path}: unreadable line {line!r}")


def self_test(results_path):
    """Made-up runs: a report that passed, one that failed, a program that exited 0 without a
    report (a 32-bit .exe under wine64 alone), one that crashed, a missing log."""
    import contextlib
    import io
    import tempfile
    passing = '<testsuites><testsuite><testcase classname="A" name="b"/></testsuite></testsuites>'
    failing = '<testsuites><testsuite><testcase classname="A" name="c"><failure/></testcase></testsuite></testsuites>'
    cases = [  # label, reports {program: xml}, meson log entries {program: result}, (passed, failed)
        ("a report that passed counts its case", {"p": passing}, {"p": "OK"}, (1, 0)),
        ("a failed case counts once", {"p": failing}, {"p": "FAIL"}, (0, 1)),
        ("exit 0 without a report is a failure", {}, {"p": "OK"}, (0, 1)),
        ("a crash without a report is a failure", {}, {"p": "FAIL"}, (0, 1)),
        ("a missing Meson log is a failure", {"p": passing}, None, (1, 1)),
    ]
    lines = []
    for label, reports, log, want in cases:
        with tempfile.TemporaryDirectory() as folder:
            results = os.path.join(folder, "test-results")
            os.makedirs(results)
            for program, text in reports.items():
                with open(os.path.join(results, program + ".xml"), "w") as f:
                    f.write(text)
            testlog = os.path.join(folder, "testlog.json")
            if log is not None:
                with open(testlog, "w") as f:
                    for program, result in log.items():
                        f.write(json.dumps({"name": program, "result": result}) + "\n")
            tally = Tally()
            with contextlib.redirect_stdout(io.StringIO()):
                reported, with_failures = count_xml_dir(results, tally)
                count_meson_log(testlog, reported, with_failures, "", tally)
            got = (tally.passed, tally.failed)
            lines.append(f"PASS count_tests: {label}" if got == want else
                         f"FAIL count_tests: {label}: counted {got} (passed, failed), want {want}")
    with open(results_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    for line in lines:
        print(line)
    return 0 if all(line.startswith("PASS") for line in lines) else 1


def main(argv):
    if argv[:1] == ["--self-test"]:
        if len(argv) != 2:
            print("count_tests.py: --self-test needs RESULTS_FILE", file=sys.stderr)
            return 2
        return self_test(argv[1])
    xml_dirs, checks = [], []
    args = list(argv)
    positional = []
    while args:
        arg = args.pop(0)
        if arg in ("--xml-dir", "--checks"):
            if not args:
                print(f"count_tests.py: {arg} needs a value", file=sys.stderr)
                return 2
            (xml_dirs if arg == "--xml-dir" else checks).append(args.pop(0))
        elif arg.startswith("--"):
            print(f"count_tests.py: unknown option {arg}\n{__doc__}", file=sys.stderr)
            return 2
        else:
            positional.append(arg)
    if len(positional) % 2:
        print(f"count_tests.py: RESULTS_DIR and TESTLOG come in pairs\n{__doc__}", file=sys.stderr)
        return 2
    pairs = list(zip(positional[0::2], positional[1::2]))

    tally = Tally()
    for results_dir, testlog in pairs:
        reported, programs_with_failures = count_xml_dir(results_dir, tally)
        if testlog != "-":
            count_meson_log(testlog, reported, programs_with_failures, label_of(results_dir), tally)
    for results_dir in xml_dirs:
        count_xml_dir(results_dir, tally)
    for path in checks:
        count_checks(path, tally)
    if tally.skipped:
        print(f"({tally.skipped} skipped: each prints why)")
    print(f"{tally.passed} passed, {tally.failed} failed")
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
