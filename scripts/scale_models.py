#!/usr/bin/env python3
"""Realistic PyTorch training at real sizes, on random data, for scripts/bench-scale (issue 15, item 2).

usage: scale_models.py {gpt,resnet,dlrm} [--size s|m|l|g (dlrm only: the guest's)] [--batch B] [--steps N] [--threads T]
                       [--out RESULT.json]

Written the way users write training scripts: no Sentinel API call, no step marks, a new random batch
every step (as a data loader hands one over), zero_grad / forward / loss / backward / optimizer step.

  gpt     a GPT-style decoder LM (pre-LayerNorm blocks, causal scaled-dot-product attention, GELU MLP,
          tied embeddings), AdamW with weight decay and gradient clipping, random tokens.
  resnet  torchvision's ResNet-50 (1000 classes), SGD with momentum and weight decay, batch 32, random
          images; the size sets the resolution.
  dlrm    a DLRM-style recommender: a bottom MLP on 13 dense features, 8 EmbeddingBag tables (sum pooling,
          sparse gradients, >= 1 GiB in total at every size), pairwise dot interactions, a top MLP, BCE
          loss, SGD (sparse and dense) as the reference DLRM trains; lookups follow a Zipf law (exponent
          1.05) over rows scattered through each table by a fixed hash, as hashed categorical ids are.

Sizes (s, m, l) grow the peak RSS to 6.5 GiB (gpt), 4.1 GiB (resnet: batch 32 at 224x224) and 6.8 GiB
(dlrm) at l (SIZES below; `--list` prints them). Per step the
compute is kept small next to the footprint (short sequences, one batch of 32 images): on a 2-core host
a step takes seconds, and the relative cost of what Sentinel does per byte of footprint is the largest.

RESULT.json: {"model", "size", "params", "steps", "losses": [float.hex() per step],
"step_ns": [wall time of each step], "step_cpu_ns": [CPU time of the main thread in each step: with one
torch thread the step's work, without the time other load took the CPU], "step_start_monotonic_ns": [...], "maxrss_bytes", "torch_version",
"threads", "sentinel_loaded"}. Losses are float.hex so that runs compare bit for bit.
"""

import argparse
import json
import math
import os
import resource
import sys
import time

sys.dont_write_bytecode = True

# (params and footprints as measured on the 2-core host: docs/performance.md, "Realistic models")
SIZES = {
    # d_model, layers, heads, vocab, batch, seq
    "gpt": {"s": dict(d=768, layers=12, heads=12, vocab=50304, batch=4, seq=64),
            "m": dict(d=1024, layers=14, heads=16, vocab=50304, batch=4, seq=64),
            "l": dict(d=1024, layers=22, heads=16, vocab=50304, batch=4, seq=64)},
    # batch, image side
    "resnet": {"s": dict(batch=32, side=112),
               "m": dict(batch=32, side=160),
               "l": dict(batch=32, side=224)},
    # rows per table (8 tables of dim 64), batch, lookups per bag
    # "g": the guest's size (tests/guest/torch_scale.py): s's 1 GiB of tables at a batch of 256, whose
    # step takes seconds, not minutes, under TCG (the top MLP's matrix products dominate the step).
    "dlrm": {"g": dict(tables=8, rows=1 << 19, dim=64, batch=256, pooling=4),
             "s": dict(tables=8, rows=1 << 19, dim=64, batch=2048, pooling=4),
             "m": dict(tables=8, rows=1 << 20, dim=64, batch=2048, pooling=4),
             "l": dict(tables=8, rows=3 << 20, dim=64, batch=2048, pooling=4)},
}


def build_gpt(torch, nn, F, d, layers, heads, vocab, seq, **_):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d)
            self.fc = nn.Linear(d, 4 * d)
            self.out = nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q = q.view(b, t, heads, d // heads).transpose(1, 2)
            k = k.view(b, t, heads, d // heads).transpose(1, 2)
            v = v.view(b, t, heads, d // heads).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, d))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, d)
            self.pos = nn.Embedding(seq, d)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)
            self.head.weight = self.tok.weight  # tied
            self.apply(self._init)

        @staticmethod
        def _init(m):
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, 0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.ln(x))

    return GPT()


def run_gpt(torch, cfg, steps, on_step, info):
    import torch.nn as nn
    import torch.nn.functional as F
    model = build_gpt(torch, nn, F, **cfg)
    info["params"] = sum(p.numel() for p in model.parameters())
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.95))
    gen = torch.Generator().manual_seed(1)
    b, t, vocab = cfg["batch"], cfg["seq"], cfg["vocab"]
    for step in range(steps):
        on_step(step)
        data = torch.randint(0, vocab, (b, t + 1), generator=gen)
        x, y = data[:, :-1], data[:, 1:]
        opt.zero_grad(set_to_none=True)
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, vocab), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        yield loss.item()


def run_resnet(torch, cfg, steps, on_step, info):
    import torch.nn.functional as F
    import torchvision
    model = torchvision.models.resnet50(num_classes=1000)
    model.train()
    info["params"] = sum(p.numel() for p in model.parameters())
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    gen = torch.Generator().manual_seed(1)
    b, side = cfg["batch"], cfg["side"]
    for step in range(steps):
        on_step(step)
        images = torch.randn(b, 3, side, side, generator=gen)
        labels = torch.randint(0, 1000, (b,), generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        opt.step()
        yield loss.item()


def run_dlrm(torch, cfg, steps, on_step, info):
    import torch.nn as nn
    tables, rows, dim, batch, pooling = cfg["tables"], cfg["rows"], cfg["dim"], cfg["batch"], cfg["pooling"]

    def mlp(sizes, sigmoid_last=False):
        layers = []
        for i in range(len(sizes) - 1):
            layers.append(nn.Linear(sizes[i], sizes[i + 1]))
            layers.append(nn.Sigmoid() if sigmoid_last and i == len(sizes) - 2 else nn.ReLU())
        return nn.Sequential(*layers)

    class DLRM(nn.Module):
        def __init__(self):
            super().__init__()
            self.bottom = mlp([13, 512, 256, dim])
            # Each table made from its initial weights, as DLRM's reference code does: an EmbeddingBag built
            # bare would first fill itself from N(0, 1), which under TCG took most of the guest test's time.
            bound = 1.0 / math.sqrt(rows)
            self.emb = nn.ModuleList(
                nn.EmbeddingBag.from_pretrained(torch.empty(rows, dim).uniform_(-bound, bound), freeze=False,
                                                mode="sum", sparse=True)
                for _ in range(tables))
            n = tables + 1
            self.top = mlp([dim + n * (n - 1) // 2, 1024, 1024, 512, 256, 1], sigmoid_last=True)
            self.li, self.lj = torch.tril_indices(n, n, offset=-1)

        def forward(self, dense, indices, offsets):
            x = self.bottom(dense)
            ly = [e(indices[i], offsets) for i, e in enumerate(self.emb)]
            t = torch.stack([x] + ly, dim=1)               # batch x (tables+1) x dim
            z = torch.bmm(t, t.transpose(1, 2))[:, self.li, self.lj]
            return self.top(torch.cat([x, z], dim=1))

    model = DLRM()
    info["params"] = sum(p.numel() for p in model.parameters())
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    # Zipf(1.05) over ranks, ranks scattered through each table by a fixed multiplicative hash (--ids
    # hashed), or the rank itself the row (--ids ranked: the hot rows first).
    ranks = torch.arange(1, rows + 1, dtype=torch.float64)
    cdf = torch.cumsum(ranks.pow(-1.05), 0)
    cdf /= cdf[-1].clone()
    del ranks
    gen = torch.Generator().manual_seed(1)
    offsets = torch.arange(0, batch * pooling, pooling)
    loss_fn = nn.BCELoss()
    for step in range(steps):
        on_step(step)
        dense = torch.rand(batch, 13, generator=gen)
        u = torch.rand(tables, batch * pooling, generator=gen, dtype=torch.float64)
        rank = torch.searchsorted(cdf, u).clamp_(max=rows - 1)
        if cfg.get("ids") == "ranked":
            indices = rank  # ids numbered by frequency, as preprocessing that ranks categories makes them
        else:
            indices = (rank * 2654435761 + torch.arange(tables).unsqueeze(1) * 40503) % rows
        labels = torch.randint(0, 2, (batch, 1), generator=gen).float()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(dense, indices, offsets), labels)
        loss.backward()
        opt.step()
        yield loss.item()


RUNNERS = {"gpt": run_gpt, "resnet": run_resnet, "dlrm": run_dlrm}


def sentinel_loaded():
    try:
        with open("/proc/self/maps") as f:
            return "libsentinel.so" in f.read()
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", choices=sorted(RUNNERS), nargs="?")
    ap.add_argument("--size", choices=("g", "s", "m", "l"), default="s")
    ap.add_argument("--batch", type=int, help="the batch instead of the size's (the footprint of weights and "
                                              "tables stays; the compute and activations scale with it)")
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    ap.add_argument("--ids", choices=("hashed", "ranked"), default="hashed",
                    help="dlrm: the row of a lookup's Zipf rank: scattered by a hash (default), or the rank itself "
                         "(ids numbered by frequency: the hot rows at the start of each table)")
    ap.add_argument("--out", help="write the result here (JSON); default: print it")
    ap.add_argument("--list", action="store_true", help="print the sizes and exit")
    args = ap.parse_args()
    if args.list or not args.model:
        json.dump(SIZES, sys.stdout, indent=1)
        print()
        return 0
    if args.size not in SIZES[args.model]:
        ap.error(f"--size {args.size}: {args.model} has sizes {', '.join(SIZES[args.model])}")
    import torch
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    cfg = dict(SIZES[args.model][args.size])
    if args.batch is not None:
        if args.batch < 1:
            ap.error(f"--batch {args.batch}: at least 1")
        cfg["batch"] = args.batch
    if args.model == "dlrm":
        cfg["ids"] = args.ids
    starts, durations, cpu, losses = [], [], [], []
    t_prev = [None, None]

    def on_step(step):
        now, now_cpu = time.monotonic_ns(), time.thread_time_ns()
        if t_prev[0] is not None:
            durations.append(now - t_prev[0])
            cpu.append(now_cpu - t_prev[1])
        t_prev[0], t_prev[1] = now, now_cpu
        starts.append(now)

    info = {}
    for loss in RUNNERS[args.model](torch, cfg, args.steps, on_step, info):
        losses.append(loss.hex())
        if not math.isfinite(loss):
            print(f"scale_models: non-finite loss at step {len(losses)}", file=sys.stderr)
    durations.append(time.monotonic_ns() - t_prev[0])
    cpu.append(time.thread_time_ns() - t_prev[1])
    result = {"model": args.model, "size": args.size, "config": cfg, "steps": args.steps, "losses": losses,
              "step_ns": durations, "step_cpu_ns": cpu, "step_start_monotonic_ns": starts,
              "maxrss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
              "torch_version": torch.__version__, "threads": torch.get_num_threads(),
              "sentinel_loaded": sentinel_loaded(), "params": info.get("params")}
    text = json.dumps(result)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
