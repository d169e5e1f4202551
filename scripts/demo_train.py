#!/usr/bin/python3
"""The demo's workload: an ordinary PyTorch training loop (a small CNN on synthetic data), unaware of
Sentinel. It prints its losses; scripts/demo runs it with and without the library and compares."""
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 64  # the emulated two-node guest runs a smaller one

model = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(batch, 1, 28, 28)
y = torch.randint(0, 10, (batch,))
for step in range(steps):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    print(f"step {step + 1:3d} loss {loss.item():.6f} ({loss.item().hex()})")
