#!/usr/bin/python3
"""A training run that takes a snapshot of its dump while it runs on (sentinel_dump(), docs/format.md,
"Version 1.11").

usage: snapshot_run.py --preload LIBSENTINEL --view SENTINEL_VIEW [--python debian|venv|PATH]

A PyTorch MLP trains 30 steps and, after step 15, calls sentinel_dump(None) through ctypes when the library
is there, as a user would to look at a long run's profile before it ends. Run plainly and under the library
(run mode): the losses must be bit-identical, and the library must leave two dumps, the snapshot
(SENTINEL_DUMP's path with ".snap1") and the dump at exit. sentinel-view must read both; the snapshot must
say it is one, hold the steps found so far and the main phase's plan, and the dump at exit must not be a
snapshot and hold more steps. Exit status: 0 pass, 1 fail, 77 skip (no torch)."""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.dont_write_bytecode = True
import torch_builds  # noqa: E402

TRAIN = r"""
import ctypes, torch
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512),
                            torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x, y = torch.randn(128, 512), torch.randint(0, 10, (128,))
lib = ctypes.CDLL(None, use_errno=True)
for step in range(30):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    print(f"step {step} {loss.item().hex()}", flush=True)
    if step == 15 and hasattr(lib, "sentinel_dump"):
        lib.sentinel_dump.argtypes = [ctypes.c_char_p]
        if lib.sentinel_dump(None) != 0:
            print(f"sentinel_dump failed: errno {ctypes.get_errno()}", flush=True)
"""
SNAPSHOT_AFTER = 16  # steps made when the snapshot is taken


def summary(view, path):
    r = subprocess.run([view, "summary", "--json", path], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"snapshot_run: FAIL: sentinel-view summary {path} exited {r.returncode}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preload", required=True)
    ap.add_argument("--view", required=True)
    ap.add_argument("--python", default="debian",
                    help="debian (/usr/bin/python3), venv (PyTorch 2.x, tests/torch_builds.py) or a path")
    args = ap.parse_args()
    python = torch_builds.resolve(args.python)
    why = torch_builds.skip_reason(python)
    if why:
        print(f"snapshot_run: skipped: {why}")
        return 77
    failures = []
    with tempfile.TemporaryDirectory(prefix="sentinel-snapshot.") as tmp:
        script = os.path.join(tmp, "train.py")
        with open(script, "w") as f:
            f.write(TRAIN)
        outs = {}
        for preload in (False, True):
            env = torch_builds.plain_env()
            if preload:
                env.update(LD_PRELOAD=args.preload, SENTINEL_DUMP=os.path.join(tmp, "sentinel-%e.%p.prof"))
            p = subprocess.run([python, script], env=env, capture_output=True, text=True, timeout=600)
            if p.returncode != 0:
                failures.append(f"{'under the library' if preload else 'plain'}: status {p.returncode}: {p.stderr[-1500:]}")
            outs[preload] = p.stdout
        if outs[False] != outs[True]:
            failures.append("the output differs under the library (losses, or sentinel_dump failed):\n" + outs[True][-800:])
        finals = glob.glob(os.path.join(tmp, "*.prof"))
        snaps = glob.glob(os.path.join(tmp, "*.prof.snap*"))
        print(f"snapshot_run: dumps at exit {[os.path.basename(x) for x in finals]}, "
              f"snapshots {[os.path.basename(x) for x in snaps]}")
        if len(finals) != 1 or len(snaps) != 1 or not snaps[0].endswith(".snap1") or snaps[0] != finals[0] + ".snap1":
            failures.append("expected one dump at exit and its .snap1 snapshot")
        else:
            final, snap = summary(args.view, finals[0]), summary(args.view, snaps[0])
            print(f"snapshot_run: snapshot {snap.get('snapshot')}, {snap.get('steps')} steps, plan "
                  f"{bool(snap.get('plan'))}; at exit snapshot {final.get('snapshot')}, {final.get('steps')} steps")
            if snap.get("snapshot") is not True or final.get("snapshot") is not False:
                failures.append(f"snapshot flags: snapshot {snap.get('snapshot')}, at exit {final.get('snapshot')}")
            if not SNAPSHOT_AFTER - 3 <= (snap.get("steps") or 0) <= SNAPSHOT_AFTER:
                failures.append(f"the snapshot has {snap.get('steps')} steps, {SNAPSHOT_AFTER} were made")
            if not snap.get("plan"):
                failures.append("the snapshot has no plan: the lock and the profiled steps came before it")
            if (final.get("steps") or 0) < 27 or final.get("ended_by_signal"):
                failures.append(f"the dump at exit has {final.get('steps')} steps of 30")
    for f in failures:
        print(f"snapshot_run: FAIL: {f}")
    if not failures:
        print("snapshot_run: ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
