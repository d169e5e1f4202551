#!/usr/bin/env python3
"""A step's output kept until the next step replaces it: `out = log_softmax(model(x))` is held by the
variable across the step boundary, as training scripts that log or reuse their last output do.

usage: step_output.py STEPS      prints the final loss's bits
"""
import struct
import sys

import torch


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Linear(512, 512)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 512)
    out = loss = None
    for _ in range(int(sys.argv[1])):
        opt.zero_grad()
        out = torch.log_softmax(model(x), dim=1)  # 512 KiB, freed when the next step assigns `out`
        loss = -out[:, 0].mean()
        loss.backward()
        opt.step()
    print(struct.pack("<d", loss.item()).hex())


if __name__ == "__main__":
    main()
