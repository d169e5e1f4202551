#!/usr/bin/python3
"""The interleave policy (SENTINEL_POLICY=interleave, docs/tiering.md) in the two-node guest: the weighted
interleave peer, as Linux's MPOL_WEIGHTED_INTERLEAVE would place pages (the guest's kernel, 6.1, has no
such mode), over Sentinel's arenas.

- schedule_loop under the policy at 20% and at 50%: the checksum of a run without the library; stderr has
  the policy's one line, naming the share; the dump's TIERING record says interleave, no phase has a
  plan, nothing migrated; STATS' interleaved_fast_bytes is the share of the bytes bound (within 0.02).
- Where the pages really are: a Python process under the library allocates 96 buffers of 16 KiB to 3 MiB
  (through malloc, as any program does), writes them, and asks the kernel where each page is (move_pages
  without a target). The fast node holds the share of the pages (within 0.03), and the contents read back.
- SENTINEL_FAST_BYTES in bytes: one line saying the policy takes a share, and 20% is used.

env: SENTINEL_PRELOAD, SENTINEL_BUILD_ROOT. Exit 0 pass, 1 fail, 77 without a second node.

usage: check_interleave.py                       (in the guest)
       check_interleave.py --child               (the allocating process; prints its page counts as JSON)
"""
import ctypes
import json
import os
import subprocess
import sys
import tempfile

PAGE = 4096


def child():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    numa = ctypes.CDLL("libnuma.so.1", use_errno=True)
    numa.numa_move_pages.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.POINTER(ctypes.c_void_p),
                                     ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    sizes = [16384 * (1 + (k * 37) % 192) for k in range(96)]  # 16 KiB .. 3 MiB, a fixed spread
    bufs = []
    for k, size in enumerate(sizes):
        p = libc.malloc(size)
        if not p:
            raise SystemExit(f"malloc({size}) failed")
        ctypes.memset(p, (k * 7 + 1) & 0xFF, size)
        bufs.append((p, size, (k * 7 + 1) & 0xFF))
    counts = {}
    intact = True
    for p, size, byte in bufs:
        first = (p + PAGE - 1) // PAGE * PAGE  # whole pages of the buffer only
        n = (p + size - first) // PAGE
        pages = (ctypes.c_void_p * n)(*[first + i * PAGE for i in range(n)])
        status = (ctypes.c_int * n)()
        if numa.numa_move_pages(0, n, pages, None, status, 0) != 0:
            raise SystemExit(f"move_pages: errno {ctypes.get_errno()}")
        for s in status:
            counts[s] = counts.get(s, 0) + 1
        data = ctypes.string_at(p, size)
        intact &= data.count(bytes([byte])) == size
    for p, _, _ in bufs:
        libc.free(p)
    print(json.dumps({"pages": {str(k): v for k, v in counts.items()}, "intact": intact}))
    return 0


def run(args, env, timeout=600):
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)


def sentinel_lines(stderr):
    return [x for x in stderr.splitlines() if x.startswith("sentinel:")]


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child()
    if not os.path.exists("/sys/devices/system/node/node1"):
        print("SKIP: no second NUMA node")
        return 77
    build, lib = os.environ["SENTINEL_BUILD_ROOT"], os.environ["SENTINEL_PRELOAD"]
    loop = [os.path.join(build, "tests", "guest", "schedule_loop"), "--steps", "12"]
    view = os.path.join(build, "tools", "sentinel-view")
    plain = {k: v for k, v in os.environ.items() if not k.startswith("SENTINEL_")}
    failures = []
    ref = run(loop, plain)
    want = next((x for x in ref.stdout.splitlines() if "checksum" in x), None)
    if ref.returncode or not want:
        print(f"FAIL: the loop alone: status {ref.returncode}")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        def under(budget, args, name):
            env = dict(plain, LD_PRELOAD=lib, SENTINEL_MODE="run", SENTINEL_POLICY="interleave",
                       SENTINEL_FAST_BYTES=budget, SENTINEL_MIN_BYTES="16K",
                       SENTINEL_DUMP=os.path.join(tmp, f"{name}.prof"))
            return run(args, env), os.path.join(tmp, f"{name}.prof")

        for share in (20, 50):
            what = f"schedule_loop at {share}%"
            r, dump = under(f"{share}%", loop, f"loop{share}")
            lines = sentinel_lines(r.stderr)
            got = next((x for x in r.stdout.splitlines() if "checksum" in x), None)
            if r.returncode or got != want:
                failures.append(f"{what}: status {r.returncode}, {got} (want {want}): {r.stderr[-600:]}")
                continue
            said = [x for x in lines if "interleave:" in x]
            if len(said) != 1 or f"{share}.0% to node 0" not in said[0]:
                failures.append(f"{what}: expected the policy's one line naming {share}.0% to node 0, got {lines}")
            s = run([view, "summary", "--json", dump], plain)
            if s.returncode:
                failures.append(f"{what}: sentinel-view: {s.stderr.strip()}")
                continue
            j = json.loads(s.stdout)
            t, stats = j.get("tiering") or {}, j.get("stats") or {}
            fast, slow = stats.get("interleaved_fast_bytes", 0), stats.get("interleaved_slow_bytes", 0)
            bound = fast / (fast + slow) if fast + slow else None
            planned = [ph["phase"] for ph in j.get("phases", []) if ph.get("planned")]
            print(f"{what}: checksum ok; {said[0] if said else lines}; bound {fast} B fast, {slow} B slow "
                  f"({bound if bound is None else round(bound, 4)}); policy {t.get('policy')}, "
                  f"migrated {j.get('migrated_bytes')} B, planned phases {planned}")
            if t.get("policy") != "interleave":
                failures.append(f"{what}: the TIERING record's policy is {t.get('policy')}")
            if bound is None or abs(bound - share / 100) > 0.02:
                failures.append(f"{what}: {bound} of the bytes bound to the fast node, want {share / 100}")
            if planned or j.get("migrated_bytes"):
                failures.append(f"{what}: planned phases {planned}, migrated {j.get('migrated_bytes')} B: want none")

        r, _ = under("20%", [sys.executable, os.path.abspath(__file__), "--child"], "child")
        try:
            got = json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            got = None
        if r.returncode or not got:
            failures.append(f"pages: status {r.returncode}: {r.stdout[-300:]} {r.stderr[-600:]}")
        else:
            pages = {int(k): v for k, v in got["pages"].items()}
            total = sum(pages.values())
            share = pages.get(0, 0) / total if total else 0
            print(f"pages of 96 buffers at 20%: {pages} (node: pages; negative: errno), fast share {share:.4f}, "
                  f"contents intact {got['intact']}")
            if not got["intact"]:
                failures.append("pages: a buffer did not read back what was written")
            if any(k not in (0, 1) for k in pages) or abs(share - 0.20) > 0.03:
                failures.append(f"pages: {pages}, fast share {share:.4f}, want 0.20 on nodes 0 and 1 only")

        r, _ = under("8M", loop, "bytes")
        lines = sentinel_lines(r.stderr)
        print(f"schedule_loop with SENTINEL_FAST_BYTES=8M: {lines}")
        if not any("takes N% with it" in x for x in lines) or not any("20.0% to node 0" in x for x in lines):
            failures.append(f"SENTINEL_FAST_BYTES=8M: expected a line saying a share is needed and 20% used, got {lines}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
