#!/usr/bin/python3
"""Holds node 0's free memory at a target, for the Linux-tiering configuration of scripts/bench-tiers.

Run under `numactl --membind=0` (bench_tiers_worker.py starts it). Reads one number per line on stdin: the
bytes of node 0 to leave free above the kernel's reserve (the sum of the high watermarks of node 0's zones,
from /proc/zoneinfo, below which kswapd starts demoting). It drops the page cache (so that "free" is not
padded by cache the kernel could reclaim instead of demoting), then maps and mlocks chunks of node 0 (4 MiB, then 64 KiB near the target)
until MemFree is at most reserve + target, or unmaps chunks until it is at least that. Locked pages are
unevictable: the kernel cannot demote them, so the training process has the target and no more before
reclaim demotes its own pages to node 1. Answers each line with one JSON line: what it found and did.
"""

import ctypes
import json
import sys

BIG, SMALL = 4 << 20, 64 << 10  # chunk sizes: far from the target, and within 2 big chunks of it
PROT_READ, PROT_WRITE = 1, 2
MAP_PRIVATE, MAP_ANONYMOUS, MAP_POPULATE = 0x02, 0x20, 0x8000
MAP_FAILED = ctypes.c_void_p(-1).value

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.mlock.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


def node0_free():
    with open('/sys/devices/system/node/node0/meminfo') as f:
        for line in f:
            parts = line.split()
            if parts[2] == 'MemFree:':
                return int(parts[3]) * 1024
    raise RuntimeError('no MemFree in node0/meminfo')


def node0_reserve():
    """Sum of the high watermarks of node 0's zones, in bytes."""
    total, node = 0, None
    with open('/proc/zoneinfo') as f:
        for line in f:
            parts = line.split()
            if parts[:1] == ['Node']:
                node = int(parts[1].rstrip(','))
            elif node == 0 and len(parts) == 2 and parts[0] == 'high':
                total += int(parts[1]) * 4096
    return total


def drop_caches():
    try:
        with open('/proc/sys/vm/drop_caches', 'w') as f:
            f.write('1\n')
        return True
    except OSError:
        return False


def main():
    # It takes a node's memory and drops the page cache: never on a shared host by mistake.
    with open('/proc/sys/kernel/hostname') as f:
        if f.read().strip() != 'sentinel-guest' and '--anywhere' not in sys.argv[1:]:
            print('bench_tiers_filler: runs only in the guest of scripts/guest/run (--anywhere to override)',
                  file=sys.stderr)
            return 2
    chunks = []
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        target = int(line)
        dropped = drop_caches()
        reserve = node0_reserve()
        want = reserve + target
        before = node0_free()
        failed = 0
        for _ in range(100000):  # one chunk at a time: MemFree also moves with page tables and the like
            free = node0_free()
            if free >= want + SMALL:
                size = BIG if free - want >= 2 * BIG else SMALL
                p = libc.mmap(None, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0)
                if p in (None, MAP_FAILED):
                    failed += 1
                    break
                if libc.mlock(p, size) != 0:
                    libc.munmap(p, size)
                    failed += 1
                    break
                chunks.append((p, size))
            elif free + SMALL <= want and chunks:
                p, size = chunks.pop()
                libc.munmap(p, size)
            else:
                break
        print(json.dumps({'target_bytes': target, 'reserve_bytes': reserve, 'free_before': before,
                          'free_after': node0_free(), 'held_bytes': sum(c[1] for c in chunks), 'failed_chunks': failed,
                          'dropped_caches': dropped}), flush=True)
    for p, size in chunks:
        libc.munmap(p, size)
    return 0


if __name__ == '__main__':
    sys.exit(main())
