#!/usr/bin/env python3
"""Lifetime classes as a user reads them: tests/steps/step_output.py keeps a step's 512 KiB output in a
variable until the next step replaces it. Profiled (profile mode, 40 steps: its lock is confirmed after
64 allocations), that output's identity is
"next-step" (SENTINEL_LIFE_NEXT_STEP, 4: freed in the step after its birth, docs/format.md), not
persistent; no identity born inside a step is persistent (nothing the loop allocates lives longer);
the planner accepts the profile (`sentinel-view plan --fast-bytes 20%`); the result is bit-identical.

usage: check_lifetimes.py      (env: SENTINEL_LIB, SENTINEL_VIEW)
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import torch_builds  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
import sentinel_dump  # noqa: E402  (tests/lib)

LIFE_PERSISTENT, LIFE_NEXT_STEP = 3, 4
OUTPUT_BYTES = 256 * 512 * 4


def main():
    python, lib, view = torch_builds.checker_setup([])
    env = torch_builds.plain_env()
    cmd = [python, os.path.join(HERE, "step_output.py"), "40"]
    plain = torch_builds.run_or_exit(cmd, env, 300)
    failures = []
    with tempfile.TemporaryDirectory(prefix="sentinel-life.") as tmp:
        dump = os.path.join(tmp, "p.prof")
        got = torch_builds.run_or_exit(cmd, dict(env, LD_PRELOAD=lib, SENTINEL_MODE="profile", SENTINEL_DUMP=dump),
                                       300)
        if plain.stdout != got.stdout:
            failures.append(f"the result differs: {plain.stdout!r} vs {got.stdout!r}")
        ids = sentinel_dump.read(dump, only=["IDENTITIES"], view=view).get("IDENTITIES", [])
        inside = [i for i in ids if not i["flags"] & sentinel_dump.IDENTITY_OUTSIDE]
        outputs = [i for i in inside if i["size"] == OUTPUT_BYTES]
        print(f"{len(ids)} identities, {len(inside)} born in a step; of {OUTPUT_BYTES} B: "
              f"{[(i['id'], i['lifetime'], i['birth_interval'], i['death_interval']) for i in outputs]}")
        if not any(i["lifetime"] == LIFE_NEXT_STEP for i in outputs):
            failures.append("the step's output is not classed next-step")
        persistent = [i["id"] for i in inside if i["lifetime"] == LIFE_PERSISTENT]
        if persistent:
            failures.append(f"identities born in a step classed persistent: {persistent}")
        p = subprocess.run([view, "plan", "--fast-bytes", "20%", dump], capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            failures.append(f"sentinel-view plan: status {p.returncode}: {p.stderr.strip()}")
    return torch_builds.report(failures,
                               "the step's output is next-step, nothing born in a step is persistent, the plan is made")


if __name__ == "__main__":
    sys.exit(main())
