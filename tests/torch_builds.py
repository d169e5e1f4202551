"""The two PyTorch builds the suite runs its PyTorch tests on.

  debian  Debian's python3-torch (1.13) under /usr/bin/python3.
  venv    PyTorch 2.x from PyPI in the virtual environment scripts/setup makes: $SENTINEL_TORCH_VENV, else
          .venv-torch/ in the repository root (README.md, "The two commands").

Drivers take an interpreter as `debian`, `venv` or a path (resolve()), and skip (exit 77) with
skip_reason()'s words when that interpreter has no torch. The TensorFlow tests take the TensorFlow venv's
interpreter from $TF_PYTHON (tensorflow_python()). child_env() is the environment for a
child: the venv's location is a setting of the test suite, never of the runtime, which warns about any
SENTINEL_* name it does not know, so it is removed from what children see.
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEBIAN = "/usr/bin/python3"
SUITE_ONLY = ("SENTINEL_TORCH_VENV", "SENTINEL_TF_VENV")


def venv_dir():
    return os.environ.get("SENTINEL_TORCH_VENV") or os.path.join(ROOT, ".venv-torch")


def resolve(spec):
    """`debian`, `venv` or a path -> the interpreter's path."""
    if spec == "debian":
        return DEBIAN
    if spec == "venv":
        return os.path.join(venv_dir(), "bin", "python")
    return spec


def child_env(env=None):
    env = dict(os.environ if env is None else env)
    for name in SUITE_ONLY:
        env.pop(name, None)
    return env


def plain_env():
    """The environment of a run without the library: no preload, no Sentinel settings."""
    return child_env({k: v for k, v in os.environ.items() if not k.startswith("SENTINEL_") and k != "LD_PRELOAD"})


def python_from_argv(argv):
    """The interpreter a checker was given (`--python debian|venv|PATH`), Debian's without it."""
    return resolve(argv[1]) if len(argv) == 2 and argv[0] == "--python" else DEBIAN


def checker_setup(argv):
    """(python, libsentinel, sentinel-view) of a checker run by meson (--python as python_from_argv;
    SENTINEL_LIB and SENTINEL_VIEW from the environment); skips (exit 77) where that python has no torch."""
    python = python_from_argv(argv)
    why = skip_reason(python)
    if why:
        print(f"skip: {why}")
        raise SystemExit(77)
    return python, os.environ["SENTINEL_LIB"], os.environ["SENTINEL_VIEW"]


def run_or_exit(cmd, env, timeout):
    """Runs a workload; a failure ends the checker (exit status 1) with its stderr's tail."""
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-4000:])
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited with status {p.returncode}")
    return p


def report(failures, ok_line):
    """Prints each failure, or the ok line; the checker's exit status."""
    for f in failures:
        print(f"FAIL: {f}")
    if not failures:
        print(f"ok: {ok_line}")
    return 1 if failures else 0


def skip_reason(python):
    """None if `python` has a torch package, else why not (one line, for a skip message).

    Looks torch up without importing it: importing PyTorch 2.x costs 4-9 s here, once more in every
    test. A torch that is installed but does not import is a failure of the test, not a skip
    (scripts/setup reinstalls a venv whose torch does not import).
    """
    if not os.path.exists(python):
        where = "run scripts/setup" if python != DEBIAN else "install Debian's python3-torch"
        return f"interpreter {python} not found ({where})"
    p = subprocess.run([python, "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       env=child_env({k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}))
    if p.returncode:
        hint = "install Debian's python3-torch" if python == DEBIAN else "run scripts/setup"
        return f"torch is not installed for {python}; {hint}"
    return None


def version(python):
    p = subprocess.run([python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True,
                       env=child_env({k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}))
    return p.stdout.strip() if p.returncode == 0 else None


def tensorflow_python():
    """($TF_PYTHON, None) if that interpreter imports tensorflow, else (None, why not) for a skip message."""
    python = os.environ.get("TF_PYTHON", "")
    if (not python or not os.path.exists(python)
            or subprocess.run([python, "-c", "import tensorflow"], capture_output=True).returncode):
        return None, "TensorFlow venv not available (run scripts/setup)"
    return python, None
