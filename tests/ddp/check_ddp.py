#!/usr/bin/python3
"""Several ranks on one fast node (docs/tiering.md, "Processes, containers and limits"): ddp_train.py runs
with 2 ranks, without and with libsentinel.so (run mode, SENTINEL_DUMP=DIR/rank-%r.prof), and:
- every rank's losses and final parameters are bit-identical to the run without the library;
- each rank wrote one dump named by its rank, with its steps found and its phase planned, and no other
  process wrote one (torchrun's launcher, which trains nothing: docs/config.md, "Which processes write a dump");
- a budget given as a size is the node's, split between the 2 ranks (each plan has half, flagged
  BUDGET_SPLIT), and the ranks' fast-tier peaks together stay within it;
- sentinel-view summary on the directory shows both ranks side by side.

usage: check_ddp.py --python debian|venv|PATH --preload LIB --view VIEW [--launcher torchrun|env]
                    [--budget 64M] [--steps N] [--width W]
--launcher torchrun: `python -m torch.distributed.run --standalone --nproc_per_node=2` (2.x: Debian's 1.13
torchrun fails on Debian 12's Python); env: this script starts the 2 ranks itself with the variables
torchrun sets (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
Exit 0 pass, 1 fail, 77 skip (no torch)."""
import argparse
import glob
import json
import os
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import torch_builds  # noqa: E402

RANKS = 2


def parse_size(text):
    units = {"K": 10, "M": 20, "G": 30}
    return int(text[:-1]) << units[text[-1]] if text[-1] in units else int(text)


def loopback_up():
    """The two-node guest boots with its loopback down (it needs no network but gloo's rendezvous here)."""
    try:
        state = open("/sys/class/net/lo/flags").read().strip()
    except OSError:
        return
    if not int(state, 16) & 1 and os.geteuid() == 0:  # IFF_UP
        subprocess.run(["ip", "link", "set", "lo", "up"], check=False)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_job(python, launcher, out, steps, width, env):
    script = [os.path.join(HERE, "ddp_train.py"), out, str(steps), str(width)]
    if launcher == "torchrun":
        cmd = [python, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={RANKS}"] + script
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1500)
        return r.returncode, r.stderr
    port = str(free_port())
    procs = []
    for rank in range(RANKS):
        e = dict(env, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(RANKS), LOCAL_WORLD_SIZE=str(RANKS),
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(subprocess.Popen([python] + script, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    errs, status = "", 0
    for p in procs:
        _, err = p.communicate(timeout=1500)
        errs += err
        status = status or p.returncode
    return status, errs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default="venv")
    ap.add_argument("--preload", default=os.environ.get("SENTINEL_PRELOAD"))
    ap.add_argument("--view", default=os.path.join(os.environ.get("SENTINEL_BUILD_ROOT", ""), "tools", "sentinel-view"))
    ap.add_argument("--launcher", choices=("torchrun", "env"), default="torchrun")
    ap.add_argument("--budget", default="64M")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--width", type=int, default=1024, help="the MLP's hidden width (ddp_train.py)")
    a = ap.parse_args()
    python = torch_builds.resolve(a.python)
    why = torch_builds.skip_reason(python)
    if why:
        print(f"SKIP: {why}")
        return 77
    base = torch_builds.child_env({k: v for k, v in os.environ.items()
                                   if not k.startswith("SENTINEL_") and k != "LD_PRELOAD"})
    # One machine: gloo on the loopback (it otherwise looks for the interface of the host's name, which the
    # two-node guest does not have).
    base.setdefault("GLOO_SOCKET_IFNAME", "lo")
    failures = []
    loopback_up()
    with tempfile.TemporaryDirectory(prefix="sentinel-ddp.") as tmp:
        plain, lib, dumps = (os.path.join(tmp, n) for n in ("plain", "lib", "dumps"))
        for d in (plain, lib, dumps):
            os.makedirs(d)
        st, err = run_job(python, a.launcher, plain, a.steps, a.width, base)
        if st:
            print(f"FAIL: the job without the library exited {st}:\n{err[-2000:]}")
            return 1
        env = dict(base, LD_PRELOAD=a.preload, SENTINEL_MODE="run", SENTINEL_FAST_BYTES=a.budget,
                   SENTINEL_DUMP=os.path.join(dumps, "rank-%r.prof"))
        st, err = run_job(python, a.launcher, lib, a.steps, a.width, env)
        if st:
            print(f"FAIL: the job under the library exited {st}:\n{err[-3000:]}")
            return 1
        for rank in range(RANKS):
            want = json.load(open(os.path.join(plain, f"rank-{rank}.json")))
            got = json.load(open(os.path.join(lib, f"rank-{rank}.json")))
            if want != got:
                failures.append(f"rank {rank}: losses or parameters differ under the library")
        names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(dumps, "*.prof")))
        ranks_dumped = [n for n in names if n in ("rank-0.prof", "rank-1.prof")]
        print(f"dumps: {names}")
        if len(ranks_dumped) != RANKS:
            failures.append(f"expected rank-0.prof and rank-1.prof, found {names}")
        elif len(names) != RANKS:  # torchrun's own process trains nothing: a launcher writes no dump
            failures.append(f"expected only the ranks' dumps, found {names}")
        r = subprocess.run([a.view, "summary", "--json", dumps], capture_output=True, text=True)
        if r.returncode:
            failures.append(f"sentinel-view summary DIR exited {r.returncode}: {r.stderr.strip()}")
            job = {"dumps": []}
        else:
            job = json.loads(r.stdout)
        text = subprocess.run([a.view, "summary", dumps], capture_output=True, text=True).stdout
        print(text)
        rows = [x for x in job["dumps"] if x["rank"] in range(RANKS)]
        share = a.budget.endswith("%")  # each rank's share of its own peak: nothing to split
        for x in rows:
            if x["steps"] < a.steps - 3 or x["planned_phases"] < 1:
                failures.append(f"rank {x['rank']}: {x['steps']} steps, {x['planned_phases']} planned phase(s)")
            if x["budget_split"] == share:
                failures.append(f"rank {x['rank']}: budget_split {x['budget_split']} with SENTINEL_FAST_BYTES={a.budget}")
        node_budget = sum(x["fast_budget_bytes"] for x in rows)
        if not share and rows and abs(node_budget - parse_size(a.budget)) > RANKS:
            failures.append(f"the ranks' budgets add up to {node_budget}, the node's is {parse_size(a.budget)}")
        peaks = sum(x["fast_peak_bytes"] for x in rows)
        print(f"ranks' budgets together {node_budget} B, their fast-tier peaks together {peaks} B")
        if peaks > node_budget:
            failures.append(f"the ranks' fast-tier peaks add up to {peaks}, over the node's budget {node_budget}")
    for f in failures:
        print("FAIL: " + f)
    print("check_ddp: " + ("FAIL" if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
