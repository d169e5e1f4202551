"""Sentinel dumps for the Python test scripts, through `sentinel-view` (the reader every tool uses), so
that no script carries the format's offsets or its checksum (docs/format.md).

    import sentinel_dump
    d = sentinel_dump.read(path)                     # {"file": {...}, "PROCESS": {...}, "OBJECTS": [...], ...}
    d = sentinel_dump.read(path, only=["STEPS"])     # just those record types (faster on big dumps)
    sentinel_dump.filter_records(src, dst, keep=["PROCESS", "STEPS"])   # a copy with only those records
    s = sentinel_dump.summary(path)                  # `sentinel-view summary --json`
    print(sentinel_dump.failure_context("sentinel", stderr_text, path))  # for a failed check's log

`read` returns what `sentinel-view records` prints (docs/sentinel-view.md): fixed-size entries as dicts
keyed by the field names of docs/format.md's tables, with the values the reader gives them (older
entries' missing fields get their documented defaults). The sentinel-view used is the `view` argument,
else $SENTINEL_VIEW, else build/tools/sentinel-view of this checkout. An unreadable or invalid dump
raises DumpError with the reader's message (it names the byte offset of the problem).
"""

import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Flag bits of include/sentinel/format.h that the scripts test.
STEP_EXPLICIT = 0x1   # SENTINEL_STEP_EXPLICIT: started by sentinel_step()
STEP_NEW_PHASE = 0x2  # SENTINEL_STEP_NEW_PHASE
STEP_INFERRED = 0x4   # SENTINEL_STEP_INFERRED: inferred backwards from the period before lock-on
STEP_PROFILED = 0x8   # SENTINEL_STEP_PROFILED
STEP_CHECKED = 0x10   # SENTINEL_STEP_CHECKED: in a placement check
IDENTITY_PINNED = 0x1   # SENTINEL_IDENTITY_PINNED
IDENTITY_OUTSIDE = 0x2  # SENTINEL_IDENTITY_OUTSIDE: born outside a step
NO_ORDINAL = 0xFFFFFFFF  # SENTINEL_NO_ORDINAL


class DumpError(Exception):
    """The dump cannot be read: the message is sentinel-view's (with the byte offset where it applies)."""


def view_path(view=None):
    """The sentinel-view to run."""
    return view or os.environ.get("SENTINEL_VIEW") or os.path.join(ROOT, "build", "tools", "sentinel-view")


def _run(args, view):
    exe = view_path(view)
    try:
        r = subprocess.run([exe] + args, capture_output=True, text=True)
    except OSError as e:
        raise DumpError(f"cannot run {exe}: {e}") from e
    if r.returncode != 0:
        raise DumpError(r.stderr.strip() or f"{exe} exited {r.returncode}")
    return r.stdout


def read(path, only=None, view=None):
    """Every record of the dump at `path` (or only the record types in `only`), decoded."""
    args = ["records", "--json"]
    if only:
        args += ["--only", ",".join(only)]
    return json.loads(_run(args + ["--", path], view))


def filter_records(src, dst, keep, view=None):
    """Writes `src` to `dst` with only the records of the types in `keep` (bytes and checksums unchanged)
    and a new END record."""
    _run(["filter", "--keep", ",".join(keep), "-o", dst, "--", src], view)


def summary(path, view=None):
    """`sentinel-view summary --json` of the dump (docs/sentinel-view.md)."""
    return json.loads(_run(["summary", "--json", "--", path], view))


def plan(path, args=(), view=None):
    """`sentinel-view plan --json` of the dump, with the plan's further options `args` (docs/sentinel-view.md)."""
    return json.loads(_run(["plan", "--json"] + list(args) + ["--", path], view))


def failure_context(label, stderr, path, view=None):
    """What a failed check prints for its log: the tail of the `label` run's stderr and of its dump's
    `sentinel-view summary` (a guest's files do not come back to the host)."""
    r = subprocess.run([view_path(view), "summary", "--", path], capture_output=True, text=True)
    return (f"--- {label}'s stderr\n{stderr[-3000:]}--- sentinel-view summary of its dump\n"
            f"{(r.stdout or r.stderr)[-6000:]}---")
