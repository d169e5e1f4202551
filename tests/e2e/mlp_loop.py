"""The training loop that the e2e tests of runs stopped midway share (signal_end.py, snapshot_run.py).

A PyTorch MLP trains with Adam and prints "step N LOSS" (LOSS as float.hex) after each step, so that a
test compares runs bit for bit and knows how far a run got. The environment says how it goes:
  STEPS        the steps to train (default 0: until the process is stopped);
  CRASH        segv (a read of address 8 through ctypes: a fault in the program's own code) or abort
               (os.abort()), once CRASH_AT steps are made;
  SNAPSHOT_AT  once this many steps are made, sentinel_dump(NULL) through ctypes when the library is
               loaded, as a user would to look at a long run's profile before it ends; a failure prints
               a line, so that the output differs from the plain run's;
  WORKERS      with STEPS: the batches come from a DataLoader with this many worker processes (forked),
               one new batch of a fixed random data set a step, instead of the same batch every step."""

import ctypes
import os

import torch

steps = int(os.environ.get("STEPS", "0"))
crash, crash_at = os.environ.get("CRASH"), int(os.environ.get("CRASH_AT", "0"))
snapshot_at = int(os.environ.get("SNAPSHOT_AT", "0"))
workers = int(os.environ.get("WORKERS", "0")) if steps else 0
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512),
                            torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x, y = torch.randn(128, 512), torch.randint(0, 10, (128,))


def batches():
    if not workers:
        while True:
            yield x, y
    data = torch.utils.data.TensorDataset(torch.randn(steps * 128, 512), torch.randint(0, 10, (steps * 128,)))
    yield from torch.utils.data.DataLoader(data, batch_size=128, num_workers=workers)


step = 0
for x, y in batches():
    if steps and step >= steps:
        break
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    print(f"step {step} {loss.item().hex()}", flush=True)
    step += 1
    if crash == "segv" and step == crash_at:
        ctypes.string_at(8, 8)
    if crash == "abort" and step == crash_at:
        os.abort()
    if step == snapshot_at:
        lib = ctypes.CDLL(None, use_errno=True)
        if hasattr(lib, "sentinel_dump"):
            lib.sentinel_dump.argtypes = [ctypes.c_char_p]
            if lib.sentinel_dump(None) != 0:
                print(f"sentinel_dump failed: errno {ctypes.get_errno()}", flush=True)
