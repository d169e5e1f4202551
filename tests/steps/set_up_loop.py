#!/usr/bin/env python3
"""A model built block by block, then trained: the set-up loop a user's script runs before every training
loop (a GPT's or ResNet's layers constructed in turn), long enough for the step detector to lock on it.
Each block keeps its three tracked weights; the training steps give back what they allocate.

usage: set_up_loop.py BLOCKS STEPS        prints one loss per step
"""
import sys

import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)
DIM, HIDDEN, BATCH = 128, 512, 64


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(DIM, HIDDEN)    # 256 KiB of weight: tracked
        self.down = nn.Linear(HIDDEN, DIM)  # 256 KiB
        self.mix = nn.Linear(DIM, DIM)      # 64 KiB

    def forward(self, x):
        return x + self.mix(self.down(torch.relu(self.up(x))))


def main():
    blocks, steps = int(sys.argv[1]), int(sys.argv[2])
    model = nn.Sequential(*[Block() for _ in range(blocks)], nn.Linear(DIM, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    for _ in range(steps):
        x = torch.randn(BATCH, DIM)
        y = x.sum(dim=1, keepdim=True)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"{loss.item():.10e}", flush=True)


if __name__ == "__main__":
    main()
