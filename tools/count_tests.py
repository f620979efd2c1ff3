#!/usr/bin/env python3
"""Counts GoogleTest cases from the XML reports and prints "N passed, N failed".

A test program listed in Meson's log that failed without writing a report (a crash,
a timeout) counts as one failed case. Exits 1 when anything failed.
Usage: count_tests.py RESULTS_DIR MESON_TESTLOG_JSON
"""
import json
import os
import sys
import xml.etree.ElementTree as ET


def main():
    results_dir, testlog = sys.argv[1], sys.argv[2]
    passed = failed = skipped = 0
    reported = set()
    programs_with_failures = set()
    for name in sorted(os.listdir(results_dir)) if os.path.isdir(results_dir) else []:
        if not name.endswith(".xml"):
            continue
        program = name[:-4]
        try:
            root = ET.parse(os.path.join(results_dir, name)).getroot()
        except ET.ParseError:
            continue  # a half-written report: the program died; Meson's log counts it
        reported.add(program)
        for case in root.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
                programs_with_failures.add(program)
                print(f"FAILED {program}: {case.get('classname')}.{case.get('name')}")
            elif case.get("result") == "skipped" or case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
    if os.path.exists(testlog):
        with open(testlog) as f:
            for line in f:
                entry = json.loads(line)
                if entry.get("result") in ("OK", "SKIP", "EXPECTEDFAIL"):
                    continue
                if entry.get("name") in programs_with_failures:
                    continue  # its failed cases are counted already
                # Died without a report, or exited non-zero although its cases passed.
                failed += 1
                print(f"FAILED {entry.get('name')}: {entry.get('result')}")
    if skipped:
        print(f"({skipped} skipped: each prints why)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
