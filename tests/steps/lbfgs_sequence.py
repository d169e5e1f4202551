#!/usr/bin/env python3
"""Time-series prediction with LBFGS, written as pytorch/examples writes it (two LSTMCells over sine
waves, in double precision): each optimizer step calls its closure up to 20 times, and each closure runs
the cells over every time step of the sequence. So the allocations repeat at three nested periods: the
time step, the closure, and the optimizer step. After each step, a no-grad prediction runs.

usage: lbfgs_sequence.py STEPS LENGTH      prints one line per step: "loss STEP HEX" (the loss's bits)
"""
import struct
import sys

import numpy as np
import torch
import torch.nn as nn

HIDDEN = 51


class Sequence(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm1 = nn.LSTMCell(1, HIDDEN)
        self.lstm2 = nn.LSTMCell(HIDDEN, HIDDEN)
        self.linear = nn.Linear(HIDDEN, 1)

    def forward(self, input, future=0):
        outputs = []
        state = [torch.zeros(input.size(0), HIDDEN, dtype=torch.double) for _ in range(4)]
        h1, c1, h2, c2 = state
        output = None
        for input_t in input.split(1, dim=1):
            h1, c1 = self.lstm1(input_t, (h1, c1))
            h2, c2 = self.lstm2(h1, (h2, c2))
            output = self.linear(h2)
            outputs.append(output)
        for _ in range(future):
            h1, c1 = self.lstm1(output, (h1, c1))
            h2, c2 = self.lstm2(h1, (h2, c2))
            output = self.linear(h2)
            outputs.append(output)
        return torch.cat(outputs, dim=1)


def main():
    steps, length = int(sys.argv[1]), int(sys.argv[2])
    np.random.seed(2)
    torch.manual_seed(0)
    torch.set_num_threads(1)  # the loss bits do not depend on the host's cores
    x = np.empty((100, length), np.int64)
    x[:] = np.arange(length) + np.random.randint(-80, 80, 100).reshape(100, 1)
    data = torch.from_numpy(np.sin(x / 20.0))
    inputs, target = data[3:, :-1], data[3:, 1:]
    test_input, test_target = data[:3, :-1], data[:3, 1:]
    seq = Sequence().double()
    criterion = nn.MSELoss()
    optimizer = torch.optim.LBFGS(seq.parameters(), lr=0.8)
    for i in range(steps):
        def closure():
            optimizer.zero_grad()
            loss = criterion(seq(inputs), target)
            loss.backward()
            return loss
        loss = optimizer.step(closure)
        print(f"loss {i} {struct.pack('<d', loss.item()).hex()}", flush=True)
        with torch.no_grad():
            pred = seq(test_input, future=length // 4)
            print(f"test {i} {struct.pack('<d', criterion(pred[:, :-(length // 4)], test_target).item()).hex()}",
                  flush=True)


if __name__ == "__main__":
    main()
