#!/usr/bin/env python3
"""Fails when a doctest executable holds a test case that CTest would never run.

    tests/support/test_names.py UNIT_BINARY...

doctest_discover_tests registers each TEST_CASE as a CTest test running the binary with
--test-case=NAME. A name holding ';' is split by CMake into two tests whose filters match no test
case, so doctest runs nothing and CTest reports them passed. Each binary's test cases are listed
(--list-test-cases) and every name with ';' is printed, one line each, with a non-zero exit.
"""
import subprocess
import sys

unrunnable = []
for binary in sys.argv[1:]:
    listed = subprocess.run([binary, "--list-test-cases", "--no-intro", "--no-version"], capture_output=True,
                            text=True, check=True).stdout
    unrunnable += [f"{binary}: {name.strip()}" for name in listed.splitlines() if ";" in name]
for line in unrunnable:
    print(f"{line}\n  holds ';': CTest splits the name and runs nothing; write ',' instead")
sys.exit(1 if unrunnable else 0)
