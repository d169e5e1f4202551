"""Runs in the guest under Debian's /usr/bin/python3: `import torch` works there and how long it takes
(11-19 s under TCG; much longer with the slow-tier plugin). Exits 77 when python3-torch is not installed."""
import importlib.util
import sys
import time

if importlib.util.find_spec("torch") is None:
    print("SKIP: torch is not importable by /usr/bin/python3 (apt-get install python3-torch)")
    sys.exit(77)
t0 = time.monotonic()
import torch  # noqa: E402

t1 = time.monotonic()
x = torch.ones(256, 256)
s = float((x @ x).sum())
print(f"import torch {torch.__version__}: {t1 - t0:.1f} s; matmul check {s:.0f}")
sys.exit(0 if s == 256.0 ** 3 else 1)
