#!/usr/bin/python3
"""One configuration's process of scripts/bench-tiers: trains the e2e models in turn and times every step.

usage: bench_tiers_worker.py --out RESULT.json [--models mlp,transformer,cnn,lstm] [--size N] [--steps N]
                             [--sample-steps N] [--fast-node 0] [--filler-targets JSON] [--mark-lib PATH]

Runs in the guest (or on the host for the footprint pre-pass) under whatever placement its launcher set up
(numactl, LD_PRELOAD=libsentinel.so, LD_PRELOAD=libmemtier.so, a filler process). torch is imported once;
each model of tests/e2e/e2e_models.py is built, trained for --steps steps (each timed: zero_grad, forward,
loss, backward, optimizer step), then --sample-steps more steps during which the node of the pages of the
tensors the step touches is asked of the kernel (move_pages) at touch time; then it is freed before the next
model is built. It never calls sentinel_step(): Sentinel finds each model's steps itself, and each model
becomes a phase of its own.

Writes RESULT.json: per model the wall and thread-CPU time of every step, the CLOCK_MONOTONIC start of every
step (to match the steps of a Sentinel dump), the losses (float.hex), the sampled fast-hit share, the
kernel's migration counters (/proc/vmstat) at the model's start, at the start of its last steps and at its
end, and the process's pages per node (/proc/self/numa_maps) at the end of its timed steps.

--mark-lib PATH (libsentinel-emu-mark.so, tests/guest/emu_mark.c): each timed step is bracketed by two
slow-tier markers, tag 1 right before its timer starts and tag 2 right after it stops, so that the plugin's
record of each tag-2 marker holds exactly that step's instructions and line misses (docs/guest.md, "Counts,
the marker and emulated time"). The worker makes no other marks; per model RESULT.json has `mark_first`,
the sequence number (from 1, as the plugin counts) of its first step's tag-1 marker. --count-fast first
turns on the plugin's counting of node 0's line misses (one more marker, tag 0xff01).

--filler-targets '{"mlp": BYTES, ...}' (Linux tiering): before each model is built, a filler process
(scripts/bench_tiers_filler.py under numactl --membind=0) takes node 0's free memory down to the kernel's
high watermarks plus BYTES, so that the kernel has only BYTES of node 0 to give the model before it must
demote; the filler's mlocked pages cannot be demoted themselves.
"""

import argparse
import ctypes
import gc
import json
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, 'tests', 'e2e'))

T_START = time.monotonic()
import torch  # noqa: E402

IMPORT_S = time.monotonic() - T_START
import e2e_models  # noqa: E402

PAGE = os.sysconf('SC_PAGE_SIZE')
MIN_BYTES = 64 << 10  # SENTINEL_MIN_BYTES' default: the tensors Sentinel tracks and counts (--min-bytes)
SYS_MOVE_PAGES = 279  # x86_64
MARK_BEGIN, MARK_END = 1, 2  # slow-tier marker tags around each timed step (--mark-lib)
VMSTAT_PREFIXES = ('pgdemote', 'pgpromote', 'numa_', 'pgmigrate', 'thp_migration', 'pgsteal', 'pgscan')

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def vmstat():
    out = {}
    with open('/proc/vmstat') as f:
        for line in f:
            k, v = line.split()
            if k.startswith(VMSTAT_PREFIXES):
                out[k] = int(v)
    return out


def node_pages():
    """Pages of this process per node, anonymous and file-backed mappings apart, from /proc/self/numa_maps."""
    res = {'anon': {}, 'file': {}}
    try:
        with open('/proc/self/numa_maps') as f:
            for line in f:
                kind = 'file' if ' file=' in line else 'anon'
                for tok in line.split():
                    if tok[:1] == 'N' and '=' in tok:
                        n, c = tok[1:].split('=')
                        if n.isdigit():
                            res[kind][n] = res[kind].get(n, 0) + int(c)
    except OSError:
        pass
    return res


def node_meminfo(node):
    vals = {}
    try:
        with open(f'/sys/devices/system/node/node{node}/meminfo') as f:
            for line in f:
                parts = line.split()
                vals[parts[2].rstrip(':')] = int(parts[3]) * 1024
    except OSError:
        pass
    return vals


class PageSampler:
    """Where the pages of tensors are when a step touches them: fast-node bytes over bytes (move_pages).

    Each tensor of at least min_bytes (what Sentinel tracks) is counted once per stage of a step (forward,
    backward, optimizer) with its full size, its node read from up to `max_pages` pages spread over it.
    """

    def __init__(self, fast_node, min_bytes=MIN_BYTES, max_pages=64):
        self.fast_node = fast_node
        self.min_bytes = min_bytes
        self.max_pages = max_pages
        self.fast = 0.0
        self.total = 0.0
        self.absent = 0  # sampled pages not present (never touched)
        self.pages = 0
        self.seen = set()
        self.calls = 0
        arr_t = ctypes.c_void_p * max_pages
        self.addrs = arr_t()
        self.status = (ctypes.c_int * max_pages)()

    def stage(self):
        self.seen = set()

    def tensor(self, t):
        if not isinstance(t, torch.Tensor) or t.device.type != 'cpu' or t.is_sparse:
            return
        try:
            st = t.untyped_storage() if hasattr(t, 'untyped_storage') else t.storage()
            ptr, nbytes = st.data_ptr(), st.nbytes()
        except (RuntimeError, NotImplementedError):
            return
        if nbytes < self.min_bytes or ptr == 0 or ptr in self.seen:
            return
        self.seen.add(ptr)
        first = ptr // PAGE
        last = (ptr + nbytes - 1) // PAGE
        npages = last - first + 1
        k = min(self.max_pages, npages)
        for i in range(k):
            self.addrs[i] = (first + (i * npages) // k) * PAGE
        rc = libc.syscall(SYS_MOVE_PAGES, 0, ctypes.c_ulong(k), self.addrs, None, self.status, 0)
        self.calls += 1
        if rc < 0:
            return
        present = [self.status[i] for i in range(k) if self.status[i] >= 0]
        self.pages += k
        self.absent += k - len(present)
        if not present:
            return
        share = sum(1 for n in present if n == self.fast_node) / len(present)
        self.fast += share * nbytes
        self.total += nbytes

    def tensors(self, obj):
        if isinstance(obj, torch.Tensor):
            self.tensor(obj)
        elif isinstance(obj, (list, tuple)):
            for x in obj:
                self.tensors(x)
        elif isinstance(obj, dict):
            for x in obj.values():
                self.tensors(x)

    def result(self):
        return {'fast_hit_share': (self.fast / self.total) if self.total else None, 'sampled_bytes': self.total,
                'sampled_pages': self.pages, 'absent_pages': self.absent, 'move_pages_calls': self.calls}


def sampled_step(model, opt, batch, loss_fn, sampler):
    """One training step with the sampler watching: module inputs, outputs and parameters at their forward
    hooks, parameters and gradients after backward, parameters, gradients and optimizer state after the
    optimizer's step."""
    def pre(mod, inp):
        sampler.tensors(inp)
        for p in mod.parameters(recurse=False):
            sampler.tensor(p)

    def post(mod, inp, out):
        sampler.tensors(out)

    hooks = []
    for m in model.modules():
        hooks.append(m.register_forward_pre_hook(pre))
        hooks.append(m.register_forward_hook(post))
    try:
        sampler.stage()
        opt.zero_grad()
        loss = loss_fn(model, batch)
        loss.backward()
        sampler.stage()
        for p in model.parameters():
            sampler.tensor(p)
            sampler.tensor(p.grad)
        opt.step()
        sampler.stage()
        for p in model.parameters():
            sampler.tensor(p)
            sampler.tensor(p.grad)
            sampler.tensors(opt.state.get(p, {}))
    finally:
        for h in hooks:
            h.remove()
    return loss.item()


SYS_SET_MEMPOLICY, SYS_MIGRATE_PAGES, MPOL_BIND = 238, 256, 2


def move_self(node):
    """Binds this thread's future allocations to `node` and migrates the process's pages there."""
    mask = ctypes.c_ulong(1 << node)
    other = ctypes.c_ulong(1 << (1 - node))
    if libc.syscall(SYS_SET_MEMPOLICY, MPOL_BIND, ctypes.byref(mask), ctypes.c_ulong(64)) != 0:
        raise OSError(ctypes.get_errno(), 'set_mempolicy')
    if libc.syscall(SYS_MIGRATE_PAGES, 0, ctypes.c_ulong(64), ctypes.byref(other), ctypes.byref(mask)) < 0:
        raise OSError(ctypes.get_errno(), 'migrate_pages')


def parse_sizes(spec):
    """'0.5' -> {'': 0.5}; 'mlp=0.25,cnn=0.5' -> {'mlp': 0.25, 'cnn': 0.5}."""
    out = {}
    for item in spec.split(','):
        k, sep, v = item.partition('=')
        if sep:
            out[k] = float(v)
        else:
            out[''] = float(k)
    return out


class Filler:
    """Drives scripts/bench_tiers_filler.py: holds node 0's free memory at a target (see its docstring)."""

    def __init__(self):
        self.proc = subprocess.Popen(
            ['numactl', '--membind=0', sys.executable, os.path.join(HERE, 'bench_tiers_filler.py')],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def target(self, free_bytes):
        self.proc.stdin.write(f'{free_bytes}\n')
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError('the filler process died')
        return json.loads(line)

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--out', required=True)
    ap.add_argument('--models', default='mlp,transformer,cnn,lstm')
    ap.add_argument('--size', default='1',
                    help='e2e_models.build size: one number for all models, or MODEL=N,... (1: the e2e models); '
                         'a model given as MODEL@N in --models has its own')
    ap.add_argument('--steps', type=int, default=24, help='timed steps per model')
    ap.add_argument('--measure', type=int, default=8,
                    help='the last N timed steps are the steady state: /proc/vmstat is also read before them')
    ap.add_argument('--sample-steps', type=int, default=2, help='steps with page sampling after the timed ones')
    ap.add_argument('--fast-node', type=int, default=0)
    ap.add_argument('--min-bytes', type=int, default=MIN_BYTES,
                    help='smallest tensor the page sampler counts (SENTINEL_MIN_BYTES of the run)')
    ap.add_argument('--flip', type=int, default=0,
                    help='probe the gap: alternate blocks of N timed steps between node 0 and node 1 (the '
                         "process's memory policy and pages both move); needs two nodes")
    ap.add_argument('--filler-targets', help='JSON {model: bytes of node 0 to leave free above the reserve}')
    ap.add_argument('--mark-lib', help='libsentinel-emu-mark.so: mark each timed step for the slow-tier plugin')
    ap.add_argument('--count-fast', action='store_true',
                    help="with --mark-lib: have the plugin count node 0's line misses too (slows node 0's emulation)")
    ap.add_argument('--pin-cpu', type=int,
                    help='pin the training thread (this one; torch runs one intra-op thread) to this CPU, so that '
                         "the plugin's per-vCPU counts of a step are its counts (T_emu, T_hw); threads started "
                         "before, Sentinel's drain thread and migrator among them, keep every CPU")
    args = ap.parse_args()
    if args.pin_cpu is not None:
        # sched_setaffinity(0) is the calling thread's: the training thread only
        os.sched_setaffinity(0, {args.pin_cpu})
    marks = 0
    if args.mark_lib:
        mark_lib = ctypes.CDLL(args.mark_lib)
        mark_fn = mark_lib.sentinel_emu_mark
        mark_fn.argtypes, mark_fn.restype = [ctypes.c_uint], None
        if args.count_fast:
            mark_lib.sentinel_emu_count_fast(1)
            marks += 1

        def mark(tag):
            nonlocal marks
            mark_fn(tag)
            marks += 1
    else:
        def mark(tag):
            pass

    result = {'import_torch_s': IMPORT_S, 'torch_version': torch.__version__, 'pid': os.getpid(),
              'pinned_cpu': args.pin_cpu,
              'sentinel_loaded': hasattr(ctypes.CDLL(None), 'sentinel_step'),
              'ld_preload': os.environ.get('LD_PRELOAD', ''), 'size': args.size, 'models': {},
              'numa_balancing': open('/proc/sys/kernel/numa_balancing').read().strip()
              if os.path.exists('/proc/sys/kernel/numa_balancing') else None}
    try:
        with open('/sys/kernel/mm/numa/demotion_enabled') as f:
            result['demotion_enabled'] = f.read().strip()
    except OSError:
        result['demotion_enabled'] = None
    targets = json.loads(args.filler_targets) if args.filler_targets else None
    filler = Filler() if targets else None
    try:
        sizes = parse_sizes(args.size)
        for key in args.models.split(','):
            name, _, at = key.partition('@')
            at, _, batch = at.partition('b')
            size = float(at) if at else sizes.get(name, sizes.get('', 1.0))
            size = int(size) if size == int(size) else size
            batch = int(batch) if batch else None
            rec = {'model': name, 'size': size, 'vmstat_start': vmstat(), 'node0_free_before': node_meminfo(0).get('MemFree')}
            if filler:
                rec['filler'] = filler.target(int(targets[key]))
            t_build = time.monotonic()
            model, opt, batches, loss_fn = e2e_models.build(name, size, batch)
            rec['build_s'] = time.monotonic() - t_build
            rec['batches'] = len(batches)  # steps cycle through them: step i trains on batch i % len
            losses, wall, cpu, start_ns, nodes = [], [], [], [], []
            if args.mark_lib:
                rec['mark_first'] = marks + 1
            for step in range(args.steps):
                if args.flip:  # blocks of --flip steps alternate between the nodes
                    node = (step // args.flip) % 2
                    if step % args.flip == 0:
                        move_self(node)
                    nodes.append(node)
                if step == max(0, args.steps - args.measure):
                    rec['vmstat_measure'] = vmstat()
                    rec['measure_ns'] = time.monotonic_ns()
                start_ns.append(time.monotonic_ns())
                mark(MARK_BEGIN)
                t0, c0 = time.perf_counter(), time.thread_time()
                losses.append(e2e_models.train_step(model, opt, batches[step % len(batches)], loss_fn))
                t1, c1 = time.perf_counter(), time.thread_time()
                mark(MARK_END)
                wall.append(t1 - t0)
                cpu.append(c1 - c0)
            rec['end_timed_ns'] = time.monotonic_ns()
            rec['vmstat_end_timed'] = vmstat()
            rec['node_pages'] = node_pages()
            sampler = PageSampler(args.fast_node, args.min_bytes)
            t_s = time.monotonic()
            for step in range(args.steps, args.steps + args.sample_steps):
                losses.append(sampled_step(model, opt, batches[step % len(batches)], loss_fn, sampler))
            rec['sample_s'] = time.monotonic() - t_s
            rec['sampled'] = sampler.result()
            if args.flip:
                move_self(0)
                rec['flip_nodes'] = nodes
            rec.update(step_s=wall, step_cpu_s=cpu, step_start_ns=start_ns, losses=[float(x).hex() for x in losses],
                       params_sha256=e2e_models.params_sha256(model))
            rec['vmstat_end'] = vmstat()
            rec['end_ns'] = time.monotonic_ns()
            del model, opt, batches, loss_fn
            gc.collect()
            libc.malloc_trim(0)  # give the freed heap back, so the next model starts from the same state
            result['models'][key] = rec
            print(f'bench-tiers worker: {key}: median step {sorted(wall)[len(wall) // 2] * 1e3:.0f} ms '
                  f'(build {rec["build_s"]:.1f} s)', file=sys.stderr, flush=True)
    finally:
        if filler:
            filler.close()
    result['total_s'] = time.monotonic() - T_START
    result['marks'] = marks
    tmp = args.out + '.tmp'
    with open(tmp, 'w') as f:
        json.dump(result, f)
    os.replace(tmp, args.out)
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except Exception as e:  # one line for the driver's log, never a traceback
        print(f'bench-tiers worker: error: {type(e).__name__}: {e}', file=sys.stderr, flush=True)
        sys.exit(1)
