#!/usr/bin/python3
"""Training driver for scripts/bench-profile: times every step, never marks steps.

usage: profile_driver.py MODEL --steps N --out RESULT.json

Trains one of tests/e2e/e2e_models.py's PyTorch models (mlp, cnn, lstm, transformer) for N steps and
writes RESULT.json:
  {"model", "steps", "sentinel": null or {"mode", "version"},
   "step_seq":  [tracked allocations made before each step started, and once more after the last],
   "step_mono_ns": [CLOCK_MONOTONIC at each step start, and at the end],
   "step_s":    [wall seconds of each step (time.perf_counter)],
   "step_cpu_s": [CPU seconds of the main thread in each step (time.thread_time)],
   "step_minflt": [minor page faults of the main thread in each step (getrusage RUSAGE_THREAD)],
   "losses": [float.hex()]}
It never calls sentinel_step(): the runtime's step detector has to find the steps on its own. The
counters come from sentinel_get_stats() through ctypes (all zero without the library), so that the
detector's step starts (STEPS start_seq in the dump) can be matched to this loop's steps.
"""
import argparse
import ctypes
import json
import os
import resource
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'e2e'))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'lib'))

import e2e_models  # noqa: E402
import sentinel_ctypes  # noqa: E402  (tests/lib)


def sentinel_info():
    """{"mode", "version"} of the loaded library, or None without it."""
    me = ctypes.CDLL(None)
    try:
        mode, version = me.sentinel_mode, me.sentinel_version
    except AttributeError:
        return None
    mode.restype = version.restype = ctypes.c_char_p
    return {'mode': mode().decode(), 'version': version().decode()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('model', choices=e2e_models.MODELS)
    ap.add_argument('--steps', type=int, default=20)
    ap.add_argument('--out', required=True)
    args = ap.parse_args()

    info = sentinel_info()
    seq = sentinel_ctypes.allocation_clock()  # reads a fixed ctypes struct: no tracked allocation

    model, opt, batches, loss_fn = e2e_models.build(args.model)
    n = args.steps
    seqs, monos, walls, cpus, losses = [0] * (n + 1), [0] * (n + 1), [0.0] * (n + 1), [0.0] * (n + 1), []
    faults = [0] * (n + 1)
    for step in range(n):
        seqs[step] = seq()
        faults[step] = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
        monos[step] = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        cpus[step] = time.thread_time()
        walls[step] = time.perf_counter()
        losses.append(e2e_models.train_step(model, opt, batches[step % len(batches)], loss_fn))
    walls[n] = time.perf_counter()
    cpus[n] = time.thread_time()
    monos[n] = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    seqs[n] = seq()
    faults[n] = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    result = {
        'model': args.model, 'steps': n, 'sentinel': info,
        'step_seq': seqs, 'step_mono_ns': monos,
        'step_s': [b - a for a, b in zip(walls, walls[1:])],
        'step_cpu_s': [b - a for a, b in zip(cpus, cpus[1:])],
        'step_minflt': [b - a for a, b in zip(faults, faults[1:])],
        'losses': [float(x).hex() for x in losses],
    }
    with open(args.out, 'w') as f:
        json.dump(result, f)
        f.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
