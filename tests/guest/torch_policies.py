#!/usr/bin/python3
"""PyTorch training under every placement policy, in the two-node guest.

One process per configuration trains three guest-sized models in turn — an MLP, an LSTM and a
Transformer (the model types of tests/e2e/e2e_models.py, smaller, so that a step takes a fraction of a
second under TCG) — with no step marks and no pinned thread pool: each model's loop is a phase the
detector finds, profiles, plans and checks on its own. The first process runs without the library; the
others run under libsentinel.so in run mode with SENTINEL_FAST_BYTES (default 20%) and one policy each.

Checks: losses and final parameters bit-identical to the run without the library; every model's phase
planned and checked; the fast tier after each boundary's moves within the budget (all-fast excepted).
Prints the measured and predicted fast-hit share per model and policy.

Runs on the interpreter that runs it (sys.executable): Debian's /usr/bin/python3 (torch 1.13), or the
PyTorch 2.x venv's python (`torch-venv` in tests/guest/meson.build).

--marks: the child calls sentinel_step() (through ctypes, when the library is loaded) at the start of every
iteration, as a user who marks steps does; marked steps are one phase, so with one model only, and every
step must be a marked one.

--models picks some of the three: under PyTorch 2.x the LSTM dies by SIGSEGV in the TCG guest, also
without the library and with ONEDNN_MAX_CPU_ISA=AVX2 (in its forward, torch/nn/modules/rnn.py, where
2.x runs oneDNN's RNN), so the 2.x batch leaves it out (tests/guest/meson.build).

usage: torch_policies.py [--policies p,q,...] [--budget 20%] [--steps N] [--models m,...] [--marks]  (in the guest)
       torch_policies.py --child OUT.json --steps N [--models m,...] [--marks]                 (one configuration)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import sentinel_dump  # noqa: E402  (tests/lib)
import torch_parts  # noqa: E402  (tests/lib; imports no torch itself)

MODELS = ("mlp", "lstm", "transformer")


def build(name, torch, nn):
    torch.manual_seed(1234)
    gen = torch.Generator().manual_seed(1235)
    if name == "mlp":
        model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
        batches = [(torch.randn(32, 256, generator=gen), torch.randint(0, 10, (32,), generator=gen)) for _ in range(4)]
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        ce = nn.CrossEntropyLoss()
        return model, opt, batches, lambda m, b: ce(m(b[0]), b[1])
    if name == "lstm":
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(32, 64, batch_first=True)
                self.head = nn.Linear(64, 10)

            def forward(self, x):
                out, _ = self.lstm(x)
                return self.head(out[:, -1, :])
        model = Net()
        batches = [(torch.randn(32, 8, 32, generator=gen), torch.randint(0, 10, (32,), generator=gen)) for _ in range(4)]
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        ce = nn.CrossEntropyLoss()
        return model, opt, batches, lambda m, b: ce(m(b[0]), b[1])

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(256, 64)
            layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
            self.head = nn.Linear(64, 256)

        def forward(self, t):
            return self.head(self.encoder(self.embed(t)))
    model = Net()
    batches = torch_parts.next_token_batches(torch, gen, 256, 8, 16, 4)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    return model, opt, batches, torch_parts.next_token_loss(nn.CrossEntropyLoss())


def step_marker():
    """sentinel_step() when libsentinel.so is loaded in the process, else None."""
    import ctypes
    try:
        return ctypes.CDLL(None).sentinel_step
    except AttributeError:
        return None


def child(out, steps, models=MODELS, marks=False):
    import hashlib
    t0 = time.monotonic()
    import torch
    import torch.nn as nn
    import_s = time.monotonic() - t0
    torch.use_deterministic_algorithms(True)
    # One intra-op thread: the configurations run side by side on the guest's two vCPUs.
    torch.set_num_threads(1)
    result = {}
    mark = step_marker() if marks else None
    for name in models:
        model, opt, batches, loss_fn = build(name, torch, nn)
        losses, times = [], []
        for k in range(steps):
            t0 = time.monotonic()
            if mark is not None:
                mark()
            opt.zero_grad()
            loss = loss_fn(model, batches[k % len(batches)])
            loss.backward()
            opt.step()
            losses.append(loss.item())
            times.append(time.monotonic() - t0)
        h = hashlib.sha256()
        with torch.no_grad():
            for p in model.state_dict().values():
                h.update(memoryview(p.detach().contiguous().numpy()).cast("B"))
        result[name] = {"losses": losses, "params": h.hexdigest(), "step_s": times}
    result["torch"] = {"version": torch.__version__, "import_s": import_s}
    json.dump(result, open(out, "w"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child")
    ap.add_argument("--policies", default="sentinel,first-touch,hot,all-slow,all-fast")
    ap.add_argument("--budget", default="20%")
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--jobs", type=int, default=2, help="configurations run at the same time")
    ap.add_argument("--models", default=",".join(MODELS), help="some of " + ", ".join(MODELS))
    ap.add_argument("--marks", action="store_true", help="mark every step with sentinel_step() (one model)")
    args = ap.parse_args()
    models = tuple(args.models.split(","))
    if any(m not in MODELS for m in models):
        ap.error(f"--models: one or more of {', '.join(MODELS)}")
    if args.marks and len(models) != 1:
        ap.error("--marks: one model (marked steps are one phase)")
    if args.child:
        child(args.child, args.steps, models, args.marks)
        return 0
    if not os.path.exists("/sys/devices/system/node/node1"):
        print("SKIP: no second NUMA node")
        return 77
    lib = os.environ["SENTINEL_PRELOAD"]
    view = os.path.join(os.environ["SENTINEL_BUILD_ROOT"], "tools", "sentinel-view")
    me = os.path.abspath(__file__)
    failures = []
    stderr = {}
    with tempfile.TemporaryDirectory() as tmp:
        def run_config(label, extra_env):
            out = os.path.join(tmp, f"{label}.json")
            env = dict(os.environ, **extra_env)
            t0 = time.monotonic()
            p = subprocess.run([sys.executable, me, "--child", out, "--steps", str(args.steps),
                                "--models", ",".join(models)] + (["--marks"] if args.marks else []), env=env,
                               capture_output=True, text=True, timeout=1500)
            if p.returncode:
                # The tail holds a crash's report (its frames as module+offset, docs/profiling.md).
                failures.append(f"{label}: status {p.returncode}: {p.stderr[-4000:]}")
                return None
            print(f"{label}: {time.monotonic() - t0:.0f} s")
            stderr[label] = p.stderr
            return json.load(open(out))

        configs = [("reference", {})] + [
            (policy, {"LD_PRELOAD": lib, "SENTINEL_MODE": "run", "SENTINEL_POLICY": policy,
                      "SENTINEL_FAST_BYTES": args.budget, "SENTINEL_MIN_BYTES": "16K",
                      # No step-time trial: this checks that the moving schedule is carried out on real
                      # PyTorch steps (under TCG the trial keeps the one without moves; the slow-tier
                      # guest's schedule-sentinel and scripts/bench-tiers run the trial).
                      "SENTINEL_TRIAL_STEPS": os.environ.get("SENTINEL_TRIAL_STEPS", "0"),
                      "SENTINEL_DUMP": os.path.join(tmp, f"{policy}.prof")})
            for policy in args.policies.split(",")]
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = dict(zip([c[0] for c in configs], pool.map(lambda c: run_config(*c), configs)))
        ref = results["reference"]
        if ref is None:
            print("FAIL:", failures[0])
            return 1
        print(f"{sys.executable}: torch {ref['torch']['version']}, import torch {ref['torch']['import_s']:.0f} s "
              f"(reference run)")
        for policy in args.policies.split(","):
            dump = os.path.join(tmp, f"{policy}.prof")
            got = results[policy]
            if got is None:
                continue
            for name in models:
                if got[name]["losses"] != ref[name]["losses"] or got[name]["params"] != ref[name]["params"]:
                    failures.append(f"{policy}: {name}: losses or parameters differ from the run without the library")
            s = sentinel_dump.summary(dump, view)
            if args.marks and s.get("steps_marked") != args.steps:
                failures.append(f"{policy}: {s.get('steps_marked')} marked steps, expected {args.steps}")
            trained = [ph for ph in s["phases"] if ph.get("steps", 0) >= args.steps // 2 and ph.get("allocations_per_step", 0) >= 4]
            rows = []
            for ph in trained:
                if not ph.get("planned"):
                    failures.append(f"{policy}: phase {ph['phase']} ({ph['steps']} steps) was not planned")
                    continue
                watch = ph.get("watch") or {}  # the bandwidth watch (docs/tiering.md), when it measured a window
                rows.append(f"phase {ph['phase']}: measured {ph.get('fast_hit_share')}, predicted {ph.get('predicted_hit_share')}, "
                            f"budget {ph.get('fast_budget_bytes')} B, migrated {ph.get('migrated_bytes')} B"
                            + (f", watch {watch['status']} at {watch['bytes_per_s'] / 1e6:.1f} MB/s"
                               + (f" from step {watch['replan_step']}" if watch["status"] == "replanned" else "")
                               if watch else ""))
                if ph.get("fast_hit_share") is None:
                    failures.append(f"{policy}: phase {ph['phase']} has no placement check")
            if len(trained) < len(models):
                failures.append(f"{policy}: {len(trained)} trained phases found for {len(models)} models")
            budgets = [ph.get("fast_budget_bytes") or 0 for ph in trained]
            peak = s.get("tiering", {}).get("fast_peak_bytes", s.get("fast_peak_bytes")) or 0
            if policy != "all-fast" and budgets and peak > max(budgets):
                failures.append(f"{policy}: the fast tier held {peak} B after a boundary's moves, above every phase's budget")
            print(f"{policy:12s} " + "; ".join(rows))
            if any(f.startswith(policy + ":") for f in failures):
                if os.environ.get("TORCH_POLICIES_KEEP"):  # a directory shared with the host (scripts/guest/run --share)
                    import shutil
                    shutil.copy(dump, os.path.join(os.environ["TORCH_POLICIES_KEEP"], f"{policy}-{os.getpid()}.prof"))
                print(sentinel_dump.failure_context(policy, stderr.get(policy, ""), dump, view))
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
