#!/usr/bin/env python3
"""Check of a Sentinel dump (docs/format.md), used by the preload tests.

check_dump.py [options] DUMP

Reads the whole dump with sentinel-view (tests/lib/sentinel_dump.py: framing, magic, version, the CRC-32C of
each record, every record's contents, the END record and its count), checks that it is a 1.x dump of a
64-bit writer, then the conditions asked for:
  --kind K            count only objects of this kind (0 heap, 1 CUDA pinned host memory)
  --sizes A,B,...     each size must occur among the (selected) objects
  --min-count N       for each of --sizes, at least N objects of that size (default 1)
  --min-objects N     at least N (selected) objects
  --alive-size S      an object of size S (selected kind) must still be alive at dump time
  --flag S:F          an object of size S (selected kind) must have flag bits F set (1: freed by another
                      thread, 2: born from realloc); may repeat
  --view PATH         the sentinel-view to read with (default: $SENTINEL_VIEW, else build/tools/sentinel-view)
  --plan-costs S,M    at least one PLAN record, and every one made with these step costs (SENTINEL_STEP_COSTS,
                      ns per KiB: the header's slow_ns_per_kib and move_ns_per_kib)
  --plan-intervals-timed MS
                      at least one PLAN record, every one with a duration for each interval and the longest
                      at least MS milliseconds (the header's interval durations: timed on plain steps)
  --whatif-cut N      `sentinel-view whatif --cut-by-time --json DUMP` cuts at least N of the profile's intervals
                      by time (format 1.14's touch times, which some TOUCHES entry must hold)
  --stat NAME:MIN     the STATS record's counter NAME must be at least MIN; may repeat
  --summary           also run `sentinel-view summary --json DUMP`; its JSON must have objects, tracked_bytes
                      and sites, and its object count must equal the OBJECTS entries
Exit status 0 when everything holds; otherwise each problem is printed on one line.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import sentinel_dump  # noqa: E402  (tests/lib)

MAJOR = 1


def parse(path, view):
    """Returns (objects, process, problems); objects are dicts of the fields of struct sentinel_object,
    process the PROCESS record's (empty when absent)."""
    try:
        d = sentinel_dump.read(path, only=["OBJECTS", "PROCESS"], view=view)
    except sentinel_dump.DumpError as e:
        return [], {}, [str(e)]
    problems = []
    if d["file"]["major"] != MAJOR:
        problems.append("major version %d, expected %d" % (d["file"]["major"], MAJOR))
    if d["file"]["pointer_size"] != 8:
        problems.append("pointer size %d" % d["file"]["pointer_size"])
    return d["OBJECTS"], d.get("PROCESS") or {}, problems


def check_plan_intervals(path, view, longest_ms):
    """Problems with the PLAN records' interval durations: an interval without one, or none as long as
    longest_ms (a stretch the program spends allocating nothing belongs to the interval it follows)."""
    try:
        plans = sentinel_dump.read(path, only=["PLAN"], view=view).get("PLAN") or []
    except sentinel_dump.DumpError as e:
        return [str(e)]
    if not plans:
        return ["no PLAN record"]
    problems = []
    for p in plans:
        ms = [ns / 1e6 for ns in p.get("interval_ns") or []]
        print("PLAN of phase %s: interval durations %s ms" % (p["header"].get("phase"), [round(x, 2) for x in ms]))
        if not ms or min(ms) <= 0:
            problems.append("PLAN of phase %s: an interval without a duration: %s" % (p["header"].get("phase"), ms))
        elif max(ms) < longest_ms:
            problems.append("PLAN of phase %s: the longest interval lasts %.2f ms, expected at least %.2f"
                            % (p["header"].get("phase"), max(ms), longest_ms))
    return problems


def check_whatif_cut(path, view, want):
    """Problems with the touch times and the cut by time: no TOUCHES entry with a time, or fewer than `want`
    intervals cut by `sentinel-view whatif --cut-by-time`."""
    try:
        touches = sentinel_dump.read(path, only=["TOUCHES"], view=view).get("TOUCHES") or []
    except sentinel_dump.DumpError as e:
        return [str(e)]
    timed = [t for t in touches if t.get("time_end", 0) > t.get("time_begin", 0)]
    print("TOUCHES: %d entries, %d with times" % (len(touches), len(timed)))
    if not timed:
        return ["no TOUCHES entry says when in its interval it was made (time_begin, time_end)"]
    r = subprocess.run([sentinel_dump.view_path(view), "whatif", "--cut-by-time", "--json", path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return ["whatif --cut-by-time exited %d: %s" % (r.returncode, r.stderr.strip()[:300])]
    j = json.loads(r.stdout)
    print("whatif --cut-by-time: %s of %s intervals cut, %s in all" % (j.get("intervals_cut"), j.get("profiled_intervals"),
                                                                       j.get("intervals")))
    if (j.get("intervals_cut") or 0) < want or j.get("intervals", 0) <= j.get("profiled_intervals", 0):
        return ["whatif --cut-by-time cut %s intervals, expected at least %d" % (j.get("intervals_cut"), want)]
    return []


def check_plan_costs(path, view, want):
    """Problems with the PLAN records' step costs (format 1.4): none, or other than `want` [slow, move]."""
    try:
        plans = sentinel_dump.read(path, only=["PLAN"], view=view).get("PLAN") or []
    except sentinel_dump.DumpError as e:
        return [str(e)]
    got = [[p["header"]["slow_ns_per_kib"], p["header"]["move_ns_per_kib"]] for p in plans]
    print("PLAN step costs: %s" % got)
    if not got:
        return ["no PLAN record"]
    return ["PLAN step costs %s, expected %s" % (g, want) for g in got if g != want]


def check_stats(path, view, specs):
    """Problems with the STATS record's named counters: each NAME:MIN of `specs` must be at least MIN."""
    try:
        records = sentinel_dump.read(path, only=["STATS"], view=view).get("STATS") or []
    except sentinel_dump.DumpError as e:
        return [str(e)]
    stats = {e["name"]: e["value"] for e in records}
    problems = []
    for spec in specs:
        name, low = spec.rsplit(":", 1)
        if name not in stats:
            problems.append("STATS has no %s" % name)
            continue
        print("STATS %s = %d" % (name, stats[name]))
        if stats[name] < int(low):
            problems.append("STATS %s is %d, expected at least %s" % (name, stats[name], low))
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--kind", type=int)
    ap.add_argument("--sizes", default="")
    ap.add_argument("--min-count", type=int, default=1)
    ap.add_argument("--min-objects", type=int, default=0)
    ap.add_argument("--alive-size", type=int)
    ap.add_argument("--flag", action="append", default=[])
    ap.add_argument("--view")
    ap.add_argument("--summary", action="store_true")
    ap.add_argument("--plan-costs")
    ap.add_argument("--plan-intervals-timed", type=float)
    ap.add_argument("--whatif-cut", type=int)
    ap.add_argument("--stat", action="append", default=[])
    ap.add_argument("--signal", type=int, help="the signal the PROCESS record says ended the process (0: none)")
    ap.add_argument("--crash", type=int, help="the signal of the dump's CRASH record, with a symbolized stack "
                    "naming FUNCTION (--crash-frame); 0: no CRASH record")
    ap.add_argument("--crash-frame", default="", help="a function the CRASH record's stack must name")
    ap.add_argument("--snapshot-by-name", action="store_true",
                    help="the PROCESS record marks a snapshot exactly when the file name ends in .snapN or .latest")
    ap.add_argument("--no-parent-mark", action="store_true",
                    help="the dump's parent process (its ppid) left no mark of its children's dumps behind")
    a = ap.parse_args()

    objects, process, problems = parse(a.dump, a.view)
    if a.signal is not None:
        flags = process.get("flags") or 0
        got = (flags >> 8) & 0xFF if flags & 0x2 else 0  # SENTINEL_PROCESS_ENDED_BY_SIGNAL, its number
        print("ended by signal %d" % got)
        if got != a.signal:
            problems.append("PROCESS flags 0x%x: ended by signal %d, expected %d" % (flags, got, a.signal))
    if a.crash is not None:
        view = sentinel_dump.view_path(a.view)
        r = subprocess.run([view, "summary", "--json", a.dump], capture_output=True, text=True)
        crash = json.loads(r.stdout).get("crash") if r.returncode == 0 else None
        print("crash: %s" % crash)
        if r.returncode != 0:
            problems.append("%s summary --json exited %d: %s" % (view, r.returncode, r.stderr.strip()[:300]))
        elif not a.crash and crash is not None:
            problems.append("a CRASH record where none belongs: %s" % crash)
        elif a.crash and (crash is None or crash["signal"] != a.crash):
            problems.append("the CRASH record is %s, expected signal %d" % (crash, a.crash))
        elif a.crash and not any(re.match(re.escape(a.crash_frame) + r"[ .+]", f) for f in crash["frames"]):
            problems.append("the CRASH record's stack does not name %s: %s" % (a.crash_frame, crash["frames"]))
    if a.snapshot_by_name:
        want = re.search(r"\.(snap[0-9]+|latest)$", a.dump) is not None
        got = bool((process.get("flags") or 0) & 0x4)  # SENTINEL_PROCESS_SNAPSHOT
        print("snapshot: %s (by its name: %s)" % (got, want))
        if got != want:
            problems.append("PROCESS flags 0x%x: snapshot %s, but the file name says %s" % (process.get("flags") or 0, got, want))
    if a.no_parent_mark:
        # A child under Sentinel that writes its dump leaves its parent a mark, which the parent reads and
        # removes at exit (src/base/lineage.h). By the time the dump is checked the parent has ended.
        left = [m for d in ("/dev/shm", "/tmp") for m in glob.glob(f"{d}/sentinel-children-dumped.{process.get('ppid')}.*")]
        print("marks left by the parent, pid %s: %d" % (process.get("ppid"), len(left)))
        if left:
            problems.append("the parent left its children's dump mark behind: %s" % ", ".join(left))
    kinds = {}
    for o in objects:
        kinds[o["kind"]] = kinds.get(o["kind"], 0) + 1
    sel = [o for o in objects if a.kind is None or o["kind"] == a.kind]
    print("%d objects (by kind: %s), %d selected" % (
        len(objects), ", ".join("%d: %d" % kv for kv in sorted(kinds.items())) or "none", len(sel)))
    if len(sel) < a.min_objects:
        problems.append("%d objects selected, expected at least %d" % (len(sel), a.min_objects))
    for s in [int(x) for x in a.sizes.split(",") if x]:
        n = sum(1 for o in sel if o["size"] == s)
        if n < a.min_count:
            problems.append("%d objects of size %d%s, expected at least %d" % (
                n, s, "" if a.kind is None else " and kind %d" % a.kind, a.min_count))
    if a.alive_size is not None:
        if not any(o["size"] == a.alive_size and o["death_ns"] == 0 for o in sel):
            problems.append("no live object of size %d at dump time" % a.alive_size)
    for spec in a.flag:
        size, bits = (int(x, 0) for x in spec.split(":"))
        if not any(o["size"] == size and (o["flags"] & bits) == bits for o in sel):
            problems.append("no object of size %d with flags 0x%x (flags seen: %s)" % (
                size, bits, sorted({o["flags"] for o in sel if o["size"] == size})))
    for o in sel:
        if o["death_ns"] != 0 and o["death_ns"] < o["birth_ns"]:
            problems.append("object of size %d dies before it is born" % o["size"])
            break

    if a.plan_costs:
        problems += check_plan_costs(a.dump, a.view, [int(x) for x in a.plan_costs.split(",")])
    if a.plan_intervals_timed is not None:
        problems += check_plan_intervals(a.dump, a.view, a.plan_intervals_timed)
    if a.whatif_cut is not None:
        problems += check_whatif_cut(a.dump, a.view, a.whatif_cut)

    if a.stat:
        problems += check_stats(a.dump, a.view, a.stat)

    if a.summary:
        view = sentinel_dump.view_path(a.view)
        r = subprocess.run([view, "summary", "--json", a.dump], capture_output=True, text=True)
        if r.returncode != 0:
            problems.append("%s summary --json exited %d: %s" % (view, r.returncode, r.stderr.strip()[:300]))
        else:
            try:
                j = json.loads(r.stdout)
                missing = [k for k in ("objects", "tracked_bytes", "sites") if k not in j]
                if missing:
                    problems.append("sentinel-view JSON lacks %s" % ", ".join(missing))
                else:
                    print("sentinel-view: objects %s, tracked_bytes %s, sites %s" % (
                        j["objects"], j["tracked_bytes"], j["sites"]))
                    if isinstance(j["objects"], int) and j["objects"] != len(objects):
                        problems.append("sentinel-view summary counts %d objects, OBJECTS has %d" % (
                            j["objects"], len(objects)))
            except ValueError as e:
                problems.append("sentinel-view output is not JSON: %s" % e)

    for p in problems:
        print("problem: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
