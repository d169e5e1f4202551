#!/usr/bin/env python3
"""A DLRM-like step with few, large tensors: an EmbeddingBag table of 51 MB (dense gradients) and a
linear head, trained with SGD on random lookups. Its step makes about 5 tracked allocations, of which
the table's gradient is most of the bytes.

usage: embedding_sgd.py STEPS       prints one line per step: "loss STEP HEX" (the loss's bits)
"""
import struct
import sys

import torch
import torch.nn as nn

ROWS, DIM, BATCH, BAG = 100000, 128, 256, 8


def main():
    steps = int(sys.argv[1])
    torch.manual_seed(0)
    torch.set_num_threads(1)  # the loss bits do not depend on the host's cores
    emb, head = nn.EmbeddingBag(ROWS, DIM, mode="sum"), nn.Linear(DIM, 1)
    opt = torch.optim.SGD(list(emb.parameters()) + list(head.parameters()), lr=0.01)
    g = torch.Generator().manual_seed(1)
    offsets = torch.arange(0, BATCH * BAG, BAG)
    for i in range(steps):
        idx = torch.randint(0, ROWS, (BATCH * BAG,), generator=g)
        y = torch.randn(BATCH, 1, generator=g)
        opt.zero_grad()
        loss = ((head(emb(idx, offsets)) - y) ** 2).mean()
        loss.backward()
        opt.step()
        print(f"loss {i} {struct.pack('<d', loss.item()).hex()}", flush=True)


if __name__ == "__main__":
    main()
