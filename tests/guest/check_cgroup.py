#!/usr/bin/python3
"""The auto budget honours the memory cgroup (docs/tiering.md, "Processes, containers and limits"): in a
cgroup v2 group whose memory.max leaves less than the fast node's free memory, schedule_loop runs under
libsentinel.so with SENTINEL_FAST_BYTES=auto; the plan's budget must be at most 90% of what the group
allowed (memory.max minus its usage) and below 90% of the node's free memory, the checksum that of a run
without the library. Mounts cgroup2 at /sys/fs/cgroup when the guest has not.

env: SENTINEL_PRELOAD, SENTINEL_BUILD_ROOT. Exit 0 pass, 1 fail, 77 without a second node or cgroup2."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = "/sys/fs/cgroup"
LIMIT = 256 << 20


def checksum_of(stdout):
    return next((line.split("checksum")[-1].strip() for line in stdout.splitlines() if "checksum" in line), None)


def node0_free():
    for line in open("/sys/devices/system/node/node0/meminfo"):
        if "MemFree:" in line:
            return int(line.split()[-2]) * 1024
    return 0


def enter_group():
    """A group with memory.max = LIMIT holding this process (its children follow)."""
    if not os.path.exists(os.path.join(ROOT, "cgroup.controllers")):
        os.makedirs(ROOT, exist_ok=True)
        if subprocess.run(["mount", "-t", "cgroup2", "none", ROOT]).returncode != 0:
            return "cannot mount cgroup2"
    if "memory" not in open(os.path.join(ROOT, "cgroup.controllers")).read().split():
        return "no memory controller"
    with open(os.path.join(ROOT, "cgroup.subtree_control"), "w") as f:
        f.write("+memory")
    group = os.path.join(ROOT, "sentinel-limit")
    os.makedirs(group, exist_ok=True)
    with open(os.path.join(group, "memory.max"), "w") as f:
        f.write(str(LIMIT))
    with open(os.path.join(group, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))
    return None


def main():
    build, lib = os.environ["SENTINEL_BUILD_ROOT"], os.environ["SENTINEL_PRELOAD"]
    if not os.path.exists("/sys/devices/system/node/node1"):
        print("SKIP: no second NUMA node")
        return 77
    loop = [os.path.join(build, "tests", "guest", "schedule_loop"), "--steps", "16"]
    view = os.path.join(build, "tools", "sentinel-view")
    want = checksum_of(subprocess.run(loop, capture_output=True, text=True, timeout=600).stdout)
    free = node0_free()
    why = enter_group()
    if why:
        print(f"SKIP: {why}")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SENTINEL_")}
        env.update(LD_PRELOAD=lib, SENTINEL_MODE="run", SENTINEL_FAST_BYTES="auto", SENTINEL_TRIAL_STEPS="0",
                   SENTINEL_DUMP=os.path.join(tmp, "d.prof"))
        r = subprocess.run(loop, env=env, capture_output=True, text=True, timeout=600)
        j = json.loads(subprocess.run([view, "summary", "--json", os.path.join(tmp, "d.prof")], capture_output=True,
                                      text=True).stdout)
    budget = j.get("fast_budget_bytes") or 0
    print(f"node 0 free {free >> 20} MiB, memory.max {LIMIT >> 20} MiB, plan budget {budget / 2**20:.1f} MiB, "
          f"status {r.returncode}")
    failures = []
    if r.returncode or checksum_of(r.stdout) != want:
        failures.append(f"status {r.returncode}, checksum {checksum_of(r.stdout)} (want {want})")
    if not 0 < budget <= LIMIT * 0.9:
        failures.append(f"budget {budget} is not within 90% of memory.max ({LIMIT})")
    if budget >= free * 0.9:
        failures.append(f"budget {budget} is not below 90% of the node's free memory ({free})")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
