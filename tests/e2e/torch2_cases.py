"""Training loops that use what only PyTorch 2.x has (or has on the CPU), for run_torch2_cases.py.

usage: torch2_cases.py CASE --steps N --out RESULT.json

CASE:
  compile         an MLP trained through torch.compile (TorchDynamo + Inductor: Inductor generates C++
                  for the forward and backward graphs and compiles it with g++ at run time, in step 1)
  adamw-foreach   an MLP with AdamW(foreach=True): the multi-tensor (torch._foreach_*) implementation
  adamw-fused     an MLP with AdamW(fused=True): the fused kernel, on the CPU since PyTorch 2.4
  checkpoint      a stack of blocks under torch.utils.checkpoint (use_reentrant=False): the forward's
                  activations are dropped and recomputed in the backward
  autocast-bf16   an MLP whose forward runs under torch.autocast("cpu", dtype=torch.bfloat16)

No step is marked: the runtime must find the steps itself. RESULT.json gets the per-step losses
(float.hex), the sha256 of the final parameters (and optimizer state), the true step starts (the
runtime's tracked-allocation count when each step began, read with sentinel_get_stats(), which marks
nothing; all 0 without the library), the pid and the torch version. A case the interpreter's torch
cannot run exits 77 and says why on stderr (e.g. Debian's torch 1.13 has no torch.compile).
Every case is deterministic: fixed seeds, one intra-op and one inter-op thread, data made up front.
"""
import argparse
import ctypes
import hashlib
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import result_json  # noqa: E402  (tests/lib)
from sentinel_ctypes import allocation_clock  # noqa: E402  (tests/lib)

CASES = ("compile", "adamw-foreach", "adamw-fused", "checkpoint", "autocast-bf16")
SKIP = 77


def skip(msg):
    print(f"torch2_cases: {msg}", file=sys.stderr)
    sys.exit(SKIP)


def version_tuple(torch):
    return tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("case", choices=CASES)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    import torch
    import torch.nn as nn
    v = version_tuple(torch)
    if args.case == "compile" and not hasattr(torch, "compile"):
        skip(f"torch {torch.__version__} has no torch.compile (PyTorch 2.0 and later)")
    if args.case == "adamw-fused" and v < (2, 4):
        skip(f"torch {torch.__version__} has no fused AdamW on the CPU (PyTorch 2.4 and later)")
    torch.manual_seed(1234)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    gen = torch.Generator().manual_seed(1235)
    batches = [(torch.randn(64, 784, generator=gen), torch.randint(0, 10, (64,), generator=gen)) for _ in range(4)]
    ce = nn.CrossEntropyLoss()

    def mlp():
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))

    if args.case == "checkpoint":
        from torch.utils.checkpoint import checkpoint

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Linear(512, 1024)
                self.b = nn.Linear(1024, 512)

            def forward(self, x):
                return x + self.b(torch.relu(self.a(x)))

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.inp = nn.Linear(784, 512)
                self.blocks = nn.ModuleList(Block() for _ in range(3))
                self.head = nn.Linear(512, 10)

            def forward(self, x):
                h = self.inp(x)
                for blk in self.blocks:
                    h = checkpoint(blk, h, use_reentrant=False)
                return self.head(h)
        model = Net()
    else:
        model = mlp()
    if args.case == "adamw-foreach":
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    elif args.case == "adamw-fused":
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    forward = torch.compile(model) if args.case == "compile" else model

    def step(batch):
        opt.zero_grad()
        if args.case == "autocast-bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = forward(batch[0])
            loss = ce(logits.float(), batch[1])
        else:
            loss = ce(forward(batch[0]), batch[1])
        loss.backward()
        opt.step()
        return loss.item()

    clock = allocation_clock()
    starts, losses = [], []
    for k in range(args.steps):
        starts.append(clock())
        losses.append(float(step(batches[k % len(batches)])).hex())
    end = clock()

    h = hashlib.sha256()
    with torch.no_grad():
        for name, t in model.state_dict().items():
            h.update(f"{name}:{t.dtype}:{tuple(t.shape)};".encode())
            h.update(memoryview(t.detach().contiguous().numpy()).cast("B"))
        for st in opt.state_dict()["state"].values():  # Adam's moments: the optimizer's own tensors
            for key in sorted(st):
                t = st[key]
                if isinstance(t, torch.Tensor):
                    h.update(memoryview(t.detach().float().contiguous().numpy()).cast("B"))
    result_json.write(args.out, {
        "case": args.case, "steps": args.steps, "losses": losses, "params_sha256": h.hexdigest(),
        "starts": starts, "end": end, "pid": os.getpid(), "torch_version": torch.__version__,
        "sentinel_loaded": hasattr(ctypes.CDLL(None), "sentinel_get_stats")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
