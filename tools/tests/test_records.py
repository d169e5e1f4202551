#!/usr/bin/env python3
"""sentinel-view records and filter, and tests/lib/sentinel_dump.py on top of them.

usage: test_records.py --view V --make-dumps M --source SOURCE_ROOT

Checks that `records` prints every record type with the values the test dumps were built with, that the
entries carry exactly the field names of docs/format.md's generated tables (the format's table), that
older entries read with their documented defaults, that broken dumps fail with one line naming the
offset, and that `filter` keeps records byte for byte under a new END.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def doc_fields(source):
    """{struct: [field names]} from docs/format.md's generated tables, reserved fields left out."""
    text = open(os.path.join(source, "docs", "format.md")).read()
    out = {}
    for name, body in re.findall(r"<!-- layout (\w+) -->\n(.*?)<!-- end layout -->", text, re.S):
        if name == "sizes":
            continue
        fields = re.findall(r"^\| \d+ \| `\w+ (\w+)(?:\[\d+\])?` \| [\d.]+ \| (.*) \|$", body, re.M)
        out[name] = [f for f, meaning in fields if not meaning.startswith("reserved:")]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--view", required=True)
    ap.add_argument("--make-dumps", required=True)
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(a.source, "tests", "lib"))
    import sentinel_dump

    seeds = os.path.join(a.source, "tests", "fuzz", "seeds")
    fields = doc_fields(a.source)
    check(len(fields) == 16, f"docs/format.md has the 16 generated field tables ({len(fields)})")
    entry_struct = {"OBJECTS": "sentinel_object", "STEPS": "sentinel_step_entry", "IDENTITIES": "sentinel_identity",
                    "TOUCHES": "sentinel_touch", "GROUPS": "sentinel_group", "TIERING": "sentinel_tiering",
                    "MIGRATIONS": "sentinel_migration_entry", "MIGRATION_LOG": "sentinel_migration_batch",
                    "PLACEMENT": "sentinel_placement_entry", "DETECTION": "sentinel_detection",
                    "CRASH": "sentinel_crash"}

    with tempfile.TemporaryDirectory(prefix="sentinel-records-") as tmp:
        subprocess.run([a.make_dumps, tmp], check=True, capture_output=True)

        def read(path, **kw):
            return sentinel_dump.read(path, view=a.view, **kw)

        # A 1.0 dump of known contents (tests/fuzz/dump_builder.h, sample_dump()).
        d = read(os.path.join(tmp, "sample.prof"))
        check(d["file"]["major"] == 1 and d["file"]["minor"] == 0 and d["file"]["records"] == 12,
              "sample.prof: version 1.0, 12 records")
        check(d["PROCESS"]["pid"] == 4242 and d["PROCESS"]["argv"] == ["python3", "-c", 'print("hi")'],
              "sample.prof: PROCESS")
        check([c["name"] for c in d["CONFIG"]] == ["SENTINEL_MODE", "SENTINEL_MIN_BYTES", "SENTINEL_DUMP"],
              "sample.prof: CONFIG in file order")
        check([n["flags"] for n in d["TOPOLOGY"]["nodes"]] == [0, 3] and d["TOPOLOGY"]["slow_node"] == 1,
              "sample.prof: TOPOLOGY")
        check(len(d["MODULE"]) == 2 and d["MODULE"][0]["build_id"] == "01020304", "sample.prof: MODULE, de-duplicated")
        check([s["id"] for s in d["SITES"]] == [1, 2, 3] and d["SITES"][0]["frames"][1] == 0x7f0000000200,
              "sample.prof: SITES")
        sizes = [o["size"] for o in d["OBJECTS"]]
        check(sizes == [4096, 65536, 1048576, 8192, 131072, 4096], f"sample.prof: OBJECTS sizes {sizes}")
        check(d["OBJECTS"][1]["death_seq"] == 2**64 - 1 and d["OBJECTS"][5]["site"] == 2**32 - 1,
              "sample.prof: 64- and 32-bit maxima")
        check([m["seq"] for m in d["MARKS"]] == [1, 4], "sample.prof: MARKS")
        check(d["STATS"][0] == {"name": "tracked_allocations", "value": 6}, "sample.prof: STATS")
        check(d["STEPS"] == [] and d["PLAN"] == [], "sample.prof: no 1.1 or 1.2 records")

        # Every fixed-size entry carries the table's field names, on dumps with every record type.
        for name in ("tiered.prof", "loop.prof", "demo.prof"):
            d = read(os.path.join(tmp, name))
            for key, struct in entry_struct.items():
                if d[key]:
                    check(list(d[key][0]) == fields[struct], f"{name}: {key} entries have the fields of {struct}")
            for plan in d["PLAN"]:
                check(list(plan["header"]) == fields["sentinel_plan_header"] and
                      list(plan["trial"]) == fields["sentinel_plan_trial"] and
                      all(list(e) == fields["sentinel_plan_entry"] for e in plan["entries"]),
                      f"{name}: PLAN header, entries and trial have the table's fields")
        check(any(read(os.path.join(tmp, n))["TIERING"] for n in ("tiered.prof",)), "tiered.prof has TIERING")

        # 1.1 entries: the documented defaults (a 60-byte identity reads as a 1.1 one).
        for seed in ("profile.prof", "profile-wide.prof"):
            d = read(os.path.join(seeds, seed))
            ids = d["IDENTITIES"]
            check(ids and all(i["occurrence"] == sentinel_dump.NO_ORDINAL for i in ids),
                  f"{seed}: 1.1 identities read occurrence NO_ORDINAL")
            check(all(i["flags"] == (sentinel_dump.IDENTITY_OUTSIDE if i["ordinal"] == sentinel_dump.NO_ORDINAL
                                     else 0) for i in ids), f"{seed}: 1.1 identities' flags from their ordinal")
        d = read(os.path.join(seeds, "tiering-wide.prof"))
        check(d["PLACEMENT"] and d["PLACEMENT"][0]["steps"] == 5, "tiering-wide.prof: a 48-byte placement entry")
        check(d["COUNTERS"][-1]["phase"] == 4, "tiering-wide.prof: 1.1 COUNTERS take the PROFILE record's phase")

        # Broken dumps: exit 1, one line naming the file and the offset.
        for name in ("corrupt.prof", "truncated.prof", "empty.prof", "newer.prof"):
            path = os.path.join(tmp, name)
            r = subprocess.run([a.view, "records", path], capture_output=True, text=True)
            lines = r.stderr.strip().split("\n")
            check(r.returncode == 1 and r.stdout == "" and len(lines) == 1 and
                  re.fullmatch(rf"sentinel-view: {re.escape(path)}: offset \d+: .+", lines[0]) is not None,
                  f"records {name}: exit 1, one line with the offset")
            try:
                read(path)
                check(False, f"sentinel_dump.read({name}) raises DumpError")
            except sentinel_dump.DumpError as e:
                check("offset" in str(e), f"sentinel_dump.read({name}) raises DumpError with the offset")

        # --only, usage errors.
        d = read(os.path.join(tmp, "tiered.prof"), only=["STEPS", "PLAN"])
        check(sorted(d) == ["PLAN", "STEPS", "file"], "--only STEPS,PLAN prints those and the file")
        r = subprocess.run([a.view, "records", "--only", "NOPE", os.path.join(tmp, "tiered.prof")],
                           capture_output=True, text=True)
        check(r.returncode == 2 and "NOPE" in r.stderr, "--only with an unknown type: usage error")
        r = subprocess.run([a.view, "records", "--json", os.path.join(tmp, "loop.prof")], capture_output=True, text=True)
        check(r.returncode == 0 and json.loads(r.stdout)["file"]["records"] > 0, "--json is accepted")

        # filter: the kept records byte for byte, a new END.
        src, dst = os.path.join(tmp, "tiered.prof"), os.path.join(tmp, "kept.prof")
        keep = ["PROCESS", "STEPS", "PLAN", "PHASE_COUNTERS"]
        sentinel_dump.filter_records(src, dst, keep, view=a.view)
        full, kept = read(src), read(dst)
        check(kept["STEPS"] == full["STEPS"] and kept["PLAN"] == full["PLAN"] and
              kept["PROCESS"] == full["PROCESS"] and kept["COUNTERS"] == full["COUNTERS"],
              "filter: kept records read the same")
        check(kept["OBJECTS"] == [] and kept["SITES"] == [] and kept["TIERING"] == [], "filter: the others are gone")
        data, out = open(src, "rb").read(), open(dst, "rb").read()
        check(out[:24] == data[:24], "filter: the file header is copied")
        r = subprocess.run([a.view, "filter", "--keep", "STEPS", "-o", dst, os.path.join(tmp, "corrupt.prof")],
                           capture_output=True, text=True)
        check(r.returncode == 1 and "offset" in r.stderr, "filter of a broken dump: exit 1 with the offset")
        r = subprocess.run([a.view, "filter", "-o", dst, src], capture_output=True, text=True)
        check(r.returncode == 2, "filter without --keep: usage error")

    print(f"{len(FAILS)} failed" if FAILS else "all passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
