"""What the CI checks of tools/ (check_layers.py, check_function_length.py, check_unity_names.py) share:
their PASS/FAIL lines printed and written for tools/count_tests.py, and their self-tests' comparison of
the failures a case got with those it should get."""


def report(lines, results_path):
    """Prints the lines; writes them to results_path too when one is given."""
    print("\n".join(lines))
    if results_path:
        with open(results_path, "w") as f:
            f.write("\n".join(lines) + "\n")


def expectation_failures(label, got, want, exact_count=False):
    """How the failures `got` miss `want` (texts each a failure must contain): none wanted and some got, a
    wanted text no failure says, and with exact_count another number of failures than wanted."""
    failures = []
    if not want and got:
        failures.append(f"{label}: expected no failure, got {got}")
    if exact_count and want and len(got) != len(want):
        failures.append(f"{label}: expected {len(want)} failures, got {got}")
    for text in want:
        if not any(text in g for g in got):
            failures.append(f"{label}: no failure says '{text}'; got {got}")
    return failures
