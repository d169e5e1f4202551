#!/usr/bin/python3
"""A DDP training script as users write it (gloo on the CPU): every rank trains the same MLP on its own
shard of random data, gradients all-reduced, AdamW; each rank writes its losses (float.hex) and a digest of
its final parameters to OUT_DIR/rank-R.json. Started by torchrun, or by anything that sets RANK,
WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT.

usage: ddp_train.py OUT_DIR [STEPS] [WIDTH]"""
import hashlib
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    out, steps = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 20
    width = int(sys.argv[3]) if len(sys.argv) > 3 else 1024
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)  # the same weights on every rank
    torch.set_num_threads(1)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(256, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                                    torch.nn.ReLU(), torch.nn.Linear(width, 10)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(1000 + rank)  # each rank its own shard
    x, y = torch.randn(64, 256, generator=g), torch.randint(0, 10, (64,), generator=g)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item().hex())
    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.detach().numpy().tobytes())
    with open(os.path.join(out, f"rank-{rank}.json"), "w") as f:
        json.dump({"rank": rank, "losses": losses, "params_sha256": digest.hexdigest()}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
