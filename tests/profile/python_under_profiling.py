#!/usr/bin/env python3
"""Profile mode on real Python/PyTorch programs: nothing may fail because of profiling.

Each case runs a child program plainly and under LD_PRELOAD=$SENTINEL_LIB with SENTINEL_MODE=profile
and compares. Cases:
  train      MLP training (under -X faulthandler, as is dataloader) with I/O straight from and into tensor memory during the profiled steps
             (os.write, os.readv, socket send/recv_into, file write/readinto, torch.save/torch.load):
             losses bit-identical, every byte right, and the dump says profiling happened and that
             system calls met protected pages.
  dataloader a DataLoader with 2 forked worker processes: losses bit-identical.
  crash-fh   python -X faulthandler, then ctypes.string_at(0): faulthandler's traceback, death by SIGSEGV.
  crash      the same without faulthandler: death by SIGSEGV.

usage: python_under_profiling.py [--python debian|venv|PATH] [--known-issue vfork-sigaction]
       (env: SENTINEL_LIB, SENTINEL_VIEW)
--python: the PyTorch build the child runs on (tests/torch_builds.py; default debian, Debian's 1.13).
Exits 77 when that interpreter cannot import torch.

The runtime's notice that it found no step ("sentinel: no step found in N tracked allocations ...") is
not a complaint in the dataloader case, whose steps this test does not check: under 2.x the case has
enough tracked allocations (475, 345 distinct (site, size) pairs) for the notice, under 1.13 (132) not.

--known-issue vfork-sigaction (docs/testing.md): importing torch 2.x runs `ldconfig -p` through
subprocess, and Python 3.11's _posixsubprocess resets every signal handler to SIG_DFL with sigaction()
in its vfork child, before exec. The runtime's sigaction hook records that as the program's SIGSEGV
handler, in memory the vfork child shares with the parent; the parent's faulthandler is then lost to
the runtime's chaining, and crash-fh dies by SIGSEGV under profiling without its traceback. With the
flag, crash-fh under profiling must show exactly that (death by SIGSEGV, no traceback; the plain run
keeps its traceback), and the test fails once the traceback is back. Everything else as always.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.dont_write_bytecode = True
import torch_builds  # noqa: E402

PYTHON = torch_builds.DEBIAN

CHILD = r'''
import ctypes, io, os, socket, sys, tempfile, threading
import torch, torch.nn as nn
torch.manual_seed(0)
torch.set_num_threads(1)
case = sys.argv[1]
if case.startswith("crash"):
    ctypes.string_at(0)
losses = []
if case == "train":
    m = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    x = torch.randn(64, 256); y = torch.randint(0, 10, (64,))
    big = torch.arange(200000, dtype=torch.float32)
    raw = memoryview(big.numpy()).cast("B")
    for step in range(14):
        opt.zero_grad(); loss = nn.functional.cross_entropy(m(x), y); loss.backward(); opt.step()
        losses.append(loss.item().hex())
        r, w = os.pipe()
        assert os.write(w, raw[:60000]) == 60000; os.close(w)
        back = torch.empty(15000, dtype=torch.float32)
        assert os.readv(r, [memoryview(back.numpy()).cast("B")]) == 60000; os.close(r)
        assert torch.equal(back, big[:15000])
        a, b = socket.socketpair()
        sender = threading.Thread(target=lambda: (a.sendall(raw[:400000]), a.close()))
        sender.start()
        buf = torch.empty(100000); mv = memoryview(buf.numpy()).cast("B"); k = 0
        while k < 400000: k += b.recv_into(mv[k:])
        sender.join(); b.close(); assert torch.equal(buf, big[:100000])
        with tempfile.TemporaryFile() as f:
            f.write(raw); f.seek(0)
            into = torch.empty(200000); assert f.readinto(memoryview(into.numpy()).cast("B")) == 800000
            assert torch.equal(into, big)
        f = io.BytesIO(); torch.save(m.state_dict(), f); f.seek(0); sd = torch.load(f)
        assert all(torch.equal(sd[k], v) for k, v in m.state_dict().items())
    params = b"".join(p.detach().numpy().tobytes() for p in m.parameters())
elif case == "dataloader":
    from torch.utils.data import DataLoader, TensorDataset
    ds = TensorDataset(torch.randn(512, 128), torch.randint(0, 4, (512,)))
    dl = DataLoader(ds, batch_size=32, num_workers=2, shuffle=False)
    m = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 4))
    opt = torch.optim.SGD(m.parameters(), lr=0.05)
    for epoch in range(2):
        for xb, yb in dl:
            opt.zero_grad(); loss = nn.functional.cross_entropy(m(xb), yb); loss.backward(); opt.step()
            losses.append(loss.item().hex())
    params = b"".join(p.detach().numpy().tobytes() for p in m.parameters())
import hashlib
print("RESULT", " ".join(losses), hashlib.sha256(params).hexdigest())
'''


def run(case, preload, tmp, extra_args=()):
    env = dict(os.environ)
    for name in ("LD_PRELOAD", "SENTINEL_VIEW", "SENTINEL_RUN", "SENTINEL_LIB"):
        env.pop(name, None)
    env = torch_builds.child_env(env)
    dump = os.path.join(tmp, f"{case}-%p.prof")
    if preload:
        env.update(LD_PRELOAD=os.environ["SENTINEL_LIB"], SENTINEL_MODE="profile", SENTINEL_DUMP=dump)
    p = subprocess.run([PYTHON, *extra_args, "-c", CHILD, case], env=env, capture_output=True,
                       text=True, timeout=240)
    return p


def stats_of(tmp, case, view):
    dumps = [f for f in os.listdir(tmp) if f.startswith(case + "-")]
    assert len(dumps) == 1, f"{case}: expected one dump (workers write none), found {dumps}"
    path = os.path.join(tmp, dumps[0])
    out = subprocess.run([view, "summary", "--json", path], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def main():
    global PYTHON
    argv, issue = sys.argv[1:], None
    while argv:
        if len(argv) >= 2 and argv[0] == "--python":
            PYTHON = torch_builds.resolve(argv[1])
        elif len(argv) >= 2 and argv[0] == "--known-issue" and argv[1] == "vfork-sigaction":
            issue = argv[1]
        else:
            print(__doc__, file=sys.stderr)
            return 2
        argv = argv[2:]
    why = torch_builds.skip_reason(PYTHON)
    if why:
        print(f"skip: {why}", file=sys.stderr)
        return 77
    failures = []
    view = os.environ.get("SENTINEL_VIEW")
    with tempfile.TemporaryDirectory() as tmp:
        for case in ("train", "dataloader"):
            # Under -X faulthandler: Python's own SIGSEGV handler is installed before profiling starts.
            plain, under = run(case, False, tmp, ["-X", "faulthandler"]), run(case, True, tmp, ["-X", "faulthandler"])
            if plain.returncode != 0 or under.returncode != 0:
                failures.append(f"{case}: exit {plain.returncode} plainly, {under.returncode} under profiling\n"
                                f"{under.stderr[-3000:]}")
                continue
            a = [l for l in plain.stdout.splitlines() if l.startswith("RESULT")]
            b = [l for l in under.stdout.splitlines() if l.startswith("RESULT")]
            if a != b or not a:
                failures.append(f"{case}: results differ\n plain: {a}\n under: {b}")
            notes = [l for l in under.stderr.splitlines()
                     if case == "dataloader" and l.startswith("sentinel: no step found in ")]
            for n in notes:
                print(f"{case}: the runtime's notice (steps are not checked here): {n}")
            bad = [l for l in under.stderr.splitlines()
                   if l.startswith("sentinel:") and "papi" not in l and l not in notes]
            if bad:
                failures.append(f"{case}: runtime complained: {bad}")
            if view and case == "train":
                s = stats_of(tmp, case, view)
                st = s.get("stats", {})
                if not st.get("profile_faults"):
                    failures.append(f"{case}: no profiling fault recorded: {st}")
                if not st.get("profile_syscall_unprotects"):
                    failures.append(f"{case}: no system call met a protected page; the I/O check proved nothing")
            print(f"{case}: ok")
        for case, args in (("crash-fh", ["-X", "faulthandler"]), ("crash", [])):
            plain, under = run(case, False, tmp, args), run(case, True, tmp, args)
            for name, p in (("plain", plain), ("under profiling", under)):
                if p.returncode != -signal.SIGSEGV:
                    failures.append(f"{case} {name}: exit {p.returncode}, expected death by SIGSEGV")
                traceback = "Fatal Python error: Segmentation fault" in p.stderr
                if case == "crash-fh" and issue and name == "under profiling":
                    if traceback:
                        failures.append(f"the known issue {issue} did not occur: crash-fh has its traceback "
                                        f"under profiling; remove --known-issue {issue} from meson.build")
                    else:
                        print(f"KNOWN ISSUE {issue} (docs/testing.md): crash-fh under profiling died by "
                              f"SIGSEGV without faulthandler's traceback")
                elif case == "crash-fh" and not traceback:
                    failures.append(f"{case} {name}: no faulthandler traceback:\n{p.stderr[-2000:]}")
            print(f"{case}: ok")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
