#!/usr/bin/python3
"""A training run that takes a snapshot of its dump while it runs on (sentinel_dump(), docs/format.md,
"Version 1.11").

usage: snapshot_run.py --preload LIBSENTINEL --view SENTINEL_VIEW [--python debian|venv|PATH]

A PyTorch MLP (mlp_loop.py) trains 30 steps and, after its 16th step, calls sentinel_dump(None) through
ctypes when the library is there, as a user would to look at a long run's profile before it ends. Run plainly and under the library
(run mode): the losses must be bit-identical, and the library must leave two dumps, the snapshot
(SENTINEL_DUMP's path with ".snap1") and the dump at exit. sentinel-view must read both; the snapshot must
say it is one, hold the steps found so far and the main phase's plan, and the dump at exit must not be a
snapshot and hold more steps. The same again with no call in the script: under
SENTINEL_SNAPSHOT_SIGNAL=USR1 the test sends the run SIGUSR1 once it has printed 16 steps, and a thread of
Sentinel's writes the snapshot while the run goes on (its steps then lie between the 13th and the 30th);
and once more with two DataLoader workers and the signal sent to the run's whole process group, as
`pkill -USR1 -f train.py` does: the workers take it and run on. Last, SENTINEL_SNAPSHOT_EVERY=1 and a run
killed by SIGKILL (as the OOM killer ends one) once a periodic snapshot (".latest") was written after its
16th step: that snapshot is all that is left, readable, with its steps and plan, and the losses
printed until then are the plain run's.
Exit status: 0 pass, 1 fail, 77 skip (no torch)."""

import argparse
import glob
import signal
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.dont_write_bytecode = True
import torch_builds  # noqa: E402
from signal_end import Failure, run_until  # noqa: E402  (tests/e2e)

TRAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mlp_loop.py")
SNAPSHOT_AFTER = 16  # steps made when the snapshot is taken


def summary(view, path):
    r = subprocess.run([view, "summary", "--json", path], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"snapshot_run: FAIL: sentinel-view summary {path} exited {r.returncode}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def run(python, env, signal_after=None, to_group=False):
    """Trains; with signal_after sends SIGUSR1 once that many steps were printed, to the process or (to_group) to
    its whole process group (signal_end.run_until). Returns (status, stdout, stderr)."""
    status, _, err, out = run_until([python, TRAIN], env, signal.SIGUSR1 if signal_after else None, signal_after or 0,
                                    to_group=to_group)
    return status, out, err


def written_after_step(where):
    """A ready() for run_until: true once a periodic snapshot in `where` was written after the first time
    it was asked (the step the kill waits for), so that it holds the lock, the profiled steps and the plan."""
    asked = []

    def ready():
        if not asked:
            asked.append(time.time())
        return any(os.stat(f).st_mtime > asked[0] for f in glob.glob(os.path.join(where, "*.latest")))
    return ready


def check_killed(python, preload, view, tmp, plain_losses, failures):
    """SENTINEL_SNAPSHOT_EVERY=1, then SIGKILL: the periodic snapshot is the run's profile."""
    where = os.path.join(tmp, "SIGKILL")
    os.mkdir(where)
    env = dict(torch_builds.plain_env(), STEPS="0", LD_PRELOAD=preload,
               SENTINEL_DUMP=os.path.join(where, "sentinel-%e.%p.prof"), SENTINEL_SNAPSHOT_EVERY="1")
    try:
        status, losses, err, _ = run_until([python, TRAIN], env, signal.SIGKILL, SNAPSHOT_AFTER, timeout=240,
                                           ready=written_after_step(where))
    except Failure as e:
        failures.append(f"SIGKILL: no periodic snapshot after the 16th step: {e}")
        return
    files = sorted(os.listdir(where))
    print(f"snapshot_run: SIGKILL: status {status} after {len(losses)} steps, files {files}")
    if status != -signal.SIGKILL or not files:
        failures.append(f"SIGKILL: status {status}, not killed after a periodic snapshot\n{err[-1500:]}")
        return
    common = min(len(losses), len(plain_losses))
    if losses[:common] != plain_losses[:common]:
        failures.append(f"SIGKILL: the losses differ from the plain run's within the first {common} steps")
    if len(files) != 1 or not files[0].endswith(".prof.latest"):
        failures.append(f"SIGKILL: expected the periodic snapshot alone, found {files}")
        return
    snap = summary(view, os.path.join(where, files[0]))
    print(f"snapshot_run: SIGKILL: snapshot {snap.get('snapshot')}, {snap.get('steps')} steps, plan "
          f"{bool(snap.get('plan'))}")
    if snap.get("snapshot") is not True or (snap.get("steps") or 0) < SNAPSHOT_AFTER - 3 or not snap.get("plan"):
        failures.append(f"SIGKILL: the periodic snapshot: snapshot {snap.get('snapshot')}, {snap.get('steps')} "
                        f"steps, plan {bool(snap.get('plan'))}")


def check_dumps(view, where, name, snap_steps, failures):
    """The dump at exit and its one snapshot in `where`: flags, steps and the plan."""
    finals = glob.glob(os.path.join(where, "*.prof"))
    snaps = glob.glob(os.path.join(where, "*.prof.snap*"))
    print(f"snapshot_run: {name}: dumps at exit {[os.path.basename(x) for x in finals]}, "
          f"snapshots {[os.path.basename(x) for x in snaps]}")
    if len(finals) != 1 or len(snaps) != 1 or snaps[0] != finals[0] + ".snap1":
        failures.append(f"{name}: expected one dump at exit and its .snap1 snapshot")
        return
    final, snap = summary(view, finals[0]), summary(view, snaps[0])
    print(f"snapshot_run: {name}: snapshot {snap.get('snapshot')}, {snap.get('steps')} steps, plan "
          f"{bool(snap.get('plan'))}; at exit snapshot {final.get('snapshot')}, {final.get('steps')} steps")
    if snap.get("snapshot") is not True or final.get("snapshot") is not False:
        failures.append(f"{name}: snapshot flags: snapshot {snap.get('snapshot')}, at exit {final.get('snapshot')}")
    if not snap_steps[0] <= (snap.get("steps") or 0) <= snap_steps[1]:
        failures.append(f"{name}: the snapshot has {snap.get('steps')} steps, expected {snap_steps[0]}-{snap_steps[1]}")
    if not snap.get("plan"):
        failures.append(f"{name}: the snapshot has no plan: the lock and the profiled steps came before it")
    if (final.get("steps") or 0) < 27 or final.get("ended_by_signal"):
        failures.append(f"{name}: the dump at exit has {final.get('steps')} steps of 30")


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
        plain_env = dict(torch_builds.plain_env(), STEPS="30")
        plain_out = {}
        for workers in ("0", "2"):
            status, plain_out[workers], err = run(python, dict(plain_env, SNAPSHOT_AT=str(SNAPSHOT_AFTER),
                                                               WORKERS=workers))
            if status != 0:
                failures.append(f"plain, {workers} workers: status {status}: {err[-1500:]}")
        # sentinel_dump(NULL) from the script; SIGUSR1 from outside, to the process, and to its process group
        # with DataLoader workers (they take it and run on)
        for name, extra, signal_after, to_group, snap_steps in (
                ("sentinel_dump", {"SNAPSHOT_AT": str(SNAPSHOT_AFTER)}, None, False, (SNAPSHOT_AFTER - 3, SNAPSHOT_AFTER)),
                ("SIGUSR1", {"SENTINEL_SNAPSHOT_SIGNAL": "USR1"}, SNAPSHOT_AFTER, False, (SNAPSHOT_AFTER - 3, 30)),
                ("SIGUSR1-group", {"SENTINEL_SNAPSHOT_SIGNAL": "USR1", "WORKERS": "2"}, SNAPSHOT_AFTER, True,
                 (SNAPSHOT_AFTER - 3, 30))):
            where = os.path.join(tmp, name)
            os.mkdir(where)
            env = dict(plain_env, LD_PRELOAD=args.preload, SENTINEL_DUMP=os.path.join(where, "sentinel-%e.%p.prof"),
                       **extra)
            status, out, err = run(python, env, signal_after, to_group)
            if status != 0:
                failures.append(f"{name}: status {status} under the library: {err[-1500:]}")
            if out != plain_out[extra.get("WORKERS", "0")]:
                failures.append(f"{name}: the output differs under the library (losses, or the snapshot failed):\n"
                                + out[-800:])
            check_dumps(args.view, where, name, snap_steps, failures)
        plain_losses = [ln.split()[2] for ln in plain_out["0"].splitlines() if ln.startswith("step ")]
        check_killed(python, args.preload, args.view, tmp, plain_losses, failures)
    for f in failures:
        print(f"snapshot_run: FAIL: {f}")
    if not failures:
        print("snapshot_run: ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
