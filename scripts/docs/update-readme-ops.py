#!/usr/bin/env python3
"""Regenerates the README's supported-op list from `tessel-compile --list-ops`.

Usage: update-readme-ops.py TESSEL_COMPILE [--check]
With --check, exits 1 if the README is out of date instead of rewriting it
(a lit test runs this, so the list can never drift from the code).
"""
import pathlib
import re
import subprocess
import sys

BEGIN, END = "<!-- ops:begin -->", "<!-- ops:end -->"


def main():
    compiler = sys.argv[1]
    check = "--check" in sys.argv[2:]
    readme = pathlib.Path(__file__).resolve().parents[2] / "README.md"
    ops = subprocess.run([compiler, "--list-ops"], check=True, capture_output=True,
                         text=True).stdout.split()
    block = f"{BEGIN}\n{len(ops)} ONNX op types: " + ", ".join(f"`{op}`" for op in ops) + f"\n{END}"
    text = readme.read_text()
    updated = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), block, text, flags=re.S)
    if BEGIN not in text:
        sys.exit("README.md has no ops:begin/ops:end markers")
    if check:
        if updated != text:
            sys.exit("README.md's op list is stale: run scripts/docs/update-readme-ops.py "
                     "build/tools/tessel-compile")
        return
    readme.write_text(updated)


if __name__ == "__main__":
    main()
