#!/usr/bin/python3
"""Compares two engine files by content, across engine format versions.

    scripts/dev/diff-engines.py A.tsl B.tsl --schema-a A.fbs --schema-b B.fbs

Each file's FlatBuffer is dumped to JSON by flatc with its own schema (every
field, defaults included), tiers are normalized to their names (format 4
stores them as the schema's Tier enum, `tc_sm70`; formats 2 and 3 as strings,
`tc-sm70`), the format version is set aside, and the JSON and the constants
blobs are compared. Exit 0 when the engines hold the same content, 1 with the
first differences otherwise. For a change of the format itself, where
scripts/dev/compare-engines.sh's byte comparison cannot hold.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile


def load(path, schema, work):
    data = open(path, "rb").read()
    (_, version, _, payload_offset, payload_size, constants_offset, constants_size, _,
     _) = struct.unpack("<8sIIQQQQQQ", data[:64])
    payload = os.path.join(work, os.path.basename(path) + ".bin")
    with open(payload, "wb") as f:
        f.write(data[payload_offset:payload_offset + payload_size])
    subprocess.run(["flatc", "--json", "--strict-json", "--defaults-json", "--raw-binary",
                    "-o", work, schema, "--", payload], check=True)
    with open(payload[:-4] + ".json") as f:
        engine = json.load(f)
    constants = data[constants_offset:constants_offset + constants_size]
    return version, engine, constants


def tier_name(value):
    return value.replace("_", "-") if isinstance(value, str) else value


def normalize(engine):
    engine.pop("format_version", None)
    engine["tiers"] = [tier_name(t) for t in engine.get("tiers", [])]
    for step in engine.get("steps", []):
        for variant in step.get("variants", []):
            variant["tier"] = tier_name(variant.get("tier", "cpu"))
    return engine


def differences(a, b, path="", out=None, limit=10):
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            differences(a.get(key), b.get(key), path + "." + key, out, limit)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            differences(x, y, "%s[%d]" % (path, i), out, limit)
    elif a != b:
        out.append("%s: %s != %s" % (path, str(a)[:80], str(b)[:80]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--schema-a", required=True)
    ap.add_argument("--schema-b", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        os.makedirs(os.path.join(work, "a"))
        os.makedirs(os.path.join(work, "b"))
        va, ea, ca = load(args.a, args.schema_a, os.path.join(work, "a"))
        vb, eb, cb = load(args.b, args.schema_b, os.path.join(work, "b"))
    found = differences(normalize(ea), normalize(eb))
    if ca != cb:
        found.append("constants: %d bytes != %d bytes or different content" % (len(ca), len(cb)))
    if found:
        print("\n".join(found))
        return 1
    print("same content (format %d and %d)" % (va, vb))
    return 0


if __name__ == "__main__":
    sys.exit(main())
