#!/usr/bin/python3
"""Deterministic PyTorch training run for Sentinel's end-to-end tests.

usage: torch_train.py {mlp,cnn,lstm,transformer} [--steps N] --out RESULT.json [--profile]

Trains MODEL for N steps (default 30) on fixed synthetic data and writes RESULT.json:
  {"model", "steps", "losses": [float.hex() per step], "params_sha256", "sentinel_loaded",
   "torch_version", "seconds_per_step" (mean wall time of steps 2..N; informative only)}
With --profile, every step runs under torch.profiler (profile_memory=True) and the result also holds
"profiled_allocations": one list per step (null for steps not profiled) of the sizes of the CPU tensor allocations the framework
made in that step (c10's allocator reports each one), the framework's own count of its allocations.
Profiling does not change the numerics, but a profiled run is never compared bit for bit.

If libsentinel.so is loaded, sentinel_step() is called at the start of every step.
"""

import argparse
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

import torch  # noqa: E402

import e2e_models  # noqa: E402
import result_json  # noqa: E402  (tests/lib)
import sentinel_ctypes  # noqa: E402  (tests/lib)


def profiled_step_allocations(fn):
    """Runs fn() under torch.profiler; returns (fn's result, sizes of the CPU allocations in order)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = fn()
    from torch._C._autograd import DeviceType
    sizes = []
    for ev in prof.profiler.kineto_results.events():
        if ev.name() == "[memory]" and ev.nbytes() > 0 and ev.device_type() == DeviceType.CPU:
            # torch 1.13 has start_us(); 2.x replaced it with start_ns().
            start = ev.start_ns() if hasattr(ev, "start_ns") else ev.start_us() * 1000
            sizes.append((start, ev.nbytes()))
    sizes.sort(key=lambda p: p[0])  # kineto gives events in order already; keep it explicit
    return result, [n for _, n in sizes]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", choices=e2e_models.ALL_MODELS)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--out", required=True)
    ap.add_argument("--profile", action="store_true",
                    help="record the framework's CPU allocations of every step with torch.profiler")
    ap.add_argument("--profile-steps", metavar="LIST",
                    help="with --profile: only these steps (1-based, comma-separated, 'last' allowed); "
                         "the others get null in profiled_allocations")
    args = ap.parse_args()
    if args.steps < 1:
        ap.error("--steps must be at least 1")
    to_profile = set(range(1, args.steps + 1))
    if args.profile_steps:
        try:
            to_profile = {args.steps if x.strip() == "last" else int(x) for x in args.profile_steps.split(",")}
        except ValueError:
            ap.error(f"bad --profile-steps {args.profile_steps!r}")

    model, opt, batches, loss_fn = e2e_models.build(args.model)
    mark = sentinel_ctypes.step_marker()
    losses = []
    profiled = []
    times = []
    for step in range(args.steps):
        times.append(time.perf_counter())
        if mark is not None:
            mark()
        batch = batches[step % len(batches)]
        if args.profile and step + 1 in to_profile:
            loss, sizes = profiled_step_allocations(lambda: e2e_models.train_step(model, opt, batch, loss_fn))
            profiled.append(sizes)
        else:
            loss = e2e_models.train_step(model, opt, batch, loss_fn)
            profiled.append(None)
        losses.append(loss)
    times.append(time.perf_counter())
    steady = [b - a for a, b in zip(times[1:], times[2:])] or [times[1] - times[0]]

    result = {
        "model": args.model,
        "steps": args.steps,
        "losses": [float(x).hex() for x in losses],
        "params_sha256": e2e_models.params_sha256(model),
        "sentinel_loaded": mark is not None,
        "torch_version": torch.__version__,
        # Not compared between runs: wall time per step, mean over steps 2..N.
        "seconds_per_step": sum(steady) / len(steady),
    }
    if args.profile:
        result["profiled_allocations"] = profiled
    result_json.write(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
