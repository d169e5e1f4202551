#!/usr/bin/python3
"""Sentinel in a container that denies the NUMA system calls (docs/tiering.md, "Containers"): schedule_loop
runs under libsentinel.so in run mode at 20% inside seccomp_run, which denies some NUMA calls with EPERM as
Docker's default profile does without CAP_SYS_NICE. With every call denied, and with only move_pages denied:
- the loop's checksum and status are those of a run without the library (and without the filter);
- stderr has exactly one line from Sentinel, naming the refused calls, and saying it is a dry run;
- the dump says why nothing moved: the TIERING record is a dry run flagged NUMA_DENIED, numa_calls_denied
  names the same calls, and no byte was migrated.

env: SENTINEL_PRELOAD, SENTINEL_BUILD_ROOT. Exit 0 pass, 1 fail, 77 without a second node."""
import json
import os
import subprocess
import sys
import tempfile

CALL_BITS = {"mbind": 1, "set_mempolicy": 2, "get_mempolicy": 4, "move_pages": 8, "migrate_pages": 16}


def checksum_of(stdout):
    return next((line.split("checksum")[-1].strip() for line in stdout.splitlines() if "checksum" in line), None)


def main():
    build, lib = os.environ["SENTINEL_BUILD_ROOT"], os.environ["SENTINEL_PRELOAD"]
    if not os.path.exists("/sys/devices/system/node/node1"):
        print("SKIP: no second NUMA node")
        return 77
    loop = [os.path.join(build, "tests", "guest", "schedule_loop"), "--steps", "16"]
    seccomp = os.path.join(build, "tests", "guest", "seccomp_run")
    view = os.path.join(build, "tools", "sentinel-view")
    ref = subprocess.run(loop, capture_output=True, text=True, timeout=600)
    want = checksum_of(ref.stdout)
    if ref.returncode or not want:
        print(f"FAIL: the loop alone: status {ref.returncode}")
        return 1
    failures = []
    for denied in ("all", "move_pages"):
        names = list(CALL_BITS) if denied == "all" else [denied]
        with tempfile.TemporaryDirectory() as tmp:
            env = {k: v for k, v in os.environ.items() if not k.startswith("SENTINEL_")}
            env.update(LD_PRELOAD=lib, SENTINEL_MODE="run", SENTINEL_FAST_BYTES="20%",
                       SENTINEL_DUMP=os.path.join(tmp, "d.prof"))
            r = subprocess.run([seccomp, denied, "--"] + loop, env=env, capture_output=True, text=True, timeout=600)
            lines = [x for x in r.stderr.splitlines() if x.startswith("sentinel:")]
            what = f"{denied} denied"
            print(f"{what}: status {r.returncode}, stderr {lines}")
            if r.returncode != 0 or checksum_of(r.stdout) != want:
                failures.append(f"{what}: status {r.returncode}, checksum {checksum_of(r.stdout)} (want {want})")
            if len(lines) != 1 or not all(n in lines[0] for n in names) or "dry run" not in lines[0]:
                failures.append(f"{what}: expected one line naming {names} and the dry run, got {lines}")
            s = subprocess.run([view, "summary", "--json", os.path.join(tmp, "d.prof")], capture_output=True, text=True)
            if s.returncode != 0:
                failures.append(f"{what}: sentinel-view: {s.stderr.strip()}")
                continue
            j = json.loads(s.stdout)
            t = j.get("tiering") or {}
            mask = sum(CALL_BITS[n] for n in names)
            if not t.get("dry_run") or t.get("numa_calls_denied") != mask or not (t.get("flags", 0) & 0x100):
                failures.append(f"{what}: the dump says dry_run {t.get('dry_run')}, numa_calls_denied "
                                f"{t.get('numa_calls_denied')} (want {mask}), flags {t.get('flags')}")
            if j.get("migrated_bytes"):
                failures.append(f"{what}: {j.get('migrated_bytes')} bytes migrated")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
