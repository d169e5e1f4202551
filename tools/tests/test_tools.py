#!/usr/bin/env python3
"""Command-line tests of sentinel-view and sentinel-run (run by meson, suite 'tools').

  test_tools.py --view V --run R --make-dumps M --dummy-lib D [--lib L] {view,run,e2e}

view: sentinel-view on hand-built dumps (tools/tests/make_test_dumps.cpp): text and JSON output,
      escaping, offline symbolization, error lines and exit codes.
run:  sentinel-run with an empty preload library: environment, LD_PRELOAD order, exit statuses,
      library discovery.
e2e:  a real Python/numpy run under libsentinel.so through sentinel-run, then sentinel-view on
      the dump it wrote. Exits 77 (skip) when numpy is missing.
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


# ----------------------------------------------------------------------------------------------
def test_view(a, tmp):
    view = a.view
    r = run([a.make_dumps, tmp])
    if not check(r.returncode == 0, "make-test-dumps wrote the dumps"):
        print(r.stderr)
        return
    d = lambda name: os.path.join(tmp, name)

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
                         ("newer.prof", "format version 2.1 is newer than this reader supports (1.0)"),
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

    # Usage.
    for args in [[], ["bogus"], ["--bogus"], ["summary"], ["summary", "--bogus", d("sample.prof")],
                 ["summary", "--top", "x", d("sample.prof")], ["summary", "--top"],
                 ["summary", d("sample.prof"), d("sample.prof")], ["help", "bogus"]]:
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
    if not a.lib:
        print("e2e needs --lib", file=sys.stderr)
        sys.exit(2)
    py = "/usr/bin/python3"
    if subprocess.run([py, "-c", "import numpy"], capture_output=True).returncode != 0:
        print("skip: /usr/bin/python3 cannot import numpy", file=sys.stderr)
        sys.exit(77)
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--view", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--make-dumps", required=True)
    ap.add_argument("--dummy-lib", required=True)
    ap.add_argument("--lib")
    ap.add_argument("what", choices=["view", "run", "e2e"])
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sentinel-tools-") as tmp:
        {"view": test_view, "run": test_run, "e2e": test_e2e}[a.what](a, tmp)
    if failures:
        print(f"{len(failures)} check(s) failed:")
        for f in failures:
            print("  " + f)
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
