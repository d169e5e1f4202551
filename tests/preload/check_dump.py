#!/usr/bin/env python3
"""Independent check of a Sentinel dump (docs/format.md), used by the preload tests.

check_dump.py [options] DUMP

Verifies the framing (magic, major version, CRC-32C of each record, END record and its count), then the
conditions asked for:
  --kind K            count only objects of this kind (0 heap, 1 CUDA pinned host memory)
  --sizes A,B,...     each size must occur among the (selected) objects
  --min-count N       for each of --sizes, at least N objects of that size (default 1)
  --min-objects N     at least N (selected) objects
  --alive-size S      an object of size S (selected kind) must still be alive at dump time
  --flag S:F          an object of size S (selected kind) must have flag bits F set (1: freed by another
                      thread, 2: born from realloc); may repeat
  --view PATH         also run `PATH summary --json DUMP`; its JSON must have objects, tracked_bytes and sites,
                      and its object count must equal the number of objects found here
Exit status 0 when everything holds; otherwise each problem is printed on one line.
"""
import argparse
import json
import struct
import subprocess
import sys

MAGIC = b"SNTLDUMP"
MAJOR = 1
REC_OBJECTS = 6
REC_END = 0xFFFF


def crc32c_table():
    poly = 0x82F63B78
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


TABLE = crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def parse(path):
    """Returns (objects, problems); objects are dicts of the fields of struct sentinel_object."""
    problems = []
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24 or data[:8] != MAGIC:
        return [], ["not a Sentinel dump (magic %r, %d bytes)" % (data[:8], len(data))]
    major, minor, psize, le = struct.unpack_from("<HHBB", data, 8)
    if major != MAJOR:
        problems.append("major version %d, expected %d" % (major, MAJOR))
    if psize != 8 or le != 1:
        problems.append("pointer size %d, little endian %d" % (psize, le))
    off = 24
    nrec = 0
    objects = []
    process = {"flags": None}
    saw_end = False
    while off < len(data):
        if off + 16 > len(data):
            problems.append("offset %d: truncated record header" % off)
            break
        rtype, crc, length = struct.unpack_from("<IIQ", data, off)
        if off + 16 + length > len(data):
            problems.append("offset %d: record length %d runs past end of file (size %d)" % (off, length, len(data)))
            break
        payload = data[off + 16: off + 16 + length]
        if crc32c(payload) != crc:
            problems.append("offset %d: CRC mismatch in record type %d" % (off, rtype))
        if rtype == REC_END:
            (count,) = struct.unpack_from("<Q", payload, 0)
            if count != nrec:
                problems.append("END record counts %d records, found %d" % (count, nrec))
            saw_end = True
            off += 16 + length
            if off != len(data):
                problems.append("offset %d: %d bytes after the END record" % (off, len(data) - off))
            break
        if rtype == 1 and len(payload) >= 16:  # PROCESS: pid, ppid, rank, flags
            (process["flags"],) = struct.unpack_from("<I", payload, 12)
        if rtype == REC_OBJECTS:
            count, esize = struct.unpack_from("<II", payload, 0)
            if esize < 64 or 8 + count * esize > len(payload):
                problems.append("offset %d: OBJECTS record with %d entries of %d bytes in %d bytes"
                                % (off, count, esize, len(payload)))
            else:
                for i in range(count):
                    e = 8 + i * esize
                    (address, size, birth_ns, death_ns, birth_seq, death_seq, site, thread, alignment, kind,
                     flags) = struct.unpack_from("<QQQQQQIIIHH", payload, e)
                    objects.append(dict(address=address, size=size, birth_ns=birth_ns, death_ns=death_ns,
                                        birth_seq=birth_seq, death_seq=death_seq, site=site, thread=thread,
                                        alignment=alignment, kind=kind, flags=flags))
        nrec += 1
        off += 16 + length
    if not saw_end:
        problems.append("no END record (writer died or file truncated at offset %d)" % off)
    return objects, process, problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--kind", type=int)
    ap.add_argument("--sizes", default="")
    ap.add_argument("--min-count", type=int, default=1)
    ap.add_argument("--min-objects", type=int, default=0)
    ap.add_argument("--alive-size", type=int)
    ap.add_argument("--flag", action="append", default=[])
    ap.add_argument("--view")
    ap.add_argument("--signal", type=int, help="the signal the PROCESS record says ended the process (0: none)")
    a = ap.parse_args()

    objects, process, problems = parse(a.dump)
    if a.signal is not None:
        flags = process["flags"] or 0
        got = (flags >> 8) & 0xFF if flags & 0x2 else 0  # SENTINEL_PROCESS_ENDED_BY_SIGNAL, its number
        print("ended by signal %d" % got)
        if got != a.signal:
            problems.append("PROCESS flags 0x%x: ended by signal %d, expected %d" % (flags, got, a.signal))
    kinds = {}
    for o in objects:
        kinds[o["kind"]] = kinds.get(o["kind"], 0) + 1
    sel = [o for o in objects if a.kind is None or o["kind"] == a.kind]
    print("%d objects (by kind: %s), %d selected" % (
        len(objects), ", ".join("%d: %d" % kv for kv in sorted(kinds.items())) or "none", len(sel)))
    if len(sel) < a.min_objects:
        problems.append("%d objects selected, expected at least %d" % (len(sel), a.min_objects))
    for s in [int(x) for x in a.sizes.split(",") if x]:
        n = sum(1 for o in sel if o["size"] == s)
        if n < a.min_count:
            problems.append("%d objects of size %d%s, expected at least %d" % (
                n, s, "" if a.kind is None else " and kind %d" % a.kind, a.min_count))
    if a.alive_size is not None:
        if not any(o["size"] == a.alive_size and o["death_ns"] == 0 for o in sel):
            problems.append("no live object of size %d at dump time" % a.alive_size)
    for spec in a.flag:
        size, bits = (int(x, 0) for x in spec.split(":"))
        if not any(o["size"] == size and (o["flags"] & bits) == bits for o in sel):
            problems.append("no object of size %d with flags 0x%x (flags seen: %s)" % (
                size, bits, sorted({o["flags"] for o in sel if o["size"] == size})))
    for o in sel:
        if o["death_ns"] != 0 and o["death_ns"] < o["birth_ns"]:
            problems.append("object of size %d dies before it is born" % o["size"])
            break

    if a.view:
        r = subprocess.run([a.view, "summary", "--json", a.dump], capture_output=True, text=True)
        if r.returncode != 0:
            problems.append("%s summary --json exited %d: %s" % (a.view, r.returncode, r.stderr.strip()[:300]))
        else:
            try:
                j = json.loads(r.stdout)
                missing = [k for k in ("objects", "tracked_bytes", "sites") if k not in j]
                if missing:
                    problems.append("sentinel-view JSON lacks %s" % ", ".join(missing))
                else:
                    print("sentinel-view: objects %s, tracked_bytes %s, sites %s" % (
                        j["objects"], j["tracked_bytes"], j["sites"]))
                    if isinstance(j["objects"], int) and j["objects"] != len(objects):
                        problems.append("sentinel-view counts %d objects, this reader %d" % (
                            j["objects"], len(objects)))
            except ValueError as e:
                problems.append("sentinel-view output is not JSON: %s" % e)

    for p in problems:
        print("problem: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
