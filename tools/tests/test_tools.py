#!/usr/bin/env python3
"""Command-line tests of sentinel-view and sentinel-run (run by meson, suite 'tools').

  test_tools.py --view V --run R --make-dumps M --dummy-lib D [--lib L] {view,run,e2e}

view: sentinel-view on hand-built dumps (tools/tests/make_test_dumps.cpp): text and JSON output,
      escaping, offline symbolization, error lines and exit codes.
run:  sentinel-run with an empty preload library: environment, LD_PRELOAD order, exit statuses,
      library discovery.
e2e:  a real Python/numpy run under libsentinel.so through sentinel-run, then sentinel-view on
      the dump it wrote. Exits 77 (skip) when numpy is missing.
profile: sentinel-view on synthetic format 1.1 dumps (tests/fuzz/training_dump.h): the steps and
      profile keys of summary --json with exact values, the heatmap of a known pattern, the trace
      JSON (valid, one slice per object, no overlapping slices on a track, the counter).
torch: a 12-step PyTorch loop (no step marks) under sentinel-run --mode profile, then every
      sentinel-view command on the dump the runtime wrote: the detector's steps read 9 to 12, the
      profile is there, heatmap/trace/report/plan work on it. Exits 77 when torch is missing.
plan: sentinel-view plan on format 1.2 dumps (tools/tests/tiering_dumps.cpp) and the recorded
      profile fixtures (tests/fixtures/profiles/): the recorded PLAN recomputed identically, one
      flipped bit reported, the settings taken from TIERING, CONFIG or the command line, the
      policies' bounds, text and JSON, error lines and exit codes.
guest: every sentinel-view command, with and without --phase, on the dump of a real run-mode PyTorch run
      in the two-NUMA-node guest (tools/tests/fixtures/guest_mlp_run.prof: a profiled and planned
      period-1 data loop, phase 1, then training, phase 2): the main phase is the training, each
      view takes its own phase's records only, the JSON figures are those of the records, bad
      --phase values give one error line (exit 2 for usage, 1 naming the phases there are).
report: sentinel-view report rendered in headless Chromium (--dump-dom): the page's script runs
      without errors, the plots are drawn, nothing external is referenced, markup from the dump is
      escaped. Exits 77 (skip) when chromium is missing or cannot render here.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def format_version():
    """SENTINEL_FORMAT_MAJOR.MINOR, from the format's one header."""
    header = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'include', 'sentinel', 'format.h')
    with open(header) as f:
        text = f.read()
    major = re.search(r'#define SENTINEL_FORMAT_MAJOR (\d+)', text).group(1)
    minor = re.search(r'#define SENTINEL_FORMAT_MINOR (\d+)', text).group(1)
    return f'{major}.{minor}'


FORMAT_VERSION = format_version()

failures = []


def check(cond, what):
    if cond:
        print(f"ok    {what}")
    else:
        print(f"FAIL  {what}")
        failures.append(what)
    return cond


def run(cmd, env=None, cwd=None, timeout=120):
    p = subprocess.run(cmd, capture_output=True, text=True, errors="surrogateescape", env=env,
                       cwd=cwd, timeout=timeout)
    return p


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SENTINEL_") and k != "LD_PRELOAD"}
    env.update(extra)
    return env


def make_dumps(a, tmp):
    """Writes the hand-built dumps into tmp: a function naming one of them, None when that failed."""
    r = run([a.make_dumps, tmp])
    if not check(r.returncode == 0, "make-test-dumps wrote the dumps"):
        print(r.stderr)
        return None
    return lambda name: os.path.join(tmp, name)


def python_with(a, module, test):
    """/usr/bin/python3 for a test of the real library: exits 2 without --lib, 77 (skip) when that
    python cannot import `module`."""
    if not a.lib:
        print(f"{test} needs --lib", file=sys.stderr)
        sys.exit(2)
    py = "/usr/bin/python3"
    if subprocess.run([py, "-c", f"import {module}"], capture_output=True).returncode != 0:
        print(f"skip: /usr/bin/python3 cannot import {module}", file=sys.stderr)
        sys.exit(77)
    return py


def report_page(view, dump, page, args, what):
    """sentinel-view report --no-symbols ARGS DUMP -o PAGE: the page, None when it did not run cleanly."""
    r = run([view, "report", "--no-symbols", *args, dump, "-o", page])
    if not check(r.returncode == 0 and r.stderr == "", f"report {what}: exit 0 ({r.stderr.strip()})"):
        return None
    with open(page, encoding="utf-8") as f:
        return f.read()


# ----------------------------------------------------------------------------------------------
def test_view(a, tmp):
    view = a.view
    d = make_dumps(a, tmp)
    if not d:
        return

    # Text summary of the sample dump.
    r = run([view, "summary", "--no-symbols", d("sample.prof")])
    check(r.returncode == 0, "summary sample: exit 0")
    check(r.stderr == "", "summary sample: nothing on stderr")
    out = r.stdout
    print(out)
    for needle in ["pid 4242, ppid 1, rank 0", "/usr/bin/python3.11",
                   "python3 -c 'print(\"hi\")'", "duration     2.500 s",
                   "node 1 (CPU-less, DAX KMEM, 8.00 GiB, 8.00 GiB free)", "fast node 0, slow node 1", "NUMA balancing on",
                   "objects          6 tracked, 2 still alive",
                   "tracked bytes    1.20 MiB (1261568)", "peak live bytes  1.19 MiB (1245184)",
                   "marked steps     2 (allocations per step: 3 2)", "still alive",
                   "4.00 KiB - 8.00 KiB", "site 1: 1.00 MiB", "python3.11+0x100",
                   "libc.so.6+0x200", "unknown site", "overhead_bytes",
                   "tracking overhead 12.0 KiB = 0.97% of tracked bytes"]:
        check(needle in out, f"summary sample text has {needle!r}")

    # JSON summary.
    r = run([view, "summary", "--json", "--no-symbols", d("sample.prof")])
    check(r.returncode == 0, "summary --json sample: exit 0")
    try:
        j = json.loads(r.stdout)
    except ValueError as e:
        check(False, f"summary --json output parses ({e})")
        return
    check(r.stdout.count("\n") == 1, "summary --json prints one line")
    expect = {"version": "1.0", "pid": 4242, "objects": 6, "tracked_bytes": 1261568,
              "peak_live_bytes": 1245184, "sites": 3, "steps_marked": 2,
              "allocations_per_marked_step": [3, 2], "alive_objects": 2, "modules": 2,
              "stats": {"tracked_allocations": 6, "tracked_frees": 4, "overhead_bytes": 12288},
              "argv": ["python3", "-c", 'print("hi")'], "duration_ns": 2500000000}
    for k, v in expect.items():
        check(j.get(k) == v, f"json {k} == {v!r} (got {j.get(k)!r})")
    ts = [(s["id"], s["objects"], s["bytes"]) for s in j["top_sites"]]
    check(ts == [(1, 2, 1052672), (2, 2, 196608), (3, 1, 8192), (-1, 1, 4096)],
          f"json top_sites ids/objects/bytes ({ts})")
    check(j["top_sites"][0]["frames"] == ["python3.11+0x100", "libc.so.6+0x200"],
          f"json top_sites[0] frames ({j['top_sites'][0]['frames']})")
    lt = {b["bucket"]: b["objects"] for b in j["lifetimes"]}
    check(lt == {"< 1 ms": 2, "1 - 10 ms": 0, "10 - 100 ms": 0, "100 ms - 1 s": 1, ">= 1 s": 1,
                 "still alive": 2}, f"json lifetimes ({lt})")
    sc = [(c["min"], c["objects"]) for c in j["size_classes"]]
    check(sc == [(4096, 2), (8192, 1), (65536, 1), (131072, 1), (1048576, 1)],
          f"json size_classes ({sc})")
    check(j["topology"]["nodes"][1]["cpu_less"] is True, "json topology node 1 CPU-less")
    check(j["config"]["SENTINEL_MIN_BYTES"] == "4096", "json config")

    # Strings that need escaping.
    r = run([view, "summary", "--json", "--no-symbols", d("weird.prof")])
    check(r.returncode == 0, "summary --json weird: exit 0")
    try:
        j = json.loads(r.stdout)
        check(j["executable"] == '/opt/we"ird\\dir/\x01pro\ufffdg\u00e9',
              f"json escapes the executable ({j['executable']!r})")
        check(j["argv"] == ["prog", "tab\there", "quote'\"", "new\nline"], "json escapes argv")
        check(j["config"] == {"SENTINEL_DUMP": 'a"b'}, "json escapes config")
        check(j["stats"] == {'we"ird\\name': 1}, "json escapes stat names")
        check(j["rank"] == 3, "json rank")
    except (ValueError, KeyError) as e:
        check(False, f"weird JSON parses ({e}): {r.stdout!r}")
    r = run([view, "summary", "--no-symbols", d("weird.prof")])
    check(r.returncode == 0, "summary weird: exit 0")
    check("\x01" not in r.stdout and "\\x01" in r.stdout, "text output escapes control bytes")
    check("'new\\x0aline'" in r.stdout, "text command line quoted and escaped")

    # No objects.
    r = run([view, "summary", "--json", d("noobjects.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check(j.get("objects") == 0 and j.get("peak_live_bytes") == 0 and j.get("top_sites") == []
          and j.get("allocations_per_marked_step") == [], "json of a dump without objects")
    # A 1.0 dump: the 1.1 keys are there, with 0 and empty lists.
    r = run([view, "summary", "--json", "--no-symbols", d("sample.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    for k, v in {"steps": 0, "allocations_per_step": 0, "intervals_per_step": 0, "profiled_steps": 0,
                 "granularity_bytes": 0, "faults": 0, "profile": None, "phases": [], "groups": [],
                 "top_identities": [], "top_identities_by_touches": [], "identity_count": 0,
                 "group_count": 0, "interval_ns": []}.items():
        check(k in j and j[k] == v, f"1.0 dump: json {k} == {v!r} (got {j.get(k, 'missing')!r})")
    check(run([view, "summary", d("noobjects.prof")]).returncode == 0, "text of a dump without objects")

    # --top.
    for args, n in [([], 10), (["--top", "3"], 3), (["--top=2"], 2), (["--top", "0"], 15)]:
        r = run([view, "summary", "--json", "--no-symbols"] + args + [d("manysites.prof")])
        j = json.loads(r.stdout) if r.returncode == 0 else {"top_sites": []}
        check(len(j["top_sites"]) == n, f"--top {args}: {n} sites")
        if j["top_sites"]:
            check(j["top_sites"][0] == {"id": 14, "objects": 1, "bytes": 61440, "frames": ["0x100e"]},
                  f"--top {args}: biggest site first ({j['top_sites'][0]})")
    r = run([view, "summary", "--top", "3", d("manysites.prof")])
    check(r.returncode == 0 and "top 3 of 15 allocation sites" in r.stdout, "text --top 3")

    # Offline symbolization of a frame in make-test-dumps itself.
    with open(d("selfsym.expect")) as f:
        func, off = f.read().split()
    r = run([view, "summary", "--json", d("selfsym.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {"top_sites": [{"frames": ["", ""]}]}
    frames = j["top_sites"][0]["frames"]
    print("selfsym frames:", frames, j.get("symbolization_notes"))
    check(frames[0].startswith(func), f"frame symbolized and demangled ({frames[0]!r})")
    check(re.search(r"make_test_dumps\.cpp:\d+\)$", frames[0]) is not None,
          f"frame has file:line ({frames[0]!r})")
    check(frames[1] == "0x10", f"address outside every module printed raw ({frames[1]!r})")
    r = run([view, "summary", d("selfsym.prof")])
    check(r.returncode == 0 and func in r.stdout, "text summary shows the symbolized frame")
    r = run([view, "summary", "--json", d("selfsym-badid.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {"top_sites": [{"frames": [""]}],
                                                        "symbolization_notes": []}
    check(j["top_sites"][0]["frames"][0] == f"make-test-dumps+{off}",
          f"build-id mismatch: module+offset ({j['top_sites'][0]['frames'][0]!r})")
    check(any("build id differs" in n for n in j["symbolization_notes"]),
          "build-id mismatch: noted")
    r = run([view, "summary", "--json", "--no-symbols", d("selfsym.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {"top_sites": [{"frames": [""]}]}
    check(j["top_sites"][0]["frames"][0] == f"make-test-dumps+{off}", "--no-symbols: module+offset")

    # Bad dumps: exit 1, exactly one line on stderr naming the file and the offset.
    for name, needle in [("truncated.prof", "runs past end of file"),
                         ("corrupt.prof", "checksum mismatch in PROCESS record"),
                         ("newer.prof", f"format version 2.1 is newer than this reader supports ({FORMAT_VERSION})"),
                         ("empty.prof", "file header truncated")]:
        for extra in ([], ["--json"]):
            r = run([view, "summary"] + extra + [d(name)])
            lines = r.stderr.splitlines()
            check(r.returncode == 1, f"{name} {extra}: exit 1 (got {r.returncode})")
            check(r.stdout == "", f"{name} {extra}: nothing on stdout")
            check(len(lines) == 1 and re.fullmatch(
                rf"sentinel-view: {re.escape(d(name))}: offset \d+: .+", lines[0]) is not None
                and needle in lines[0], f"{name} {extra}: one error line ({r.stderr!r})")
    r = run([view, "summary", d("missing.prof")])
    check(r.returncode == 1 and r.stderr == f"sentinel-view: {d('missing.prof')}: No such file or directory\n",
          f"missing file: exit 1, one line ({r.stderr!r})")
    r = run([view, "summary", tmp])
    check(r.returncode == 1 and r.stderr.count("\n") == 1, "a directory: exit 1, one line")

    # A job's dumps side by side: several operands, or a directory of them.
    job = os.path.join(tmp, "job")
    os.makedirs(job)
    for name in ("rank0.prof", "rank1.prof"):
        shutil.copy(d("sample.prof"), os.path.join(job, name))
    r = run([view, "summary", job])
    check(r.returncode == 0 and r.stdout.startswith("job of 2 dumps") and r.stdout.count("rank0.prof") == 1
          and "rank1.prof" in r.stdout, f"summary DIR: the two dumps side by side ({r.returncode}, {r.stdout[:200]!r})")
    r = run([view, "summary", "--json", os.path.join(job, "rank0.prof"), os.path.join(job, "rank1.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check(len(j.get("dumps", [])) == 2 and all("fast_peak_bytes" in x and "steps" in x for x in j["dumps"])
          and "fast_peak_bytes_total" in j, f"summary --json DUMP DUMP: one entry per dump ({r.stdout[:200]!r})")
    r = run([view, "report", job, "-o", os.path.join(tmp, "job.html")])
    page = open(os.path.join(tmp, "job.html")).read() if r.returncode == 0 else ""
    check("a job of 2 dumps" in page and page.count("<tr>") == 3, f"report DIR: one HTML page with a row per dump")
    os.makedirs(os.path.join(tmp, "empty"))
    r = run([view, "summary", os.path.join(tmp, "empty")])
    check(r.returncode == 1 and r.stderr.count("\n") == 1 and "no .prof dump" in r.stderr,
          f"summary of a directory without dumps: exit 1, one line ({r.stderr!r})")

    # Usage.
    for args in [[], ["bogus"], ["--bogus"], ["summary"], ["summary", "--bogus", d("sample.prof")],
                 ["summary", "--top", "x", d("sample.prof")], ["summary", "--top"],
                 ["heatmap", d("sample.prof"), d("sample.prof")], ["help", "bogus"]]:
        r = run([view] + args)
        check(r.returncode == 2 and r.stdout == "" and r.stderr.startswith("sentinel-view: "),
              f"usage error {args}: exit 2 ({r.returncode}, {r.stderr.splitlines()[:1]})")
    for args, needle in [(["--help"], "summary"), (["-h"], "Usage: sentinel-view"),
                         (["summary", "--help"], "--json"), (["help", "summary"], "--no-symbols"),
                         (["--version"], "sentinel-view ")]:
        r = run([view] + args)
        check(r.returncode == 0 and needle in r.stdout, f"{args}: exit 0, shows {needle!r}")
    with open(d("sample.prof"), "rb") as f:
        p = subprocess.run([view, "summary", "--json", "-"], stdin=f, capture_output=True, text=True)
    check(p.returncode == 0 and json.loads(p.stdout)["objects"] == 6, "DUMP '-' reads stdin")
    # Options after the file.
    r = run([view, "summary", d("sample.prof"), "--json", "--no-symbols"])
    check(r.returncode == 0 and r.stdout.startswith("{"), "options after DUMP")


# ----------------------------------------------------------------------------------------------
def test_run(a, tmp):
    runner = a.run
    dummy = os.path.realpath(a.dummy_lib)
    env = clean_env()
    show = ("printf '%s|' \"$LD_PRELOAD\" \"$SENTINEL_MODE\" \"$SENTINEL_MIN_BYTES\" "
            "\"$SENTINEL_DUMP\" \"$SENTINEL_LOG\" \"$SENTINEL_FAST_BYTES\" \"$SENTINEL_OTHER\"")

    r = run([runner, "--help"], env=env)
    check(r.returncode == 0 and "Usage: sentinel-run" in r.stdout, "--help: exit 0")
    r = run([runner, "--version"], env=env)
    check(r.returncode == 0 and r.stdout.startswith("sentinel-run "), "--version: exit 0")

    for args in [[], ["--mode"], ["--bogus", "x", "true"], ["--set", "novalue", "true"],
                 ["--set", "A B=1", "true"], ["--set", "=1", "true"], ["--mode=", "true"],
                 ["--lib", dummy], ["-x", "true"]]:
        r = run([runner] + args, env=env)
        check(r.returncode == 2 and r.stderr.startswith("sentinel-run: "),
              f"usage error {args}: exit 2 ({r.returncode}, {r.stderr.splitlines()[:1]})")

    # Every option reaches the command's environment; LD_PRELOAD gets the library first.
    r = run([runner, "--lib", dummy, "--mode", "off", "--min-bytes=1M", "--dump", "/tmp/x.%p.prof",
             "--log", "debug", "--set", "fast_bytes=4G", "--set", "SENTINEL_OTHER=a=b", "--",
             "sh", "-c", show], env=clean_env(LD_PRELOAD=dummy + " " + dummy))
    check(r.returncode == 0, f"env run: exit 0 ({r.stderr.strip()})")
    check(r.stdout == f"{dummy}|off|1M|/tmp/x.%p.prof|debug|4G|a=b|",
          f"env run: variables passed ({r.stdout!r})")
    other = os.path.join(tmp, "libother.so")
    shutil.copy(dummy, other)
    r = run([runner, "--lib", dummy, "sh", "-c", 'printf %s "$LD_PRELOAD"'],
            env=clean_env(LD_PRELOAD=other))
    check(r.stdout == f"{dummy}:{other}", f"existing LD_PRELOAD kept after the library ({r.stdout!r})")
    r = run([runner, "--lib", dummy, "--mode", "off", "--mode", "track", "sh", "-c",
             'printf %s "$SENTINEL_MODE"'], env=env)
    check(r.stdout == "track", "the last of a repeated option wins")
    r = run([runner, "--lib", dummy, "--mode=run", "--policy", "first-touch", "--fast-bytes", "20%", "sh", "-c",
             'printf %s "$SENTINEL_MODE|$SENTINEL_POLICY|$SENTINEL_FAST_BYTES"'], env=env)
    check(r.stdout == "run|first-touch|20%", f"--policy and --fast-bytes passed ({r.stdout!r})")

    # Exit statuses.
    r = run([runner, "--lib", dummy, "sh", "-c", "exit 7"], env=env)
    check(r.returncode == 7, f"command without '--': status 7 passes through ({r.returncode})")
    r = run([runner, "--lib", dummy, "--", "sh", "-c", "exit 42"], env=env)
    check(r.returncode == 42, "status 42 passes through")
    r = run([runner, "--lib", dummy, "--", "sh", "-c", "kill -TERM $$"], env=env)
    check(r.returncode == -15, f"death by SIGTERM passes through ({r.returncode})")
    r = run([runner, "--lib", dummy, "--", "sh", "-c", "echo $$; exec cat /proc/$$/cmdline"],
            env=env)
    check(r.returncode == 0, "command execs in place")
    r = run([runner, "--lib", dummy, "--", "/nonexistent/command"], env=env)
    check(r.returncode == 127 and r.stderr == "sentinel-run: /nonexistent/command: No such file or directory\n",
          f"missing command: 127 ({r.returncode}, {r.stderr!r})")
    r = run([runner, "--lib", dummy, "sentinel-no-such-command-xyz"], env=env)
    check(r.returncode == 127, "command not on PATH: 127")
    noexec = os.path.join(tmp, "noexec.sh")
    with open(noexec, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(noexec, 0o644)
    r = run([runner, "--lib", dummy, noexec], env=env)
    check(r.returncode == 126 and "Permission denied" in r.stderr, f"not executable: 126 ({r.returncode})")
    r = run([runner, "--lib", dummy, tmp], env=env)
    check(r.returncode == 126, f"a directory: 126 ({r.returncode})")

    # Library discovery.
    r = run([runner, "--lib", "/nonexistent/libsentinel.so", "true"], env=env)
    check(r.returncode == 125 and r.stderr.count("\n") == 1, f"--lib missing: 125 ({r.stderr!r})")
    r = run([runner, "true"], env=clean_env(SENTINEL_LIB="/nonexistent/libsentinel.so"))
    check(r.returncode == 125 and "/nonexistent/libsentinel.so" in r.stderr, "SENTINEL_LIB missing: 125")
    r = run([runner, "--dry-run", "true"], env=clean_env(SENTINEL_LIB=dummy))
    check(r.returncode == 0 and r.stdout.splitlines()[0] == f"LD_PRELOAD={dummy}",
          f"SENTINEL_LIB is used ({r.stdout!r})")
    if a.lib:
        real = os.path.realpath(a.lib)
        r = run([runner, "--dry-run", "--mode", "track", "--", "python3", "-c", "print(1)"], env=env)
        check(r.returncode == 0 and r.stdout == f"LD_PRELOAD={real}\nSENTINEL_MODE=track\n"
              "exec python3 -c 'print(1)'\n", f"build tree: ../preload/libsentinel.so found ({r.stdout!r})")
    prefix = os.path.join(tmp, "prefix")
    os.makedirs(os.path.join(prefix, "bin"))
    os.makedirs(os.path.join(prefix, "lib"))
    shutil.copy(runner, os.path.join(prefix, "bin", "sentinel-run"))
    shutil.copy(dummy, os.path.join(prefix, "lib", "libsentinel.so"))
    r = run([os.path.join(prefix, "bin", "sentinel-run"), "--dry-run", "true"], env=env)
    check(r.returncode == 0 and r.stdout.splitlines()[0] ==
          "LD_PRELOAD=" + os.path.realpath(os.path.join(prefix, "lib", "libsentinel.so")),
          f"installed layout: ../lib/libsentinel.so found ({r.stdout!r})")
    spaced = os.path.join(tmp, "a b")
    os.makedirs(spaced)
    shutil.copy(dummy, os.path.join(spaced, "libsentinel.so"))
    r = run([runner, "--lib", os.path.join(spaced, "libsentinel.so"), "true"], env=env)
    check(r.returncode == 125 and "LD_PRELOAD cannot hold" in r.stderr, "a library path with a blank: 125")


# ----------------------------------------------------------------------------------------------
def test_e2e(a, tmp):
    py = python_with(a, "numpy", "e2e")
    env = clean_env()
    dump = os.path.join(tmp, "py.%p.prof")
    prog = "import numpy; a=[numpy.ones(100000) for _ in range(10)]"
    r = run([a.run, "--lib", a.lib, "--min-bytes", "4096", "--dump", dump, "--", py, "-c", prog],
            env=env, timeout=240)
    check(r.returncode == 0, f"python3 under sentinel-run: exit 0 ({r.returncode}, {r.stderr.strip()[:500]})")
    dumps = glob.glob(os.path.join(tmp, "py.*.prof"))
    if not check(len(dumps) == 1, f"one dump written ({dumps})"):
        return
    r = run([a.view, "summary", dumps[0]], timeout=240)
    check(r.returncode == 0, f"summary of the real dump: exit 0 ({r.stderr.strip()})")
    print(r.stdout)
    r = run([a.view, "summary", "--json", dumps[0]], timeout=240)
    check(r.returncode == 0, "summary --json of the real dump: exit 0")
    j = json.loads(r.stdout)
    check(j["objects"] >= 10, f"at least the 10 arrays tracked ({j['objects']})")
    check(j["tracked_bytes"] >= 10 * 800000, f"tracked bytes ({j['tracked_bytes']})")
    check(j["peak_live_bytes"] >= 10 * 800000, f"peak live bytes ({j['peak_live_bytes']})")
    check(j["peak_live_bytes"] <= j["tracked_bytes"], "peak <= tracked")
    check(j["pid"] > 0 and j["executable"].startswith("/usr/bin/python3"), "process recorded")
    check(j["stats"].get("tracked_allocations") == j["objects"], "tracked_allocations == objects")
    frames = [f for s in j["top_sites"] for f in s["frames"]]
    symbolized = [f for f in frames if re.match(r"[A-Za-z_]", f) and not re.fullmatch(r"\S+\+0x[0-9a-f]+", f)]
    check(len(symbolized) > 0, f"frames symbolized ({len(symbolized)} of {len(frames)})")
    check(any(re.search(r"multiarray|PyArray|PyDataMem|npy_", f) for f in frames),
          "a numpy frame among the top sites")
    check(any(re.search(r"_PyEval_EvalFrameDefault|PyObject_|_PyFunction|Py\w+", f) for f in frames),
          "a Python interpreter frame among the top sites")



# ----------------------------------------------------------------------------------------------
MiB = 1 << 20
KiB = 1 << 10


def test_profile(a, tmp):
    """The synthetic loop of training_dump.h (small_loop_spec): 3 weights, phase 0 = 12 steps of 6
    allocations in 3 intervals, phase 1 = 3 steps of 4 allocations in 2 intervals, steps 1-2 of
    phase 0 profiled at 64 KiB; the touches are declared there."""
    view = a.view
    d = make_dumps(a, tmp)
    if not d:
        return

    r = run([view, "summary", "--json", "--no-symbols", d("loop.prof")])
    check(r.returncode == 0 and r.stderr == "", f"summary --json loop: exit 0 ({r.stderr.strip()})")
    j = json.loads(r.stdout)
    expect = {"version": FORMAT_VERSION, "objects": 87, "steps": 15, "allocations_per_step": 6,
              "intervals_per_step": 3, "profiled_steps": 2, "granularity_bytes": 65536,
              "faults": 530, "identity_count": 9, "group_count": 8,
              "touched_bytes_per_step": 16 * MiB + 512 * KiB + 64 * KiB, "dropped_touches": 0,
              "interval_ns": [4000000, 4000000, 4000000],
              "step_flags": {"explicit": 0, "inferred": 2, "new_phase": 2, "profiled": 2}}
    for k, v in expect.items():
        check(j.get(k) == v, f"loop json {k} == {v!r} (got {j.get(k)!r})")
    ph = [(p["phase"], p["steps"], p["first_step"], p["last_step"], p["allocations_per_step"],
           p["intervals_per_step"], p["profiled_steps"], p["intervals"], p["median_step_ns"])
          for p in j["phases"]]
    check(ph == [(0, 12, 0, 11, 6, 3, 2, [[0, 2], [2, 4], [4, 6]], 12000000),
                 (1, 3, 12, 14, 4, 2, 0, [[0, 2], [2, 4]], 5000000)], f"loop json phases ({ph})")
    check(j["profile"] == {"granularity_bytes": 65536, "profiled_steps": 2, "phase": 0,
                           "first_profiled_step": 1, "faults": 530, "fault_handler_ns": 530 * 3500,
                           "syscall_unprotects": 0, "counters": ["PAPI_TOT_INS", "PAPI_L3_TCM"]},
          f"loop json profile ({j['profile']})")
    gr = [(g["id"], g["lifetime"], g["members"], g["bytes"], g["intervals"], g["touched_bytes_per_step"])
          for g in j["groups"]]
    check(gr == [(0, "persistent", 1, 4 * MiB, "0,2", 8 * MiB),
                 (6, "step", 2, 2 * MiB + 512 * KiB, "1-2", 4 * MiB),
                 (2, "persistent", 1, 2 * MiB, "0-2", 1536 * KiB),
                 (1, "persistent", 1, 1 * MiB, "1", 512 * KiB),
                 (4, "step", 1, 1 * MiB, "0,2", 2 * MiB),
                 (5, "short", 1, 256 * KiB, "0", 256 * KiB),
                 (7, "short", 1, 256 * KiB, "2", 256 * KiB),
                 (3, "persistent", 1, 64 * KiB, "2", 64 * KiB)], f"loop json groups ({gr})")
    ti = [(i["id"], i["size"], i["lifetime"], i["ordinal"], i["birth_interval"], i["death_interval"],
           i["instances"], i["touched_bytes_per_step"], i["group"]) for i in j["top_identities"]]
    check(ti[:4] == [(0, 4 * MiB, "persistent", None, None, None, 1, 8 * MiB, 0),
                     (6, 2 * MiB, "step", 2, 1, 2, 2, 3 * MiB, 6),
                     (2, 2 * MiB, "persistent", None, None, None, 1, 1536 * KiB, 2),
                     (4, 1 * MiB, "step", 0, 0, 2, 2, 2 * MiB, 4)], f"loop json top_identities ({ti[:4]})")
    check(len(ti) == 9 and ti[-1] == (3, 64 * KiB, "persistent", 5, 2, None, 3, 64 * KiB, 3),
          f"loop json: the state identity outlives its step, 3 instances ({ti[-1:]})")
    tt = [i["id"] for i in j["top_identities_by_touches"]]
    check(tt == [0, 6, 4, 2, 7, 1, 5, 8, 3], f"loop json top_identities_by_touches ({tt})")
    r = run([view, "summary", "--json", "--top", "2", "--no-symbols", d("loop.prof")])
    j2 = json.loads(r.stdout) if r.returncode == 0 else {}
    check(len(j2.get("groups", [])) == 2 and len(j2.get("top_identities", [])) == 2,
          "--top 2 limits groups and identities")

    r = run([view, "summary", "--no-symbols", d("loop.prof")])
    check(r.returncode == 0, "summary loop: exit 0")
    print(r.stdout)
    for needle in ["steps            15 detected in 2 phases (2 inferred before lock-on, 0 marked, 2 profiled)",
                   "per step         6 allocations, 3 intervals (phase 0",
                   "phase 0 (main): 12 steps (#0-#11), 6 allocations per step, 3 intervals, step time 12.0 ms, 2 profiled",
                   "    profiled 2 steps from step #1, 9 identities, 8 groups\n",
                   "phase 1: 3 steps (#12-#14), 4 allocations per step, 2 intervals, step time 5.0 ms\n",
                   "intervals (in-step ordinals) [0,2) [2,4) [4,6)",
                   "profile          2 steps from step #1 (phase 0), granularity 64.0 KiB, 530 faults",
                   "counters: PAPI_TOT_INS, PAPI_L3_TCM",
                   "identities       9 (4 persistent, 3 step-scoped, 2 short-lived), 8 groups",
                   "top 9 of 9 identities of phase 0 by bytes", "co-allocation groups of phase 0 by bytes"]:
        check(needle in r.stdout, f"summary loop text has {needle!r}")

    # Track mode: steps and intervals, no profile.
    r = run([view, "summary", "--json", "--no-symbols", d("loop-track.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    for k, v in {"steps": 15, "allocations_per_step": 6, "intervals_per_step": 3, "profiled_steps": 0,
                 "profile": None, "granularity_bytes": 0, "identity_count": 0, "groups": []}.items():
        check(j.get(k, "missing") == v, f"track-mode json {k} == {v!r} (got {j.get(k, 'missing')!r})")

    # Heatmap of the known pattern.
    r = run([view, "heatmap", "--width", "100", d("loop.prof")])
    check(r.returncode == 0 and r.stderr == "", f"heatmap loop: exit 0 ({r.stderr.strip()})")
    print(r.stdout)
    rows = [l for l in r.stdout.splitlines() if "|" in l][1:]
    cells = [(l.split()[0], l.split()[1], l[l.index("|") + 1:l.rindex("|")]) for l in rows]
    B, D = "\u2588", "\u00b7"
    expect_rows = [("0", "persistent", B * 3 + D * 3 + B * 3), ("2", "persistent", "\u2592" * 9),
                   ("1", "persistent", D * 3 + "\u2593" * 3 + D * 3), ("3", "persistent", D * 6 + B * 3),
                   ("4", "step", B * 3 + D * 3 + B * 3), ("6", "step", D * 3 + B * 3 + "\u2593" * 3),
                   ("5", "short", B * 3 + D * 6), ("7", "short", D * 6 + B * 3)]
    check(cells == expect_rows, f"heatmap rows: groups in order, cells as declared ({cells})")
    check(r.stdout.rstrip().endswith("\u2588 >= 75%"), "heatmap legend")
    check("|0  1  2  |" in r.stdout, "heatmap interval axis")
    r = run([view, "heatmap", "--identities", "--ascii", "--width", "100", d("loop.prof")])
    rows = [l for l in r.stdout.splitlines() if "|" in l][1:]
    ids = {l.split()[0]: l[l.index("|") + 1:l.rindex("|")] for l in rows}
    check(r.returncode == 0 and all(ord(ch) < 128 for ch in r.stdout), "heatmap --ascii is ASCII")
    check(ids.get("5") == "###      " and ids.get("6") == "   ###***" and ids.get("3") == "......###",
          f"heatmap --identities: lifetimes blank, touches shaded ({ids})")
    r = run([view, "heatmap", "--step", "1", "--top", "2", "--width", "100", d("loop.prof")])
    check(r.returncode == 0 and "profiled step 1" in r.stdout and "6 more groups not drawn" in r.stdout,
          "heatmap --step 1 --top 2")
    r = run([view, "heatmap", "--width", "40", d("demo.prof")])
    widths = [len(l) for l in r.stdout.splitlines() if "|" in l]
    check(r.returncode == 0 and max(widths) <= 80, f"heatmap narrow width stays narrow ({max(widths)})")
    r = run([view, "heatmap", d("sample.prof")])
    check(r.returncode == 0 and "no access profile" in r.stdout, "heatmap of a 1.0 dump says so")
    r = run([view, "heatmap", "--phase", "1", d("loop.prof")])
    check(r.returncode == 0 and r.stdout == f"{d('loop.prof')}: no access profile for phase 1 (profiled phases: 0)\n",
          f"heatmap of a phase that was not profiled says so ({r.stdout!r})")
    r = run([view, "summary", "--phase", "1", d("sample.prof")])
    check(r.returncode == 1 and r.stderr == f"sentinel-view: {d('sample.prof')}: no phase 1 in this dump "
          "(it has no phases: no STEPS, INTERVALS or PROFILE record)\n", f"--phase on a dump without phases ({r.stderr!r})")
    r = run([view, "summary", "--no-symbols", "--phase", "1", d("loop.prof")])
    check(r.returncode == 0 and "profile          none for phase 1 (profiled phases: 0)" in r.stdout
          and "identities       " not in r.stdout, "summary --phase 1 of the loop: not profiled, no identities")
    for args in [["heatmap"], ["heatmap", "--width", "3", d("loop.prof")], ["heatmap", "--scale", "x", d("loop.prof")],
                 ["heatmap", "--step", "7", d("loop.prof")], ["heatmap", "--bogus", d("loop.prof")]]:
        r = run([view] + args)
        check(r.returncode == 2 and r.stderr.startswith("sentinel-view: "), f"usage error {args[1:]}")

    # Trace JSON.
    out = d("loop.trace.json")
    r = run([view, "trace", "--no-symbols", d("loop.prof"), "-o", out])
    check(r.returncode == 0 and r.stderr == "", f"trace loop: exit 0 ({r.stderr.strip()})")
    try:
        with open(out) as f:
            t = json.load(f)
    except ValueError as e:
        check(False, f"trace JSON parses ({e})")
        return
    ev = t["traceEvents"]
    objs = [e for e in ev if e["ph"] == "X" and e.get("cat", "").startswith("object")]
    check(len(objs) == 87, f"one X slice per object ({len(objs)})")
    check(all(isinstance(e["ts"], (int, float)) and e["dur"] >= 0 for e in objs), "slices have ts and dur")
    check(sum(1 for e in objs if "identity" in e["args"]) == 75,
          "objects of phase 0 and the weights carry their identity")
    check(sum(1 for e in objs if e["cat"] == "object,short") == 24, "short-lived objects categorised")
    steps = [e for e in ev if e["ph"] == "X" and e.get("cat") == "step"]
    check(len(steps) == 15 and sum(1 for e in ev if e["ph"] == "i" and e.get("cat") == "step") == 15,
          "a slice and an instant per step")
    check(sum(1 for e in ev if e["ph"] == "X" and e.get("cat") == "interval") == 12 * 3 + 3 * 2,
          "a slice per interval of every step")
    cnt = [e for e in ev if e["ph"] == "C"]
    check(len(cnt) > 2 and all("bytes" in e["args"] for e in cnt), "live-bytes counter present")
    check(max(e["args"]["bytes"] for e in cnt) == 11272192, "counter peak == peak live bytes")
    check(cnt[-1]["args"]["bytes"] == 7 * MiB, "counter ends at the bytes alive at exit")
    lanes = {}
    for e in ev:
        if e["ph"] == "X":
            lanes.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    overlaps = 0
    for spans in lanes.values():
        spans.sort()
        overlaps += sum(1 for x, y in zip(spans, spans[1:]) if y[0] < x[1] - 1e-6)
    check(overlaps == 0, f"no overlapping slices on a track ({overlaps})")
    names = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    check(all(e["tid"] in names for e in objs), "every object track is named")
    r = run([view, "trace", "--no-symbols", d("sample.prof"), "-o", "-"])
    try:
        t = json.loads(r.stdout)
        check(sum(1 for e in t["traceEvents"] if e["ph"] == "X") == 6, "trace of a 1.0 dump to stdout")
        check(sum(1 for e in t["traceEvents"] if e["ph"] == "i" and e.get("cat") == "mark") == 2, "marks as instants")
    except ValueError as e:
        check(False, f"trace -o - parses ({e})")
    r = run([view, "trace", d("weird.prof"), "-o", d("weird.json")])
    with open(d("weird.json"), "rb") as f:
        raw = f.read()
    check(r.returncode == 0 and json.loads(raw.decode("utf-8")) is not None, "trace with odd strings is valid JSON")
    r = run([view, "trace", d("loop.prof"), "-o", os.path.join(tmp, "no", "such", "dir.json")])
    check(r.returncode == 1 and r.stderr.count("\n") == 1, f"unwritable output: exit 1, one line ({r.stderr!r})")
    r = run([view, "trace", d("truncated.prof"), "-o", d("x.json")])
    check(r.returncode == 1 and "offset" in r.stderr, "trace of a broken dump: exit 1")
    r = run([view, "trace", "--no-symbols", d("loop.prof")])
    check(r.returncode == 0 and os.path.exists(d("loop.prof.trace.json")), "trace default output DUMP.trace.json")

# ----------------------------------------------------------------------------------------------
FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "tests", "fixtures", "profiles")


def test_plan(a, tmp):
    view = a.view
    d = make_dumps(a, tmp)
    if not d:
        return

    # The recorded PLAN is the runtime's make_plan() on the same records: recomputed identically.
    r = run([view, "plan", d("tiered.prof")])
    print(r.stdout)
    check(r.returncode == 0 and r.stderr == "", f"plan tiered: exit 0 ({r.stderr.strip()})")
    for needle in ["phase 0: policy sentinel (TIERING record), 3 intervals, 9 identities",
                   "budget           25% of the peak = ", "(TIERING record); footprint peak 10.8 MiB",
                   "cost model       2.00 GiB/s measured, measured interval durations",
                   "recorded plan    identical to the recomputed one",
                   "9 identities by size (F fast, S slow, - not alive"]:
        check(needle in r.stdout, f"plan tiered text has {needle!r}")
    rows = [l.split() for l in r.stdout.splitlines() if re.match(r"^\s+\d+\s+(persistent|step|short)\s", l)]
    check(len(rows) == 9, f"plan tiered: 9 identity rows ({len(rows)})")
    strips = [x for row in rows for x in row if re.fullmatch(r"[FS-]{3}", x)]
    check(len(strips) == 9, f"plan tiered: a 3-interval strip per row ({strips})")
    r = run([view, "plan", "--json", d("tiered.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    rp = j.get("recorded_plan") or {}
    check(rp.get("compared") is True and rp.get("identical") is True and rp.get("differences") == "",
          f"plan --json: recorded plan identical ({rp})")
    for k, v in {"phase": 0, "policy": "sentinel", "policy_source": "TIERING record", "intervals": 3,
                 "budget_share_ppm": 250000, "migrate_bytes_per_s": 2 << 30, "bandwidth_measured": True,
                 "footprint_peak_bytes": 11337728, "entry_count": 9, "interval_durations": True}.items():
        check(j.get(k) == v, f"plan --json {k} == {v!r} (got {j.get(k)!r})")
    check(j.get("fast_budget_bytes") == 11337728 * 250000 // 1000000,
          f"budget = 25% of the peak ({j.get('fast_budget_bytes')})")
    check(0 < j.get("fast_peak_bytes", 0) <= j.get("fast_budget_bytes", 0), "planned fast peak within the budget")
    ents = j.get("entries", [])
    check(len(ents) == 9 and all(len(e["strip"]) == 3 for e in ents), "plan --json: 9 entries with strips")
    sizes = [e["size"] for e in ents]
    check(sizes == sorted(sizes, reverse=True), "entries largest first")
    for e in ents:
        fm, am = e["fast_mask"], e["alive_mask"]
        strip = "".join("-" if not am >> k & 1 else "F" if fm >> k & 1 else "S" for k in range(3))
        check(strip == e["strip"] and fm & ~am == 0, f"identity {e['identity']}: strip {e['strip']} from the masks")
        if e["pool"]:
            check(e["lifetime"] == "short" and e["birth_fast"], f"identity {e['identity']}: pool entry is short-lived")
    check(abs(j.get("predicted_hit_share", -1) - j.get("predicted_hit_ppm", 0) / 1e6) < 1e-9, "share = ppm / 1e6")

    # The step-time trial kept the schedule without moves: recomputed identically, shown by summary.
    r = run([view, "plan", d("tiered-trial.prof")])
    check(r.returncode == 0 and "recorded plan    identical to the recomputed one" in r.stdout,
          f"plan tiered-trial: the no-move schedule recomputed ({[l for l in r.stdout.splitlines() if 'recorded' in l]})")
    r = run([view, "summary", d("tiered-trial.prof")])
    check(r.returncode == 0 and "trial            phase 0: moving schedule 30.0 ms/step over 2 steps" in r.stdout
          and "without moves 20.0 ms/step over 2 steps" in r.stdout and ": kept the schedule without moves" in r.stdout
          and "(no moves)" in r.stdout,
          f"summary shows the trial ({[l for l in r.stdout.splitlines() if 'trial' in l or 'plan ' in l]})")
    r = run([view, "summary", "--json", d("tiered-trial.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    tr = (j.get("plan") or {}).get("trial") or {}
    check(tr.get("state") == "done" and tr.get("kept") == "no-moves" and tr.get("moving_step_ns") == 30000000
          and tr.get("no_moves_step_ns") == 20000000 and (j.get("plan") or {}).get("no_moves") is True,
          f"summary --json plan.trial ({tr})")
    check(all("trial" in ph for ph in j.get("phases", [])), "summary --json: every phase has a trial key")
    r = run([view, "report", "--no-symbols", d("tiered-trial.prof"), "-o", d("trial.html")])
    check(r.returncode == 0 and "Step-time trial: moving schedule" in open(d("trial.html")).read(),
          f"report shows the trial ({r.stderr.strip()})")

    # The trial re-planned with the migrator's measured bandwidth and kept it (1.6): recomputed with the
    # header's bandwidth, and summary says what was measured and kept.
    r = run([view, "plan", d("tiered-replanned.prof")])
    check(r.returncode == 0 and "recorded plan    identical to the recomputed one" in r.stdout,
          f"plan tiered-replanned: recomputed ({[l for l in r.stdout.splitlines() if 'recorded' in l]})")
    r = run([view, "summary", d("tiered-replanned.prof")])
    check(r.returncode == 0 and "under the moving schedule: re-planned with it 25.0 ms/step over 2 steps" in r.stdout
          and ": kept the re-planned schedule" in r.stdout and "phase 0: in emulated time, moving schedule" in r.stdout,
          f"summary shows the re-plan, timed in emulated time ({[l for l in r.stdout.splitlines() if 'trial' in l]})")
    r = run([view, "summary", "--json", d("tiered-replanned.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    tr = (j.get("plan") or {}).get("trial") or {}
    check(tr.get("kept") == "replanned" and tr.get("replan") == "replanned" and tr.get("replanned_step_ns") == 25000000
          and tr.get("replanned_steps") == 2 and tr.get("achieved_bytes_per_s", 0) > 0 and tr.get("clock") == "emulated",
          f"summary --json plan.trial re-planned ({tr})")

    # No trial; the bandwidth watch re-planned with the migrator's measured bandwidth (1.12): recomputed
    # with the header's bandwidth, and summary says what the watch measured and did.
    r = run([view, "plan", d("tiered-watched.prof")])
    check(r.returncode == 0 and "recorded plan    identical to the recomputed one" in r.stdout,
          f"plan tiered-watched: recomputed ({[l for l in r.stdout.splitlines() if 'recorded' in l]})")
    r = run([view, "summary", d("tiered-watched.prof")])
    watch_lines = [l for l in r.stdout.splitlines() if l.startswith("watch ")]
    check(r.returncode == 0 and len(watch_lines) == 1 and "over the latest of 1 window of steps" in watch_lines[0]
          and ": re-planned with it from step 9 (predicted" in watch_lines[0]
          and not any(l.startswith("trial ") for l in r.stdout.splitlines()),
          f"summary shows the watch and no trial ({watch_lines})")
    r = run([view, "summary", "--json", d("tiered-watched.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    w = (j.get("plan") or {}).get("watch") or {}
    check(w.get("status") == "replanned" and w.get("windows") == 1 and w.get("replan_step") == 9
          and w.get("bytes_per_s", 0) > 0 and (j.get("plan") or {}).get("trial") is None
          and all("watch" in ph for ph in j.get("phases", [])),
          f"summary --json plan.watch ({w})")

    r = run([view, "plan", d("tiered-differs.prof")])
    check(r.returncode == 0 and "recorded plan    DIFFERS from the recomputed one: 1 entry differs" in r.stdout,
          f"one flipped bit is reported ({[l for l in r.stdout.splitlines() if 'recorded' in l]})")
    r = run([view, "plan", "--json", d("tiered-differs.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check((j.get("recorded_plan") or {}).get("identical") is False, "plan --json: identical false")

    # SENTINEL_STEP_COSTS (1.4): the PLAN record's costs replay the plan; an option overrides one of them.
    r = run([view, "plan", "--json", d("tiered-costs.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    rp = j.get("recorded_plan") or {}
    check(j.get("slow_ns_per_kib") == 200 and j.get("move_ns_per_kib") == 500 and j.get("costs_source") == "PLAN record"
          and j.get("objective") == "step time" and j.get("modeled_step") is not None and rp.get("identical") is True,
          f"plan tiered-costs: the recorded costs are used ({j.get('slow_ns_per_kib')}, {j.get('move_ns_per_kib')}, "
          f"{j.get('costs_source')}, {j.get('objective')}, {rp})")
    r = run([view, "plan", d("tiered-costs.prof")])
    lines = [l for l in r.stdout.splitlines() if l.startswith("step time ")]
    print(lines)
    check(r.returncode == 0 and len(lines) == 1 and "(200 ns/KiB)" in lines[0] and "(500 ns/KiB, PLAN record)" in lines[0],
          f"plan tiered-costs text: the step time with the recorded costs ({lines})")
    # auto priced the moves for a training thread with a CPU of its own: replayed as recorded, and said why.
    r = run([view, "plan", "--json", d("tiered-off-thread.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check(j.get("move_ns_per_kib") == 200 and "the migrator on a CPU of its own" in (j.get("costs_source") or "")
          and (j.get("recorded_plan") or {}).get("identical") is True,
          f"plan tiered-off-thread: the recorded move cost, said to be the training thread's ({j.get('costs_source')}, "
          f"{j.get('recorded_plan')})")
    r = run([view, "plan", "--json", "--move-ns-per-kib", "900", d("tiered-off-thread.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check(j.get("costs_source") == "command line and PLAN record",
          f"plan tiered-off-thread --move-ns-per-kib 900: the given cost, no word of the recorded one ({j.get('costs_source')})")
    r = run([view, "plan", "--json", "--move-ns-per-kib", "900", d("tiered-costs.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check(j.get("slow_ns_per_kib") == 200 and j.get("move_ns_per_kib") == 900
          and j.get("costs_source") == "command line and PLAN record"
          and (j.get("recorded_plan") or {}).get("compared") is False,
          f"plan tiered-costs --move-ns-per-kib 900: overrides one cost, not compared ({j.get('costs_source')})")
    r = run([view, "plan", "--json", "--slow-ns-per-kib", "1000000001", d("tiered-costs.prof")])
    check(r.returncode == 2 and "--slow-ns-per-kib: not a number" in r.stderr,
          f"plan: a cost of ten digits is refused ({r.stderr.strip()})")
    # The slow cost the runtime fitted (1.9): the plan and every baseline priced at it, beside the recorded costs.
    r = run([view, "plan", "--json", d("tiered-fitted.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    ms, ft = j.get("modeled_step") or {}, j.get("fitted") or {}
    fb, mb = ft.get("baselines") or {}, ms.get("baselines") or {}
    check(j.get("slow_ns_per_kib") == 200 and ft.get("slow_ns_per_kib") == 800 and ft.get("steps") == 5
          and ft.get("measured_step_ns") == 40000000 and sorted(fb) == sorted(mb) and len(fb) == 5
          and fb["all-fast"] == mb["all-fast"] == ms.get("base_ns")
          and abs((fb["all-slow"] - ms["base_ns"]) - (mb["all-slow"] - ms["base_ns"]) * 4) <= 4
          and ft.get("step_ns", 0) >= ms.get("step_ns", 0),
          f"plan tiered-fitted --json: priced at the fitted cost ({ft}, {ms})")
    r = run([view, "plan", d("tiered-fitted.prof")])
    lines = [l for l in r.stdout.splitlines() if l.startswith("fitted ")]
    check(r.returncode == 0 and len(lines) == 1 and "took 40.0 ms a step (5 steady steps): slow accesses 800 ns/KiB" in lines[0]
          and "all-slow" in lines[0], f"plan tiered-fitted: the fitted line ({lines})")
    r = run([view, "plan", "--json", d("tiered-costs.prof")])
    check(r.returncode == 0 and json.loads(r.stdout).get("fitted", 0) is None, "plan tiered-costs --json: no fit, fitted null")
    r = run([view, "summary", "--no-symbols", d("tiered-fitted.prof")])
    lines = [l for l in r.stdout.splitlines() if l.startswith("fitted ")]
    check(r.returncode == 0 and lines == ["fitted           phase 0: took 40.0 ms a step (median of 5 steady steps, wall "
                                          "time): the slow node costs 800 ns per access-weighted KiB (the plan was given 200)"],
          f"summary tiered-fitted: the fitted line ({lines})")
    r = run([view, "summary", "--json", d("tiered-fitted.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    fits = [ph.get("fit") for ph in j.get("phases", [])]
    check((j.get("plan") or {}).get("fit", {}).get("status") == "fitted" and {"status": "fitted", "slow_ns_per_kib": 800,
          "steps": 5, "step_ns": 40000000} in fits, f"summary --json: plan.fit and the phase's fit ({fits})")
    r = run([view, "summary", "--no-symbols", d("tiered-off-thread.prof")])
    lines = [l for l in r.stdout.splitlines() if "step costs" in l]
    check(r.returncode == 0 and len(lines) == 1 and "200 ns/KiB moved (for the training thread: the migrator on a CPU of "
          "its own)" in lines[0], f"summary tiered-off-thread: the move cost said to be the training thread's ({lines})")
    r = run([view, "summary", "--json", d("tiered-off-thread.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    flags = [ph.get("moves_off_thread") for ph in j.get("phases", []) if ph.get("planned")]
    check(flags == [True], f"summary --json tiered-off-thread: the planned phase's moves_off_thread ({flags})")
    trial = (j.get("plan") or {}).get("trial") or {}
    check(trial.get("move_fit") == "fitted" and trial.get("fit_move_ns_per_kib") == 4200,
          f"summary --json tiered-off-thread: the trial's fitted move cost (1.10) ({trial})")
    r = run([view, "summary", "--no-symbols", d("tiered-off-thread.prof")])
    lines = [l for l in r.stdout.splitlines() if l.startswith("trial ")]
    check(r.returncode == 0 and any("a moved KiB cost the training thread 4200 ns (fitted)" in l for l in lines),
          f"summary tiered-off-thread: the fitted move cost on the trial's line ({lines})")
    r = run([view, "plan", "--json", d("tiered.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check(j.get("slow_ns_per_kib") == 0 and j.get("costs_source") == "none" and j.get("objective") == "fast-hit bytes",
          f"plan tiered (no costs recorded): none ({j.get('costs_source')})")
    r = run([view, "summary", "--no-symbols", d("tiered-costs.prof")])
    lines = [l.strip() for l in r.stdout.splitlines() if "step costs" in l]
    print(lines)
    check(r.returncode == 0 and len(lines) == 1
          and lines[0].startswith("step costs 200 ns/KiB slow, 500 ns/KiB moved: modeled step "),
          f"summary tiered-costs: the costs and the modeled step ({lines})")
    r = run([view, "summary", "--json", "--no-symbols", d("tiered-costs.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    ph = [p for p in j.get("phases", []) if p.get("planned")]
    ms = (ph[0].get("modeled_step") or {}) if ph else {}
    check(len(ph) == 1 and ph[0].get("slow_ns_per_kib") == 200 and ph[0].get("move_ns_per_kib") == 500
          and ms.get("step_ns") == ms.get("base_ns", -1) + ms.get("slow_ns", 0) + ms.get("move_ns", 0),
          f"summary --json tiered-costs: the phase's costs and modeled step ({ph[0] if ph else None})")
    r = run([view, "summary", "--json", "--no-symbols", d("tiered.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    ph = [p for p in j.get("phases", []) if p.get("planned")]
    check(len(ph) == 1 and ph[0].get("slow_ns_per_kib") == 0 and ph[0].get("modeled_step") is None,
          f"summary --json tiered (no costs): 0 and null")

    # Other settings than the recorded plan's: planned, not compared.
    r = run([view, "plan", "--policy", "hot", d("tiered.prof")])
    check(r.returncode == 0 and "policy hot (command line)" in r.stdout and "other settings, not compared" in r.stdout,
          "--policy hot: not compared with the recorded sentinel plan")
    r = run([view, "plan", "--json", "--fast-bytes=1M", d("tiered.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check(j.get("fast_budget_bytes") == 1 << 20 and j.get("budget_share_ppm") is None
          and j.get("budget_source") == "command line" and (j.get("recorded_plan") or {}).get("compared") is False,
          f"--fast-bytes=1M: absolute budget ({j.get('fast_budget_bytes')}, {j.get('budget_source')})")
    r = run([view, "plan", "--json", d("loop-hot-config.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check(j.get("policy") == "hot" and j.get("policy_source") == "configuration"
          and j.get("fast_budget_bytes") == 3 << 20 and j.get("budget_source") == "configuration"
          and j.get("recorded_plan", 0) is None and j.get("bandwidth_measured") is False,
          f"SENTINEL_POLICY / SENTINEL_FAST_BYTES from the configuration ({j.get('policy')}, {j.get('fast_budget_bytes')})")
    r = run([view, "plan", "--json", d("loop-auto-config.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check(j.get("policy") == "all-fast" and j.get("budget_share_ppm") == 200000
          and j.get("budget_source", "").startswith("default; the run's SENTINEL_FAST_BYTES=auto"),
          f"SENTINEL_FAST_BYTES=auto: the 20% default, said so ({j.get('budget_source')})")
    r = run([view, "plan", "--json", d("loop12.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check(j.get("policy") == "sentinel" and j.get("budget_share_ppm") == 200000 and j.get("policy_source") == "default",
          "no tiering records, no configuration: sentinel and 20%")
    r = run([view, "plan", "--top", "2", d("loop12.prof")])
    check(r.returncode == 0 and "top 2 of 9 identities by size" in r.stdout, "--top 2")

    # The policies' bounds, on the synthetic loop and on every recorded profile.
    dumps = [d("loop12.prof")] + sorted(glob.glob(os.path.join(FIXTURES, "*.prof")))
    check(len(dumps) >= 5, f"the recorded profile fixtures are there ({len(dumps) - 1})")
    for dump in dumps:
        share = {}
        for pol in ["sentinel", "first-touch", "all-slow", "all-fast", "hot"]:
            r = run([view, "plan", "--json", "--policy", pol, "--fast-bytes", "20%", dump])
            if not check(r.returncode == 0, f"plan {os.path.basename(dump)} {pol}: exit 0 ({r.stderr.strip()})"):
                continue
            j = json.loads(r.stdout)
            share[pol] = j["predicted_hit_share"]
            if pol != "all-fast":
                check(j["fast_peak_bytes"] <= j["fast_budget_bytes"], f"{os.path.basename(dump)} {pol}: within the budget")
        if len(share) == 5:
            print(os.path.basename(dump), share)
            check(share["all-fast"] == 1.0 and share["all-slow"] == 0.0, f"{os.path.basename(dump)}: all-fast 1, all-slow 0")
            check(share["sentinel"] >= share["first-touch"], f"{os.path.basename(dump)}: sentinel >= first-touch")

    # The step-time model: with the costs, the plan's modeled step time and the baselines'; the sentinel
    # plan never modeled slower than no-moves or first-touch, all-fast the measured durations alone.
    for dump in sorted(glob.glob(os.path.join(FIXTURES, "*.prof"))):
        name = os.path.basename(dump)
        r = run([view, "plan", "--json", "--fast-bytes", "20%", "--slow-ns-per-kib", "200", "--move-ns-per-kib", "500", dump])
        j = json.loads(r.stdout) if r.returncode == 0 else {}
        ms = j.get("modeled_step") or {}
        bl = ms.get("baselines") or {}
        check(j.get("objective") == "step time" and j.get("slow_ns_per_kib") == 200 and j.get("move_ns_per_kib") == 500
              and ms.get("step_ns") == ms.get("base_ns", 0) + ms.get("slow_ns", 0) + ms.get("move_ns", 0)
              and sorted(bl) == ["all-fast", "all-slow", "first-touch", "hot", "no-moves"],
              f"plan {name} with costs: objective, modeled step and baselines ({j.get('objective')}, {ms})")
        if bl:
            check(ms["step_ns"] <= bl["no-moves"] and ms["step_ns"] <= bl["first-touch"] and bl["all-fast"] == ms["base_ns"]
                  and bl["all-slow"] >= ms["step_ns"], f"plan {name}: sentinel <= no-moves, first-touch; all-fast = base ({ms})")
    mlp = os.path.join(FIXTURES, "mlp.prof")
    r = run([view, "plan", "--slow-ns-per-kib", "200", "--move-ns-per-kib", "500", mlp])
    lines = [l for l in r.stdout.splitlines() if l.startswith(("step time ", "baselines "))]
    check(r.returncode == 0 and len(lines) == 2 and lines[0].startswith("step time        modeled ")
          and "; the trial's objective" in lines[0] and lines[1].startswith("baselines        all-fast "),
          f"plan mlp with costs: the step time and baselines lines ({lines})")
    r = run([view, "plan", mlp])
    lines = [l for l in r.stdout.splitlines() if l.startswith(("step time ", "baselines "))]
    check(r.returncode == 0 and lines == ["step time        not modeled: needs the costs (--slow-ns-per-kib N, --move-ns-per-kib M)"],
          f"plan mlp without costs: one line says the model needs them ({lines})")
    r = run([view, "plan", "--json", mlp])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check(j.get("objective") == "fast-hit bytes" and "modeled_step" in j and j["modeled_step"] is None,
          f"plan mlp --json without costs: objective fast-hit bytes, modeled_step null ({j.get('objective')})")


    # The tiering records in summary (text and JSON) and trace.
    r = run([view, "summary", "--no-symbols", d("tiered.prof")])
    print(r.stdout[r.stdout.find("\ntiering"):])
    check(r.returncode == 0, "summary tiered: exit 0")
    for needle in ["tiering          policy sentinel, fast node 0, slow node 1 (move_pages), budget 25% of each phase's profiled peak (phase 0: 2.70 MiB)",
                   "fast-tier peak 2.56 MiB over the run; migrated 9.00 MiB at 2.00 GiB/s measured; 3 late migrations, 17 failed pages, 1 raced free",
                   "kernel NUMA balancing was on (it fights explicit placement)",
                   "placed at birth 40 fast, 20 slow", "6 migration batches logged (9.00 MiB in 3.6 ms: 2.44 GiB/s)",
                   "plan             phase 0, sentinel: budget 2.70 MiB, lead ",
                   "migrations       phase 0: 81.0 MiB moved over 9 steps, 3 late, 17 failed pages; fast tier at most 2.56 MiB (budget 2.70 MiB)",
                   "placement        phase 0: measured fast-hit share 31.9% of 24.0 MiB touched (9 checked steps); predicted 30.6% (+1.4 points); 2 of 108 objects misplaced at boundaries",
                   "    profiled 2 steps from step #1, 9 identities, 8 groups; planned sentinel, budget 2.70 MiB, predicted fast-hit share 30.6%; checked: measured 31.9%, 2 of 108 objects misplaced\n",
                   "detector         whole run: step found: 6 allocations, 5 distinct (site, size), 15 steps"]:
        check(needle in r.stdout, f"summary tiered text has {needle!r}")
    r = run([view, "summary", "--json", "--no-symbols", d("tiered.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    place = sum(4 * MiB * (i + 1) // (i + 2) for i in range(3)) / (4 * MiB * 6)
    for k, v in {"policy": "sentinel", "fast_budget_bytes": 2834432, "fast_peak_bytes": (j.get("plan") or {"fast_peak_bytes": 0})["fast_peak_bytes"] - 4096,
                 "migrated_bytes": j.get("plan", {}) and j["plan"]["moved_bytes_per_step"] * 9, "late_migrations": 3,
                 "failed_pages": 17, "migration_batches": 6, "migration_log_bytes": 9 << 20,
                 "migration_log_ns": 3_600_000, "migrator_bytes_per_s": (9 << 20) * 10**9 // 3_600_000,
                 "promotions_logged": 3}.items():
        check(j.get(k) == v, f"summary --json tiered {k} == {v!r} (got {j.get(k)!r})")
    check(isinstance(j.get("fast_hit_share"), float) and abs(j["fast_hit_share"] - place) < 1e-5,
          f"fast_hit_share = PLACEMENT fast / touched ({j.get('fast_hit_share')} vs {place})")
    check(j.get("misplaced_objects") == 2 and j.get("verified_objects") == 108,
          f"misplaced / verified objects ({j.get('misplaced_objects')}, {j.get('verified_objects')})")
    ph0 = (j.get("phases") or [{}])[0]
    check(ph0.get("main") is True and ph0.get("planned") is True and ph0.get("checked") is True
          and ph0.get("misplaced_objects") == 2 and ph0.get("verified_objects") == 108
          and ph0.get("fast_budget_bytes") == 2834432 and abs((ph0.get("fast_hit_share") or 0) - place) < 1e-5,
          f"phases[0]: planned, checked, its figures ({ph0})")
    check(abs(j.get("predicted_hit_share", -1) - j["plan"]["predicted_hit_ppm"] / 1e6) < 1e-6, "predicted_hit_share from PLAN")
    pi = j.get("placement_intervals", [])
    check([e["interval"] for e in pi] == [0, 1, 2] and pi[1]["late"] == 3 and pi[0]["bytes_to_fast"] == 9 * MiB,
          f"placement_intervals ({pi[:1]})")
    check([(e["misplaced"], e["verified"], e["checked_steps"], e["steps"]) for e in pi] == [(0, 36, 9, 9), (2, 36, 9, 9), (0, 36, 9, 9)],
          f"placement_intervals: boundary verification per interval ({pi})")
    check(j.get("tiering", {}).get("raced_frees") == 1 and j["tiering"]["move_method"] == "move_pages", "tiering object")
    check(len(j.get("detection", [])) == 1 and j["detection"][0]["locked"] and j["detection"][0]["period"] == 6,
          "detection entries")
    r = run([view, "summary", "--json", "--no-symbols", d("loop.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check(j.get("policy", 0) is None and j.get("fast_hit_share", 0) is None and j.get("tiering", 0) is None
          and j.get("migrated_bytes") == 0 and j.get("detection") == [],
          "summary --json without tiering records: policy and fast_hit_share null")
    r = run([view, "summary", "--no-symbols", d("nostep.prof")])
    check(r.returncode == 0 and "detector         whole run: no training step found among the tracked allocations" in r.stdout
          and "set SENTINEL_STEP=N" in r.stdout, "summary: the detector's diagnosis when it found no step")
    trace = os.path.join(tmp, "tiered.json")
    r = run([view, "trace", "--no-symbols", d("tiered.prof"), "-o", trace])
    check(r.returncode == 0, "trace tiered: exit 0")
    with open(trace) as f:
        t = json.load(f)
    mig = [e for e in t["traceEvents"] if e.get("ph") == "X" and e.get("cat", "").startswith("migration")]
    names = {e["tid"]: e["args"]["name"] for e in t["traceEvents"] if e.get("ph") == "M" and e.get("name") == "thread_name"}
    check(len(mig) == 6 and all(names.get(e["tid"]) == "migrations" for e in mig),
          f"trace: 6 migration batches on the migrations track ({len(mig)})")
    late = [e for e in mig if e["args"]["late"]]
    check(len(late) == 1 and late[0]["cat"] == "migration,late" and late[0]["name"] == "to fast 1.00 MiB (late)"
          and late[0]["args"]["interval"] == 1 and late[0]["dur"] == 600.0, f"trace: the late batch ({late})")
    spans = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in mig)
    check(all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), "trace: migration slices do not overlap")

    # Errors: one line, exit 1 for dumps the planner cannot take, 2 for usage.
    for name, needle in [("sample.prof", "the dump has no profile (no PROFILE record"),
                         ("wide.prof", "phase 0 has 70 intervals (the planner takes 1 to 64)"),
                         ("corrupt.prof", "checksum mismatch in PROCESS record"),
                         ("missing.prof", "No such file or directory")]:
        r = run([view, "plan", d(name)])
        check(r.returncode == 1 and r.stdout == "" and r.stderr.count("\n") == 1
              and r.stderr.startswith(f"sentinel-view: {d(name)}: ") and needle in r.stderr,
              f"plan {name}: exit 1, one line ({r.stderr!r})")
    r = run([view, "plan", "--phase", "5", d("loop12.prof")])
    check(r.returncode == 1 and r.stderr == f"sentinel-view: {d('loop12.prof')}: no phase 5 in this dump (phases: 0, 1)\n",
          f"--phase 5: exit 1, one line naming the phases ({r.stderr!r})")
    r = run([view, "plan", "--phase", "1", d("loop12.prof")])
    check(r.returncode == 1 and r.stderr.count("\n") == 1
          and "phase 1 was not profiled: nothing to plan (profiled phases: 0)" in r.stderr,
          f"--phase 1 (not profiled): exit 1, one line ({r.stderr!r})")
    for args, needle in [(["--policy", "bogus"], "plan: --policy: one of sentinel, first-touch, all-slow, all-fast, hot, not 'bogus'"),
                         (["--fast-bytes", "0%"], "plan: --fast-bytes: bytes (4G, 512M, 1048576) or a share of the peak (20%), not '0%'"),
                         (["--fast-bytes", "150%"], "not '150%'"), (["--fast-bytes", "4X"], "not '4X'"),
                         (["--phase", "x"], "plan: --phase: not a number: 'x'"), (["--policy"], "plan: --policy needs a value"),
                         (["--slow-ns-per-kib", "0.5"], "plan: --slow-ns-per-kib: not a number: '0.5'"),
                         (["--move-ns-per-kib", "-1"], "plan: --move-ns-per-kib: not a number: '-1'"),
                         (["--bogus"], "plan: unknown option '--bogus'")]:
        r = run([view, "plan"] + args + [d("loop12.prof")] if args != ["--policy"] else [view, "plan", d("loop12.prof")] + args)
        check(r.returncode == 2 and r.stdout == "" and r.stderr.startswith("sentinel-view: ") and needle in r.stderr,
              f"plan {args}: exit 2 ({r.stderr.splitlines()[:1]})")
    r = run([view, "plan"])
    check(r.returncode == 2 and r.stderr.startswith("sentinel-view: plan: "), "plan without DUMP: exit 2")
    for args in [["plan", "--help"], ["help", "plan"]]:
        r = run([view] + args)
        check(r.returncode == 0 and "--fast-bytes B|N%" in r.stdout, f"{args}: exit 0, help")
    r = run([view, "--help"])
    check("plan" in r.stdout, "--help lists plan")
    test_whatif(a, d)


def test_whatif(a, d):
    """sentinel-view whatif: every policy's plan at each budget, priced by the planner's step-time model."""
    view = a.view
    r = run([view, "whatif", "--json", d("tiered-costs.prof")])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    bs = j.get("budgets") or []
    check(r.returncode == 0 and [b["percent"] for b in bs] == [10, 20, 30, 50, 100]
          and j.get("slow_ns_per_kib") == 200 and j.get("costs_source") == "PLAN record",
          f"whatif tiered-costs --json: five budgets, the recorded costs ({r.stderr.strip()}, {j.get('costs_source')})")
    af, sl = j.get("all_fast_step_ns", 0), j.get("all_slow_step_ns", 0)
    check(0 < af < sl, f"whatif: all-fast below all-slow ({af}, {sl})")
    for b in bs:
        p = b["policies"]
        check(sorted(p) == ["first-touch", "hot", "interleave", "sentinel"], f"whatif {b['percent']}%: the four policies")
        # The objective never models the sentinel plan slower than first-touch at the same budget.
        check(p["sentinel"]["step_ns"] <= p["first-touch"]["step_ns"] and p["sentinel"]["step_ns"] <= sl,
              f"whatif {b['percent']}%: sentinel <= first-touch and all-slow ({p})")
        # Interleave: the all-slow plan with the budget's share of its slow time made fast.
        want = af + (sl - af) * (1 - b["percent"] / 100)
        check(abs(p["interleave"]["step_ns"] - want) <= 1, f"whatif {b['percent']}%: interleave {p['interleave']} vs {want}")
        check(abs(p["sentinel"]["ratio"] - p["sentinel"]["step_ns"] / af) < 2e-6, "whatif: ratio = step / all-fast")
    last = bs[-1]["policies"] if bs else {}
    check(all(last[x]["step_ns"] == af for x in ("sentinel", "first-touch", "interleave")),
          f"whatif 100%: everything fits, all-fast's step ({last})")
    needs = j.get("needs_percent") or {}
    order = lambda v: 101 if v is None else v  # noqa: E731
    check(sorted(needs) == ["first-touch", "hot", "interleave", "sentinel"]
          and order(needs["sentinel"]) <= order(needs["first-touch"]), f"whatif: sentinel needs no more than first-touch ({needs})")
    for x, v in needs.items():  # the least budget from which every larger one stays within 1.10x
        within = [b["percent"] for b in bs if all(c["policies"][x]["ratio"] <= 1.10 for c in bs if c["percent"] >= b["percent"])]
        check(v == (within[0] if within else None), f"whatif: {x} needs {v}, recomputed {within[:1]}")
    r = run([view, "whatif", "--budgets", "20,60", d("tiered-costs.prof")])
    lines = r.stdout.splitlines()
    check(r.returncode == 0 and any(l.startswith(" 20% ") for l in lines) and any(l.startswith(" 60% ") for l in lines)
          and any(l.startswith("needs            sentinel ") for l in lines)
          and any(l.startswith("model            ") and "(200 ns/KiB" not in l and "slow accesses 200 ns/KiB" in l for l in lines),
          f"whatif --budgets 20,60: the table and the needs line ({lines})")
    # The runtime's fitted slow cost (800 against the 200 planned with): a dearer slow node.
    r = run([view, "whatif", "--json", "--fitted", d("tiered-fitted.prof")])
    jf = json.loads(r.stdout) if r.returncode == 0 else {}
    check(jf.get("slow_ns_per_kib") == 800 and jf.get("costs_source") == "fitted by the runtime"
          and jf.get("all_fast_step_ns") == af and jf.get("all_slow_step_ns", 0) > sl,
          f"whatif --fitted: priced at the fitted cost ({jf.get('slow_ns_per_kib')}, {jf.get('costs_source')})")
    # The trial fitted the move cost too (1.10): --fitted prices moves at it, unless one is given.
    r = run([view, "whatif", "--json", "--fitted", d("tiered-off-thread.prof")])
    jm = json.loads(r.stdout) if r.returncode == 0 else {}
    check(jm.get("slow_ns_per_kib") == 800 and jm.get("move_ns_per_kib") == 4200
          and jm.get("costs_source") == "fitted by the runtime, moves too",
          f"whatif --fitted: moves at the trial's fit ({jm.get('move_ns_per_kib')}, {jm.get('costs_source')})")
    r = run([view, "whatif", "--json", "--fitted", "--move-ns-per-kib", "900", d("tiered-off-thread.prof")])
    jm = json.loads(r.stdout) if r.returncode == 0 else {}
    check(jm.get("move_ns_per_kib") == 900 and jm.get("costs_source") == "fitted by the runtime, moves: command line",
          f"whatif --fitted --move-ns-per-kib: the given move cost ({jm.get('move_ns_per_kib')}, {jm.get('costs_source')})")
    # --calibrate: the same plans priced on another clock, all-fast and all-slow given. A plan without moves
    # keeps its place between them (its share of all-slow's slow accesses); interleave is linear in the budget.
    r = run([view, "whatif", "--json", "--calibrate", "50000000,90000000", d("tiered-costs.prof")])
    jc = json.loads(r.stdout) if r.returncode == 0 else {}
    clock = jc.get("clock") or {}
    check(jc.get("all_fast_step_ns") == 50000000 and jc.get("all_slow_step_ns") == 90000000
          and clock.get("all_fast_ns") == 50000000 and clock.get("slow_ns_per_kib", 0) > 0 and j.get("clock") is None,
          f"whatif --calibrate: all-fast and all-slow as given ({r.stderr.strip()}, {clock})")
    for b, bc in zip(bs, jc.get("budgets") or []):
        for x in ("sentinel", "first-touch", "interleave"):
            own, on = b["policies"][x], bc["policies"][x]
            if own["moved_bytes_per_step"]:
                continue
            share_own = (own["step_ns"] - af) / (sl - af)
            share_on = (on["step_ns"] - 50000000) / 40000000
            check(abs(share_own - share_on) < 1e-6 and own["predicted_hit_ppm"] == on["predicted_hit_ppm"],
                  f"whatif --calibrate {b['percent']}% {x}: the same plan, its slow share kept ({share_own}, {share_on})")
    r = run([view, "whatif", "--calibrate", "50000000,90000000", d("tiered.prof")])  # no costs, no matter
    check(r.returncode == 0 and "clock            --calibrate: slow accesses " in r.stdout
          and "all-fast 50.0 ms (given)" in r.stdout, f"whatif --calibrate without costs ({r.stderr.strip()})")
    # A dump without costs: one line; the costs on the command line make it work.
    r = run([view, "whatif", d("tiered.prof")])
    check(r.returncode == 1 and r.stdout == "" and r.stderr.count("\n") == 1 and "no slow-access cost" in r.stderr
          and "--slow-ns-per-kib N" in r.stderr, f"whatif without costs: exit 1, one line ({r.stderr!r})")
    r = run([view, "whatif", "--slow-ns-per-kib", "300", "--move-ns-per-kib", "600", d("tiered.prof")])
    check(r.returncode == 0 and "slow accesses 300 ns/KiB, moves 600 ns/KiB (command line)" in r.stdout,
          f"whatif with costs given: exit 0 ({r.stderr.strip()})")
    for args, code, needle in [(["--fitted"], 1, "the runtime fitted no slow cost"),
                               (["--fitted", "--slow-ns-per-kib", "5"], 2, "--fitted and --slow-ns-per-kib"),
                               (["--fitted", "--calibrate", "5,9"], 2, "--fitted and --calibrate"),
                               (["--calibrate", "5"], 2, "--calibrate: all-fast's and all-slow's steps in ns"),
                               (["--calibrate", "9,5"], 2, "not '9,5'"), (["--calibrate", "0,5"], 2, "not '0,5'"),
                               (["--calibrate", "5,x"], 2, "not '5,x'"),
                               (["--budgets", "50,20"], 2, "whatif: --budgets: ascending percentages of 1 to 100"),
                               (["--budgets", "0"], 2, "not '0'"), (["--budgets", "101"], 2, "not '101'"),
                               (["--budgets", "10,,20"], 2, "not '10,,20'"), (["--budgets", ""], 2, "not ''"),
                               (["--policy", "hot"], 2, "whatif: unknown option '--policy'"),
                               (["--fast-bytes", "20%"], 2, "whatif: unknown option '--fast-bytes'")]:
        r = run([view, "whatif"] + args + [d("tiered-costs.prof")])
        check(r.returncode == code and r.stdout == "" and r.stderr.startswith("sentinel-view: ") and needle in r.stderr,
              f"whatif {args}: exit {code} ({r.stderr.splitlines()[:1]})")
    r = run([view, "whatif", d("sample.prof")])
    check(r.returncode == 1 and "the dump has no profile" in r.stderr, f"whatif without a profile: exit 1 ({r.stderr!r})")
    r = run([view, "--help"])
    check("whatif" in r.stdout, "--help lists whatif")


# ----------------------------------------------------------------------------------------------
GUEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "guest_mlp_run.prof")

# Figures of the fixture's records (see tools/tests/fixtures/README.md): per phase, its PLAN budget and
# predicted share, the PLACEMENT sums, its identities and groups.
GUEST_PHASES = {
    1: {"steps": 442, "allocations_per_step": 1, "intervals_per_step": 1, "identities": 16, "groups": 3,
        "fast_budget_bytes": 1066112, "predicted_hit_share": 0.949685, "placement_touched_bytes": 1286959,
        "placement_fast_bytes": 1105920, "migrated_bytes": 250577, "late_migrations": 0, "first_profiled_step": 147},
    2: {"steps": 20, "allocations_per_step": 10, "intervals_per_step": 10, "identities": 38, "groups": 16,
        "fast_budget_bytes": 2789715, "predicted_hit_share": 0.528497, "placement_touched_bytes": 28409856,
        "placement_fast_bytes": 14749696, "migrated_bytes": 74575872, "late_migrations": 40, "first_profiled_step": 443},
}


def test_guest(a, tmp):
    view, dump = a.view, GUEST
    if not check(os.path.exists(dump), f"the fixture is there ({dump})"):
        return

    # summary --json: every phase, the main one in detail by default, another with --phase.
    def summary_json(*args):
        r = run([view, "summary", "--json", "--no-symbols", "--top", "0", *args, dump])
        check(r.returncode == 0 and r.stderr == "", f"summary --json {' '.join(args)}: exit 0 ({r.stderr.strip()})")
        return json.loads(r.stdout) if r.returncode == 0 else {}
    j = summary_json()
    ph = {p["phase"]: p for p in j.get("phases", [])}
    check(sorted(ph) == [1, 2] and j.get("main_phase") == 2 and j.get("phase") == 2,
          f"2 phases, the training (phase 2) is the main one ({sorted(ph)}, {j.get('main_phase')})")
    check(ph.get(2, {}).get("main") is True and ph.get(1, {}).get("main") is False, "phases[].main")
    for n, want in GUEST_PHASES.items():
        got = ph.get(n, {})
        for k, v in want.items():
            if k == "first_profiled_step":
                check((got.get("profile") or {}).get(k) == v, f"phase {n} profile {k} == {v}")
            elif isinstance(v, float):
                check(isinstance(got.get(k), float) and abs(got[k] - v) < 1e-6, f"phase {n} {k} == {v} (got {got.get(k)!r})")
            else:
                check(got.get(k) == v, f"phase {n} {k} == {v!r} (got {got.get(k)!r})")
        share = want["placement_fast_bytes"] / want["placement_touched_bytes"]
        check(got.get("profiled") is True and got.get("planned") is True and got.get("checked") is True
              and got.get("policy") == "sentinel" and got.get("checked_steps") == 2
              and isinstance(got.get("fast_hit_share"), float) and abs(got["fast_hit_share"] - share) < 1e-5
              and got.get("misplaced_objects") == 0 and got.get("verified_objects") == 0,
              f"phase {n}: profiled, planned, checked, measured {share:.4f}, nothing verified (32-byte PLACEMENT)")
    # The warm-up (tools/warmup.h): where each phase locked, was profiled and checked, and runs steady.
    for n, want in {1: {"lock_step": 83, "found_before": 83, "profiled_steps": 2, "first_profiled": 147,
                        "checked_steps": 2, "first_checked": 152, "steady_from": 154, "steps_to_steady": 71},
                    2: {"lock_step": 442, "found_before": 0, "profiled_steps": 2, "first_profiled": 443,
                        "checked_steps": 2, "first_checked": 448, "steady_from": 450, "steps_to_steady": 8}}.items():
        w = ph.get(n, {}).get("warmup") or {}
        check(all(w.get(k) == v for k, v in want.items()) and w.get("ended_in_warmup") is False
              and w.get("steady_step_ns", 0) > 0 and (w.get("profiled_cost") or 0) > 0,
              f"phase {n} warmup {want} (got {w})")
        # steady_from_ns is the time of that same step: after the phase's first step, within its span.
        got = ph.get(n, {})
        check(0 < got.get("first_step_ns", 0) < got.get("steady_from_ns", 0) <= got.get("last_step_ns", 0),
              f"phase {n}: steady_from_ns within the phase, after its first step ({got.get('first_step_ns')}, "
              f"{got.get('steady_from_ns')}, {got.get('last_step_ns')})")
    r = run([view, "summary", "--no-symbols", "--top", "0", dump])
    check("    warm-up: locked at step #442, profiled #443-#444 (" in r.stdout
          and "checked #448-#449 (" in r.stdout and "steady from #450, 8 steps after the lock" in r.stdout,
          "summary: phase 2's warm-up line")
    p2 = GUEST_PHASES[2]
    share2 = p2["placement_fast_bytes"] / p2["placement_touched_bytes"]
    for k, v in {"policy": "sentinel", "fast_budget_bytes": 2789715, "fast_peak_bytes": 5330561, "migrated_bytes": 74826449,
                 "late_migrations": 40, "migration_batches": 86, "misplaced_objects": 0, "verified_objects": 0,
                 "identity_count": 38, "group_count": 16, "dropped_touches": 0, "allocations_per_step": 10,
                 "intervals_per_step": 10, "steps": 462}.items():
        check(j.get(k) == v, f"guest json {k} == {v!r} (got {j.get(k)!r})")
    check(abs(j.get("fast_budget_bytes", 0) / 2**20 - 2.66) < 0.005, "the main phase's budget is ~2.66 MiB")
    check(isinstance(j.get("fast_hit_share"), float) and abs(j["fast_hit_share"] - share2) < 1e-5
          and abs(j["fast_hit_share"] - 0.5) < 0.05, f"fast_hit_share: phase 2's measured share, near 0.5 ({j.get('fast_hit_share')})")
    check(abs(j.get("predicted_hit_share", 0) - 0.528497) < 1e-6 and (j.get("plan") or {}).get("phase") == 2,
          "predicted_hit_share and plan: phase 2's PLAN")
    check((j.get("profile") or {}).get("phase") == 2 and j.get("faults") == 6946, "profile: phase 2's session")
    check(len(j.get("top_identities", [])) == 38 and all(i["phase"] == 2 for i in j["top_identities"])
          and all(g["id"] >= 3 for g in j.get("groups", [])), "identities and groups of phase 2 only")
    pi = j.get("placement_intervals", [])
    check([e["interval"] for e in pi] == list(range(10)) and all(e["phase"] == 2 for e in pi)
          and sum(e["touched_bytes"] for e in pi) == p2["placement_touched_bytes"]
          and pi[0]["fast_bytes_mean"] == 54417088 // 17 and pi[0]["fast_bytes_max"] == 3422912 and pi[0]["steps"] == 17,
          f"placement_intervals: phase 2's 10 intervals, mean = fast_bytes_sum / steps ({pi[:1]})")
    check(summary_json("--phase", "2") == j, "--phase 2 is the default")
    j1 = summary_json("--phase=1")
    for k, v in {"phase": 1, "main_phase": 2, "fast_budget_bytes": 1066112, "identity_count": 16, "group_count": 3,
                 "dropped_touches": 0, "allocations_per_step": 10, "migrated_bytes": 74826449}.items():
        check(j1.get(k) == v, f"--phase 1 json {k} == {v!r} (got {j1.get(k)!r})")
    p1 = GUEST_PHASES[1]
    check(abs((j1.get("fast_hit_share") or 0) - p1["placement_fast_bytes"] / p1["placement_touched_bytes"]) < 1e-5
          and (j1.get("profile") or {}).get("phase") == 1 and [e["interval"] for e in j1.get("placement_intervals", [])] == [0],
          "--phase 1: its share, its session, its one interval")
    check(j1.get("phases") == j.get("phases"), "--phase changes the detail, not the phase list")

    # summary text.
    r = run([view, "summary", "--no-symbols", dump])
    check(r.returncode == 0 and r.stderr == "", "summary: exit 0")
    out = r.stdout
    for needle in ["per step         10 allocations, 10 intervals (phase 2, the main phase)",
                   "  phase 1: 442 steps (#0-#441), 1 allocations per step, 1 intervals, step time 8.9 ms, 2 profiled\n",
                   "  phase 2 (main): 20 steps (#442-#461), 10 allocations per step, 10 intervals, step time 5.454 s, 2 profiled\n",
                   "    profiled 2 steps from step #443, 38 identities, 16 groups; planned sentinel, budget 2.66 MiB, "
                   "predicted fast-hit share 52.8%; checked: measured 51.9%\n",
                   "profile          2 steps from step #443 (phase 2)",
                   "identities       38 (28 persistent, 8 step-scoped, 2 short-lived), 16 groups",
                   "top 10 of 38 identities of phase 2 by bytes",
                   "budget 20% of each phase's profiled peak (phase 2: 2.66 MiB)",
                   "plan             phase 1, sentinel: budget 1.02 MiB, ",
                   "plan             phase 2, sentinel: budget 2.66 MiB, ",
                   "placement        phase 1: measured fast-hit share 85.9% of 1.23 MiB touched (2 checked steps); "
                   "predicted 95.0% (-9.0 points); no objects verified at boundaries\n",
                   "placement        phase 2: measured fast-hit share 51.9% of 27.1 MiB touched (2 checked steps); "
                   "predicted 52.8% (-0.9 points); no objects verified at boundaries\n",
                   "detector         whole run: step found"]:
        check(needle in out, f"guest summary text has {needle!r}")
    check("unknown identity" not in out, "no touches of other phases counted as unknown")
    r = run([view, "summary", "--no-symbols", "--phase", "1", dump])
    check(r.returncode == 0 and "profile          2 steps from step #147 (phase 1)" in r.stdout
          and "identities       16 " in r.stdout and "(phase 1: 1.02 MiB)" in r.stdout
          and "unknown identity" not in r.stdout, "summary --phase 1: its session, identities and budget")

    # heatmap: the phase's groups and intervals only.
    def rows(text):
        return [l for l in text.splitlines() if "|" in l][1:]
    r = run([view, "heatmap", "--width", "100", dump])
    print(r.stdout)
    check(r.returncode == 0 and "groups x 10 intervals (phase 2, the main phase, mean over 2 profiled steps" in r.stdout
          and len(rows(r.stdout)) == 15 and "1 group touched in no interval not drawn" in r.stdout
          and "note:" not in r.stdout, f"heatmap: phase 2's 15 touched groups x 10 intervals ({len(rows(r.stdout))})")
    r = run([view, "heatmap", "--phase", "1", "--width", "100", dump])
    check(r.returncode == 0 and "groups x 1 intervals (phase 1, mean over 2 profiled steps" in r.stdout
          and [l.split()[0] for l in rows(r.stdout)] == ["0"] and "note:" not in r.stdout,
          f"heatmap --phase 1: its one touched group, one interval ({rows(r.stdout)})")
    r = run([view, "heatmap", "--identities", "--top", "0", "--phase", "2", "--width", "100", dump])
    check(r.returncode == 0 and len(rows(r.stdout)) == 38, f"heatmap --identities: phase 2's 38 identities ({len(rows(r.stdout))})")
    r = run([view, "heatmap", "--phase", "1", "--step", "1", dump])
    check(r.returncode == 0 and "profiled step 1" in r.stdout, "heatmap --phase 1 --step 1")
    r = run([view, "heatmap", "--step", "2", dump])
    check(r.returncode == 2 and "heatmap: --step 2: phase 2 has 2 profiled steps" in r.stderr, f"heatmap --step 2: exit 2 ({r.stderr!r})")

    # report: the placement section of the phase drawn.
    for args, budget, ivs, phase in [([], "2.66 MiB", 10, 2), (["--phase", "1"], "1.02 MiB", 1, 1)]:
        html = report_page(view, dump, os.path.join(tmp, f"guest{phase}.html"), args, args)
        if html is None:
            continue
        place = html[html.find("<h2>Placement</h2>"):html.find("<h2>Details</h2>")]
        table = place[place.find('id="placement-intervals"'):].split("</table>")[0]
        check(f"Phase <b>{phase}</b>: policy <b>sentinel</b>, budget {budget}" in place
              and 'id="placement-occupancy"' in place and 'id="placement-hits"' in place
              and f"budget {budget}</text>" in place and len(re.findall(r"<tr><td>\d+</td>", table)) == ivs,
              f"report {args}: phase {phase}'s occupancy against its {budget} budget, {ivs} interval rows")
        check(f"intervals of the step (phase {phase})" in html and "touches named an unknown identity" not in html,
              f"report {args}: the heatmap of phase {phase}, nothing dropped")
    with open(os.path.join(tmp, "guest2.html"), encoding="utf-8") as f:
        html = f.read()
    check("<tr><td>0</td><td>3.26 MiB</td><td>3.05 MiB</td><td>17</td>" in html and "<td>94.0%</td>" in html,
          "report: interval 0 of phase 2: max 3.26 MiB, mean 3.05 MiB over 17 steps, 94.0% of its touches fast")

    # trace: migration batches against the steps; --phase N: that phase's span.
    def trace(*args):
        out = os.path.join(tmp, "guest-trace.json")
        r = run([view, "trace", "--no-symbols", *args, dump, "-o", out])
        check(r.returncode == 0 and r.stderr == "", f"trace {' '.join(args)}: exit 0 ({r.stderr.strip()})")
        with open(out) as f:
            return json.load(f)["traceEvents"]
    ev = trace()
    steps = sorted((e["ts"], e["ts"] + e["dur"], e["args"]["phase"], int(e["name"].split()[1]))
                   for e in ev if e["ph"] == "X" and e.get("cat") == "step")
    ivs = {(e["args"]["step"], int(e["name"].split()[1])): (e["ts"], e["ts"] + e["dur"])
           for e in ev if e["ph"] == "X" and e.get("cat") == "interval"}
    mig = [e for e in ev if e["ph"] == "X" and e.get("cat", "").startswith("migration")]
    check(len(steps) == 462 and len(mig) == 86, f"trace: 462 steps, 86 migration batches ({len(steps)}, {len(mig)})")
    placed = same = 0
    for e in mig:
        inside = [s for s in steps if s[0] <= e["ts"] < s[1]]
        if not inside or inside[0][2] != e["args"]["phase"]:
            continue
        k = inside[0][3]
        at = [i for (kk, i), (x, y) in ivs.items() if kk == k and x <= e["ts"] < y]
        if at and at[0] >= e["args"]["interval"]:
            placed += 1
            same += at[0] == e["args"]["interval"]
    check(placed == len(mig), f"trace: every batch starts in a step of its phase, not before the interval it was issued for ({placed} of {len(mig)})")
    check(same >= len(mig) - 2, f"trace: batches start in the interval they were issued for ({same} of {len(mig)})")
    ids = {n: {i["id"] for i in summary_json("--phase", str(n))["top_identities"]} for n in (1, 2)}
    objs = [e for e in ev if e["ph"] == "X" and e.get("cat", "").startswith("object")]
    seq_phase = {}
    for e in ev:
        if e["ph"] == "X" and e.get("cat") == "step":
            for q in range(e["args"]["start_seq"], e["args"]["start_seq"] + e["args"]["allocations"]):
                seq_phase[q] = e["args"]["phase"]
    wrong = [e for e in objs if "identity" in e["args"] and e["args"]["birth_seq"] in seq_phase
             and e["args"]["identity"] not in ids[seq_phase[e["args"]["birth_seq"]]]]
    annotated = {n: sum(1 for e in objs if e["args"].get("identity") in ids[n]) for n in (1, 2)}
    check(len(objs) == 1203 and not wrong and annotated[1] > 0 and annotated[2] > 0,
          f"trace: objects carry the identity of their step's phase ({len(wrong)} wrong, {annotated})")
    ev2 = trace("--phase", "2")
    st2 = [e for e in ev2 if e["ph"] == "X" and e.get("cat") == "step"]
    mig2 = [e for e in ev2 if e["ph"] == "X" and e.get("cat", "").startswith("migration")]
    lo = min(e["ts"] for e in st2) if st2 else 0
    obj2 = [e for e in ev2 if e["ph"] == "X" and e.get("cat", "").startswith("object")]
    check(len(st2) == 20 and all(e["args"]["phase"] == 2 for e in st2) and len(mig2) == 85
          and sum(1 for e in ev2 if e["ph"] == "X" and e.get("cat") == "interval") == 200
          and 0 < len(obj2) < 1203 and all(e["ts"] + e["dur"] >= lo for e in obj2),
          f"trace --phase 2: its 20 steps, 200 intervals, 85 batches, the objects of its span ({len(st2)}, {len(mig2)}, {len(obj2)})")
    ev1 = trace("--phase", "1")
    check(sum(1 for e in ev1 if e["ph"] == "X" and e.get("cat") == "step") == 442
          and sum(1 for e in ev1 if e["ph"] == "X" and e.get("cat", "").startswith("migration")) == 1,
          "trace --phase 1: its 442 steps and its one batch")

    # plan: the main phase by default; the recorded plan of phase 1 recomputed identically.
    r = run([view, "plan", "--json", dump])
    pj = json.loads(r.stdout) if r.returncode == 0 else {}
    check(pj.get("phase") == 2 and pj.get("fast_budget_bytes") == 2789715 and pj.get("entry_count") == 38
          and (pj.get("recorded_plan") or {}).get("compared") is True,
          f"plan: phase 2 by default, its budget, compared with its PLAN ({pj.get('phase')}, {pj.get('fast_budget_bytes')})")
    r = run([view, "plan", "--phase", "1", dump])
    check(r.returncode == 0 and "Plan of " in r.stdout and ", phase 1: policy sentinel" in r.stdout
          and "recorded plan    identical to the recomputed one" in r.stdout, "plan --phase 1: identical to the recorded plan")

    # Bad --phase values: usage (exit 2) or no such phase (exit 1, one line naming the phases).
    outfile = os.path.join(tmp, "bad-phase.out")
    for cmd in ["summary", "heatmap", "report", "trace", "plan"]:
        extra = ["-o", outfile] if cmd in ("report", "trace") else []
        for val, needle in [("x", f"sentinel-view: {cmd}: --phase: not a number: 'x'"),
                            ("-1", f"sentinel-view: {cmd}: --phase: not a number: '-1'"),
                            ("1.5", f"sentinel-view: {cmd}: --phase: not a number: '1.5'"),
                            ("", f"sentinel-view: {cmd}: --phase: not a number: ''"),
                            ("4294967296", f"sentinel-view: {cmd}: --phase: out of range (phases are 0 to 4294967295): '4294967296'")]:
            r = run([view, cmd, dump, *extra, f"--phase={val}" if val == "" else "--phase", *([] if val == "" else [val])])
            check(r.returncode == 2 and r.stdout == "" and r.stderr.splitlines()[:1] == [needle],
                  f"{cmd} --phase {val!r}: exit 2, {needle!r} ({r.stderr.splitlines()[:1]})")
        r = run([view, cmd, dump, *extra, "--phase"])
        check(r.returncode == 2 and r.stderr.startswith(f"sentinel-view: {cmd}: --phase needs a phase number"),
              f"{cmd} --phase without a value: exit 2 ({r.stderr.splitlines()[:1]})")
        for val in ["0", "3", "4294967295"]:
            r = run([view, cmd, "--phase", val, dump, *extra])
            check(r.returncode == 1 and r.stdout == "" and not os.path.exists(outfile)
                  and r.stderr == f"sentinel-view: {dump}: no phase {val} in this dump (phases: 1, 2)\n",
                  f"{cmd} --phase {val}: exit 1, one line naming the phases ({r.stderr!r})")
        r = run([view, cmd, "--phase", "1", dump, *extra])
        check(r.returncode == 0, f"{cmd} --phase 1: exit 0 ({r.stderr.strip()})")
        if os.path.exists(outfile):
            os.remove(outfile)


# ----------------------------------------------------------------------------------------------
def chromium_dom(chromium, page, tmp, budget=5000):
    prof = tempfile.mkdtemp(prefix="chromium-", dir=tmp)
    cmd = [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
           f"--user-data-dir={prof}", f"--virtual-time-budget={budget}", "--enable-logging=stderr",
           "--v=0", "--dump-dom", "file://" + page]
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=120)
    console = [l for l in p.stderr.splitlines() if "CONSOLE" in l or "Uncaught" in l]
    return p.returncode, p.stdout, console, p.stderr


def test_report(a, tmp):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or (
        "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
    if not chromium:
        print("skip: chromium is not installed", file=sys.stderr)
        sys.exit(77)
    probe = os.path.join(tmp, "probe.html")
    with open(probe, "w") as f:
        f.write("<!DOCTYPE html><html><body><script>document.documentElement.setAttribute('data-x','ok')"
                "</script></body></html>")
    try:
        rc, dom, _, err = chromium_dom(chromium, probe, tmp, 1000)
    except subprocess.TimeoutExpired:
        rc, dom, err = -1, "", "timeout"
    if rc != 0 or 'data-x="ok"' not in dom:
        print(f"skip: headless chromium cannot render here (exit {rc}): {err.strip()[-300:]}", file=sys.stderr)
        sys.exit(77)

    if not make_dumps(a, tmp):
        return
    cases = [("demo.prof", ["footprint-run", "footprint-step", "heatmap-groups", "heatmap-identities", "lifetimes"]),
             ("loop.prof", ["footprint-run", "footprint-step", "heatmap-groups", "heatmap-identities", "lifetimes"]),
             ("loop-track.prof", ["footprint-run", "footprint-step", "lifetimes"]),
             ("sample.prof", ["footprint-run", "lifetimes"]),
             ("weird.prof", ["footprint-run", "lifetimes"]),
             ("xss.prof", ["footprint-run", "footprint-step", "heatmap-groups", "heatmap-identities", "lifetimes"]),
             ("noobjects.prof", ["footprint-run", "lifetimes"]),
             ("tiered.prof", ["footprint-run", "footprint-step", "heatmap-groups", "heatmap-identities", "lifetimes",
                              "placement-occupancy", "placement-hits"]),
             (GUEST, ["footprint-run", "footprint-step", "heatmap-groups", "heatmap-identities", "lifetimes",
                      "placement-occupancy", "placement-hits"])]
    for name, svgs in cases:
        page = os.path.join(tmp, os.path.basename(name) + ".html")
        html = report_page(a.view, os.path.join(tmp, name), page, [], name)
        if html is None:
            continue
        check(re.search(r"""<[^>]*\s(src|href|xlink:href)\s*=|url\(|@import|<link|<iframe|<object|<embed|fetch\(|XMLHttpRequest""",
                        html, re.I) is None,
              f"report {name}: references nothing external")
        check(html.count("<script") == html.count("</script>") and "<img" not in html.lower(),
              f"report {name}: only its own scripts, no images")
        rc, dom, console, err = chromium_dom(chromium, page, tmp)
        m = re.search(r'<html[^>]*data-render="(\w+)"', dom)
        state = m.group(1) if m else None
        errs = re.search(r'<pre id="js-errors"[^>]*>(.*?)</pre>', dom, re.S)
        check(rc == 0 and state == "ok",
              f"report {name}: script ran, data-render=ok (rc {rc}, {state}, {errs.group(1)[:300] if errs else ''})")
        check(console == [], f"report {name}: no console messages ({console[:3]})")
        for sid in svgs:
            m = re.search(r'<svg id="%s"[^>]*>(.*?)</svg>' % re.escape(sid), dom, re.S)
            check(m is not None and len(re.findall(r"<(rect|path|line)\b", m.group(1))) >= 3,
                  f"report {name}: svg #{sid} drawn")
        plots = len(re.findall(r'<svg [^>]*class="plot', dom))
        m = re.search(r'data-plots="(\d+)"', dom)
        check(m is not None and int(m.group(1)) == plots == len(svgs),
              f"report {name}: {len(svgs)} plots, all non-empty ({m.group(1) if m else None} of {plots})")
        if name == "xss.prof":
            check("<img" not in dom and "alert(2)</script>" not in dom and "&lt;/script&gt;&lt;img" in dom,
                  "report xss: markup from the dump is text")
        if name == "tiered.prof":
            check("<h2>Placement</h2>" in dom and "Measured fast-hit share <b>31.9%</b>, predicted" in dom
                  and "budget 2.70 MiB</text>" in dom, "report tiered: placement section with budget and shares")
            rows = re.findall(r"<tr><td>(\d+)</td>(.*?)</tr>", dom[dom.find('id="placement-intervals"'):].split("</table>")[0])
            check([r[0] for r in rows] == ["0", "1", "2"] and rows[1][1].endswith("<td>9</td><td>2 of 36</td>")
                  and "Boundary check: <b>2 of 108</b> objects" in dom,
                  f"report tiered: per-interval table with the boundary verification ({rows[1:2]})")
        if name == "loop.prof":
            check("No tiering records in this dump" in dom, "report loop: placement section says there is none")
        if name == "demo.prof":
            check(">groups (32)</button>" in dom and 'id="heatmap-identities"' in dom,
                  "report demo: heatmap switch present")
    r = run([a.view, "report", os.path.join(tmp, "corrupt.prof"), "-o", os.path.join(tmp, "c.html")])
    check(r.returncode == 1 and not os.path.exists(os.path.join(tmp, "c.html")),
          "report of a corrupt dump: exit 1, no file")
    for args in [["report"], ["report", "-o"], ["report", "--top", "x", "a.prof"], ["report", "-", ],
                 ["report", "--bogus", "a.prof"]]:
        r = run([a.view] + args)
        check(r.returncode == 2 and r.stderr.startswith("sentinel-view: "), f"usage error {args}")


# ----------------------------------------------------------------------------------------------
TORCH_LOOP = """
import torch
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                        torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
x = torch.randn(64, 256)
y = torch.randint(0, 10, (64,))
for i in range(12):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(m(x), y)
    loss.backward()
    opt.step()
print(float(loss))
"""


def test_torch(a, tmp):
    py = python_with(a, "torch", "torch")
    script = os.path.join(tmp, "loop.py")
    with open(script, "w") as f:
        f.write(TORCH_LOOP)
    r = run([a.run, "--lib", a.lib, "--mode", "profile", "--dump", os.path.join(tmp, "t.%p.prof"), "--",
             py, script], env=clean_env(), timeout=240)
    check(r.returncode == 0, f"torch loop under --mode profile: exit 0 ({r.returncode}, {r.stderr.strip()[:300]})")
    dumps = glob.glob(os.path.join(tmp, "t.*.prof"))
    if not check(len(dumps) == 1, f"one dump written ({dumps})"):
        return
    dump = dumps[0]
    r = run([a.view, "summary", "--json", "--no-symbols", dump])
    if not check(r.returncode == 0, f"summary --json: exit 0 ({r.stderr.strip()})"):
        return
    j = json.loads(r.stdout)
    print({k: j.get(k) for k in ["objects", "steps", "allocations_per_step", "intervals_per_step",
                                 "profiled_steps", "faults", "identity_count", "group_count"]})
    check(9 <= j["steps"] <= 12, f"a 12-step loop reads 9 to 12 steps ({j['steps']})")
    check(j["allocations_per_step"] >= 3, f"allocations per step ({j['allocations_per_step']})")
    check(1 <= j["intervals_per_step"] <= j["allocations_per_step"],
          f"intervals per step ({j['intervals_per_step']})")
    check(j["profiled_steps"] >= 1 and j["profile"] is not None, "a profiling session")
    check(4096 <= j["granularity_bytes"] <= 2 << 20, f"granularity ({j['granularity_bytes']})")
    check(j["faults"] >= 1 and j["touched_bytes_per_step"] > 0, "faults and touched bytes")
    check(j["identity_count"] >= 5 and j["group_count"] >= 1, "identities and groups")
    check(j["dropped_touches"] == 0, f"every touch names a known identity and interval ({j['dropped_touches']})")
    sizes = {(i["size"], i["lifetime"]) for i in j["top_identities"]}
    check((512 * 512 * 4, "persistent") in sizes, f"the 512x512 weight is a persistent identity ({sorted(sizes)[:6]})")
    r = run([a.view, "summary", "--no-symbols", dump])
    check(r.returncode == 0 and "steps            " in r.stdout, "summary text")
    r = run([a.view, "heatmap", "--width", "100", dump])
    print(r.stdout)
    check(r.returncode == 0 and sum(1 for l in r.stdout.splitlines() if "|" in l and "\u2588" in l) >= 1,
          "heatmap draws touched rows")
    out = os.path.join(tmp, "t.json")
    r = run([a.view, "trace", "--no-symbols", dump, "-o", out])
    try:
        with open(out) as f:
            t = json.load(f)
        objs = sum(1 for e in t["traceEvents"] if e["ph"] == "X" and e.get("cat", "").startswith("object"))
        check(r.returncode == 0 and objs == j["objects"], f"trace: one slice per object ({objs} of {j['objects']})")
        check(sum(1 for e in t["traceEvents"] if e["ph"] == "X" and e.get("cat") == "step") == j["steps"],
              "trace: one slice per step")
    except (OSError, ValueError) as e:
        check(False, f"trace JSON parses ({e})")
    share = {}
    for pol in ["sentinel", "first-touch", "all-slow", "all-fast", "hot"]:
        r = run([a.view, "plan", "--json", "--policy", pol, dump])
        if not check(r.returncode == 0, f"plan --policy {pol} on the runtime's dump: exit 0 ({r.stderr.strip()})"):
            continue
        pj = json.loads(r.stdout)
        share[pol] = pj["predicted_hit_share"]
        check(pj["entry_count"] == j["identity_count"] and pj["budget_share_ppm"] == 200000,
              f"plan {pol}: every identity planned, the default 20% ({pj['entry_count']}, {pj['budget_share_ppm']})")
        if pol != "all-fast":
            check(pj["fast_peak_bytes"] <= pj["fast_budget_bytes"], f"plan {pol}: within the budget")
    print("plan shares on the runtime's dump:", share)
    if len(share) == 5:
        check(share["all-fast"] == 1.0 and share["all-slow"] == 0.0 and share["sentinel"] >= share["first-touch"],
              "plan: all-fast 1, all-slow 0, sentinel >= first-touch")
    page = os.path.join(tmp, "t.html")
    r = run([a.view, "report", "--no-symbols", dump, "-o", page])
    check(r.returncode == 0 and os.path.getsize(page) > 10000, "report written")
    chromium = shutil.which("chromium")
    if chromium:
        rc, dom, console, _ = chromium_dom(chromium, page, tmp)
        if rc == 0 and "<html" in dom:
            check('data-render="ok"' in dom and console == [], f"report renders in chromium ({console[:2]})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--view", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--make-dumps", required=True)
    ap.add_argument("--dummy-lib", required=True)
    ap.add_argument("--lib")
    ap.add_argument("what", choices=["view", "run", "e2e", "profile", "plan", "guest", "report", "torch"])
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sentinel-tools-") as tmp:
        {"view": test_view, "run": test_run, "e2e": test_e2e, "profile": test_profile, "plan": test_plan,
         "guest": test_guest, "report": test_report, "torch": test_torch}[a.what](a, tmp)
    if failures:
        print(f"{len(failures)} check(s) failed:")
        for f in failures:
            print("  " + f)
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
