#!/usr/bin/python3
"""Census of the allocations a training step makes, by size threshold, without Sentinel.

usage: alloc_census.py [--models mlp,cnn,lstm,transformer] [--steps N] [--json OUT.json] [--markdown]

For each model of e2e_models.py it measures, over the steady-state steps 2..N (N default 12):
  * tensor view: the CPU tensor allocations the framework reports itself (torch.profiler with
    profile_memory=True: c10's CPU allocator reports every allocation with its size);
  * malloc view: every malloc-family call of the process, recorded with glibc's own tracer: the child
    runs with LD_PRELOAD=libc_malloc_debug.so.0 (glibc's debugging malloc, not Sentinel) and
    MALLOC_TRACE=FILE, and switches tracing on with mtrace() (looked up with dlvsym(..., "GLIBC_2.2.5"),
    since libc.so.6 exports a no-op mtrace as the default version) just before the first step.
    At the start of every step it calls malloc(MARK_SIZE) and free: these marker records split the
    trace into steps and are not counted. glibc's tracer records malloc, realloc, memalign,
    posix_memalign, aligned_alloc, valloc and pvalloc, but NOT calloc (glibc 2.36's malloc-debug does not
    trace it); a realloc is counted as an allocation of its new size when it returns a new block.
For each threshold T in 4K, 16K, 64K, 256K, 1M it prints the number of allocations of at least T per
step, and the share of the step's allocated bytes they cover. Every step from 2 on must have the same
counts (the script says so if they do not).
"""

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)

THRESHOLDS = [("4K", 4 << 10), ("16K", 16 << 10), ("64K", 64 << 10), ("256K", 256 << 10), ("1M", 1 << 20)]
MARK_SIZE = 0x5E57E1  # 6182881 bytes: an odd size nothing else allocates
DEBUG_MALLOC = "libc_malloc_debug.so.0"
PYTHON = "/usr/bin/python3"


def child(model, steps):
    """Runs the training loop with glibc's malloc tracer on (only the steps are traced)."""
    import e2e_models
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.dlvsym.restype = ctypes.c_void_p
    libc.dlvsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    dbg = ctypes.CDLL(DEBUG_MALLOC)
    syms = {}
    for name in (b"mtrace", b"muntrace"):
        addr = libc.dlvsym(dbg._handle, name, b"GLIBC_2.2.5")
        if not addr:
            sys.exit(f"alloc_census: {name.decode()} not found in {DEBUG_MALLOC}")
        syms[name] = ctypes.CFUNCTYPE(None)(addr)
    mdl, opt, batches, loss_fn = e2e_models.build(model)
    syms[b"mtrace"]()
    for step in range(steps):
        libc.free(libc.malloc(MARK_SIZE))
        e2e_models.train_step(mdl, opt, batches[step % len(batches)], loss_fn)
    libc.free(libc.malloc(MARK_SIZE))  # closes the last step
    syms[b"muntrace"]()
    return 0


def parse_mtrace(path):
    """Splits an mtrace file at the marker allocations; returns one list of sizes per step."""
    steps = []
    cur = None
    with open(path) as f:
        for line in f:
            fields = line.split()
            if not fields or fields[0] != "@":
                continue
            # "@ WHERE + PTR SIZE" (allocation), "@ WHERE > PTR SIZE" (realloc result), "- PTR", "< PTR"
            for op in ("+", ">"):
                if op in fields[2:]:
                    i = fields.index(op, 2)
                    size = int(fields[i + 2], 16)
                    if size == MARK_SIZE and op == "+":
                        if cur is not None:
                            steps.append(cur)
                        cur = []
                    elif cur is not None:
                        cur.append(size)
                    break
    return steps  # the marker after the last step closes it; anything after it is dropped


def malloc_view(model, steps):
    if not os.path.exists(f"/usr/lib/x86_64-linux-gnu/{DEBUG_MALLOC}") and \
            not os.path.exists(f"/lib/x86_64-linux-gnu/{DEBUG_MALLOC}"):
        return None
    with tempfile.TemporaryDirectory(prefix="census-") as tmp:
        trace = os.path.join(tmp, "mtrace.txt")
        env = dict(os.environ, LD_PRELOAD=DEBUG_MALLOC, MALLOC_TRACE=trace)
        env.pop("SENTINEL_MODE", None)
        subprocess.run([PYTHON, os.path.abspath(__file__), "--child", model, "--steps", str(steps)],
                       env=env, check=True)
        return parse_mtrace(trace)


def tensor_view(model, steps):
    with tempfile.TemporaryDirectory(prefix="census-") as tmp:
        out = os.path.join(tmp, "r.json")
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        subprocess.run([PYTHON, os.path.join(HERE, "torch_train.py"), model, "--steps", str(steps),
                        "--profile", "--out", out], env=env, check=True)
        with open(out) as f:
            return json.load(f)["profiled_allocations"]


def summarize(per_step):
    """Census of steps 2..N: per threshold, (count per step, share of bytes); None if steps differ."""
    steady = per_step[1:]
    rows = {}
    total = {sum(s) for s in steady}
    allocs = {len(s) for s in steady}
    for label, t in THRESHOLDS:
        counts = {sum(1 for x in s if x >= t) for s in steady}
        big = {sum(x for x in s if x >= t) for s in steady}
        rows[label] = {
            "count": sorted(counts)[0] if len(counts) == 1 else sorted(counts),
            "bytes": sorted(big)[0] if len(big) == 1 else sorted(big),
            "share": (sum(sum(x for x in s if x >= t) for s in steady) /
                      max(1, sum(sum(s) for s in steady))),
        }
    return {
        "steps_measured": len(steady),
        # All allocations, small ones included: these vary a little from step to step (Python's own
        # allocations), so they are given as [min, max].
        "allocations_per_step": [min(allocs), max(allocs)],
        "bytes_per_step": [min(total), max(total)],
        "first_step": {label: sum(1 for x in per_step[0] if x >= t) for label, t in THRESHOLDS},
        "thresholds": rows,
    }


def fmt_count(c):
    return str(c) if isinstance(c, int) else "/".join(map(str, c)) + " (varies!)"


def markdown(results):
    lines = []
    for view, title in (("tensor", "Tensor allocations (torch.profiler, c10 CPU allocator)"),
                        ("malloc", "All malloc-family calls (glibc mtrace; calloc not traced)")):
        lines.append(f"### {title}\n")
        head = "| model | allocs/step | bytes/step | " + " | ".join(f">= {l}: n, share" for l, _ in THRESHOLDS) + " |"
        lines.append(head)
        lines.append("|" + "---|" * (3 + len(THRESHOLDS)))
        for model, r in results.items():
            s = r.get(view)
            if s is None:
                continue
            cells = [model, fmt_range(s["allocations_per_step"]),
                     fmt_range(s["bytes_per_step"], fmt_bytes)]
            for label, _ in THRESHOLDS:
                row = s["thresholds"][label]
                cells.append(f"{fmt_count(row['count'])}, {100 * row['share']:.1f}%")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def fmt_range(r, fmt=str):
    lo, hi = fmt(r[0]), fmt(r[1])
    return lo if lo == hi else f"{lo}-{hi}"


def fmt_bytes(b):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= scale:
            return f"{b / scale:.1f} {unit}"
    return f"{b} B"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="mlp,cnn,lstm,transformer")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--json", help="write the full census here")
    ap.add_argument("--markdown", action="store_true", help="print markdown tables")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.steps)
    if args.steps < 3:
        ap.error("--steps must be at least 3 (step 1 is warm-up)")

    results = {}
    varies = False
    for model in args.models.split(","):
        tv = summarize(tensor_view(model, args.steps))
        mt = malloc_view(model, args.steps)
        mv = summarize(mt) if mt is not None else None
        results[model] = {"tensor": tv, "malloc": mv}
        for view in (tv, mv):
            if view is not None and any(not isinstance(r["count"], int) for r in view["thresholds"].values()):
                varies = True
        if not args.markdown:
            for name, v in (("tensor", tv), ("malloc", mv)):
                if v is None:
                    print(f"{model:12s} {name:6s} (glibc's {DEBUG_MALLOC} not found: skipped)")
                    continue
                cells = "  ".join(f">={l}: {fmt_count(v['thresholds'][l]['count'])} "
                                  f"({100 * v['thresholds'][l]['share']:.1f}%)" for l, _ in THRESHOLDS)
                print(f"{model:12s} {name:6s} allocs/step {fmt_range(v['allocations_per_step'])}, "
                      f"{fmt_range(v['bytes_per_step'], fmt_bytes)}/step  {cells}")
    if args.markdown:
        print(markdown(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
            f.write("\n")
    if varies:
        print("alloc_census: counts differ between steady-state steps", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
