"""Small deterministic PyTorch training set-ups shared by torch_train.py and alloc_census.py.

Every model trains on fixed synthetic data generated here from a seeded generator, so that a run is
a pure function of (model, steps): losses and final parameters must be bit-identical between two runs,
with or without libsentinel.so preloaded. All batches are generated before the first step, so a step
allocates the same tensors every time from step 2 on (step 1 also creates gradients and optimizer state).
"""

import hashlib
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import torch_parts  # noqa: E402  (tests/lib)

MODELS = ("mlp", "cnn", "lstm", "transformer")
# Models where memory matters, for scripts/bench-tiers and scripts/demo: each step moves many bytes per
# instruction, so where its tensors live decides its step time (docs/performance.md, issue 14's item 3); and
# rnn-long, the compute-bound one, where it does not.
BENCH_MODELS = ("gpt-adamw", "dlrm", "cnn-act", "cnn-deep", "cnn-wide", "rnn-long")
ALL_MODELS = MODELS + BENCH_MODELS
SEED = 1234
NUM_BATCHES = 4  # distinct batches, cycled through


_interop_set = False


def setup_determinism():
    global _interop_set
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    if not _interop_set:  # torch aborts the process if this is set again after parallel work started
        torch.set_num_interop_threads(1)
        _interop_set = True


class _LSTMNet(nn.Module):
    def __init__(self, inp=32, hidden=128, classes=10):
        super().__init__()
        self.lstm = nn.LSTM(inp, hidden, num_layers=1, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1, :])


class _TransformerNet(nn.Module):
    def __init__(self, vocab=512, d_model=64, nhead=4, ff=256, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.randn(1, 32, d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=ff, dropout=0.1,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        h = self.embed(tokens) + self.pos[:, : tokens.shape[1], :]
        return self.head(self.encoder(h))


class _GPTNet(_TransformerNet):
    """A GPT-style decoder: the encoder stack under a causal mask, next-token loss."""

    def forward(self, tokens):
        n = tokens.shape[1]
        mask = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
        h = self.embed(tokens) + self.pos[:, :n, :]
        return self.head(self.encoder(h, mask=mask))


class _DLRMNet(nn.Module):
    """DLRM-style: embedding tables summed per bag, a bottom MLP on the dense features, their concatenation
    through a top MLP to one logit. The tables' gradients are dense, nn.EmbeddingBag's default: with sparse
    ones, SparseAdam's coalesced tensors have a size that depends on the batch's distinct rows, so the steps
    of different batches allocate different sizes and the repeating pattern is a cycle of the batches."""

    def __init__(self, tables, rows, dim, dense=13):
        super().__init__()
        self.emb = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum") for _ in range(tables))
        self.bottom = nn.Sequential(nn.Linear(dense, 64), nn.ReLU(), nn.Linear(64, dim), nn.ReLU())
        self.top = nn.Sequential(nn.Linear(dim * (tables + 1), 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, dense, bags):
        parts = [self.bottom(dense)] + [e(idx, off) for e, (idx, off) in zip(self.emb, bags)]
        return self.top(torch.cat(parts, dim=1)).squeeze(1)


def zipf_bags(gen, rows, batch, per_bag, skew=1.05):
    """(indices, offsets) of `batch` bags of `per_bag` rows each, drawn Zipf-like: row r with probability
    proportional to 1 / (r + 1) ** skew, the hot rows scattered over the table by a fixed permutation."""
    weights = 1.0 / torch.arange(1, rows + 1, dtype=torch.float64) ** skew
    ranks = torch.multinomial(weights, batch * per_bag, replacement=True, generator=gen)
    perm = torch.randperm(rows, generator=gen)
    return perm[ranks], torch.arange(0, batch * per_bag, per_bag)


def _labelled_batches(gen, batch, shape):
    """NUM_BATCHES batches of `batch` random inputs of `shape`, each with a label of 10 classes."""
    return [(torch.randn(batch, *shape, generator=gen), torch.randint(0, 10, (batch,), generator=gen))
            for _ in range(NUM_BATCHES)]


def _classification_loss():
    """loss_fn(model, (inputs, labels)): cross-entropy of the model's logits."""
    ce = nn.CrossEntropyLoss()

    def loss_fn(m, b):
        return ce(m(b[0]), b[1])
    return loss_fn


def _build_bench(name, w, bs, gen):
    """The BENCH_MODELS (see build)."""
    if name == "gpt-adamw":
        # GPT-style decoder, d_model 256, 2 layers, vocab 2048, on 2 sequences of 16 tokens, AdamW (size 1):
        # 2.6M parameters, 10 MiB of weights and 3x that of gradients and AdamW state, few activations.
        model = _GPTNet(vocab=w(2048), d_model=w(256, 4), ff=w(1024), layers=2)
        batches = torch_parts.next_token_batches(torch, gen, w(2048), 2, 16, NUM_BATCHES)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
        loss_fn = torch_parts.next_token_loss(nn.CrossEntropyLoss())
    elif name == "dlrm":
        # 4 tables of 100k rows x 32 (12 MiB each, 49 MiB, and 3x that of gradients and Adam state), batches
        # of 1024 bags of 16 Zipf-skewed lookups per table, Adam (size 1).
        tables, rows = 4, w(100_000)
        model = _DLRMNet(tables, rows, 32)
        batches = []
        for _ in range(NUM_BATCHES):
            dense = torch.randn(bs(1024), 13, generator=gen)
            bags = [zipf_bags(gen, rows, bs(1024), 16) for _ in range(tables)]
            batches.append((dense, bags, torch.randint(0, 2, (bs(1024),), generator=gen).float()))
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        bce = nn.BCEWithLogitsLoss()

        def loss_fn(m, b):
            return bce(m(b[0], b[1]), b[2])
    elif name == "cnn-deep":
        # The activation-heavy CNN made deep, where the paper's 20% claim lives: 16 blocks of conv(8
        # channels)-BatchNorm-ReLU on 3x32x32, batch 128 (size 1). Each block keeps its activations for the
        # backward pass (4 MiB each), so the step's peak holds every block's while an interval of the backward
        # pass touches one block's: a small share of the peak, as in the paper's deep networks.
        c = w(8)
        blocks = [[nn.Conv2d(3 if i == 0 else c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU()] for i in range(16)]
        model = nn.Sequential(*(m for b in blocks for m in b), nn.MaxPool2d(4), nn.Flatten(), nn.Linear(c * 8 * 8, 10))
        batches = _labelled_batches(gen, bs(128), (3, 32, 32))
        opt = torch.optim.SGD(model.parameters(), lr=0.005, momentum=0.9)
        loss_fn = _classification_loss()
    elif name == "cnn-wide":
        # Compute-heavy: wide 3x3 convolutions (128 channels) on small 8x8 maps, batch 16 (size 1), as in a
        # ResNet's late stages; activations of 512 KiB. Compute-bound on a real core with its MiBs of cache (the
        # host streams 1.8 GB/s through it), but not in the slow-tier guest's T_hw, whose 32 KiB line buffer
        # cannot hold a convolution's blocks: all-slow 2.28x there (docs/performance.md).
        c = w(128)
        model = nn.Sequential(
            nn.Conv2d(3, c, 3, padding=1), nn.ReLU(),
            nn.Conv2d(c, c, 3, padding=1), nn.ReLU(),
            nn.Conv2d(c, c, 3, padding=1), nn.ReLU(),
            nn.Conv2d(c, c, 3, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 10))
        batches = _labelled_batches(gen, bs(16), (3, 8, 8))
        opt = torch.optim.SGD(model.parameters(), lr=0.005, momentum=0.9)
        loss_fn = _classification_loss()
    elif name == "rnn-long":
        # The compute-bound one, where tiering does not matter: an LSTM of 32 hidden units over 256 time steps,
        # batch 16 (size 1). Its tensors are small (the recurrent weights 16 KiB, the bench's tracking
        # threshold) and re-read at every time step: everything Sentinel places on the slow node costs it 1.10x
        # all-fast in the slow-tier guest's T_hw, against 1.75-2.7x for the other models (docs/performance.md,
        # rnn-long).
        model = _LSTMNet(inp=w(16), hidden=w(32))
        batches = _labelled_batches(gen, bs(16), (256, w(16)))
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = _classification_loss()
    else:
        # Activation-heavy CNN at a large batch: 3 blocks of conv(8 channels)-BatchNorm-ReLU on 3x32x32,
        # batch 128: each activation 128x8x32x32 floats = 4 MiB, a dozen of them a step (size 1).
        c = w(8)
        model = nn.Sequential(
            nn.Conv2d(3, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(),
            nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(),
            nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(), nn.MaxPool2d(4),
            nn.Flatten(), nn.Linear(c * 8 * 8, 10))
        batches = _labelled_batches(gen, bs(128), (3, 32, 32))
        opt = torch.optim.SGD(model.parameters(), lr=0.005, momentum=0.9)
        loss_fn = _classification_loss()
    return model, opt, batches, loss_fn


def build(name, size=1, batch=None):
    """Returns (model, optimizer, batches, loss_fn(model, batch) -> loss tensor).

    `size` (a number > 0) scales the model's widths and its batch, keeping its type and depth: 1 is the
    set-up the tests and the fixtures use, unchanged; scripts/bench-tiers uses smaller ones so that a step
    in the slow-tier guest takes about a second rather than a minute. Scaled widths are rounded (the
    Transformer's to a multiple of its 4 heads) and never below 4. `batch`, when given, is the batch size
    instead of the scaled one (a small batch makes a step more memory-bound).
    """
    if name not in ALL_MODELS:
        raise ValueError(f"unknown model {name!r}; expected one of {', '.join(ALL_MODELS)}")
    if not isinstance(size, (int, float)) or not size > 0:
        raise ValueError(f"size must be a number > 0, not {size!r}")

    def w(n, multiple=1):  # n scaled by size
        return n if size == 1 else max(4, multiple * round(n * size / multiple))

    def bs(n):  # the batch size
        if batch is not None:
            return int(batch)
        return w(n)
    setup_determinism()
    gen = torch.Generator().manual_seed(SEED + 1)
    if name in BENCH_MODELS:
        model, opt, batches, loss_fn = _build_bench(name, w, bs, gen)
        model.train()
        return model, opt, batches, loss_fn
    if name == "mlp":
        # 784-512-256-10, batch 64: inputs 196 KiB, first weight 1.5 MiB (size 1).
        model = nn.Sequential(nn.Linear(784, w(512)), nn.ReLU(), nn.Linear(w(512), w(256)), nn.ReLU(),
                              nn.Linear(w(256), 10))
        batches = _labelled_batches(gen, bs(64), (784,))
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        loss_fn = _classification_loss()
    elif name == "cnn":
        # Two conv blocks on 1x28x28, batch 32: the first activation is 32x16x28x28 floats = 1.5 MiB (size 1).
        model = nn.Sequential(
            nn.Conv2d(1, w(16), 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(w(16), w(32), 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(w(32) * 7 * 7, 10))
        batches = _labelled_batches(gen, bs(32), (1, 28, 28))
        opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
        loss_fn = _classification_loss()
    elif name == "lstm":
        # One LSTM layer (32 -> 128), 20 time steps, batch 32, classify from the last hidden state (size 1).
        model = _LSTMNet(hidden=w(128))
        batches = _labelled_batches(gen, bs(32), (20, 32))
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = _classification_loss()
    else:
        # 2-layer TransformerEncoder, d_model 64, 4 heads, on 16 sequences of 32 tokens; next-token loss (size 1).
        model = _TransformerNet(d_model=w(64, 4), ff=w(256))
        batches = torch_parts.next_token_batches(torch, gen, 512, bs(16), 32, NUM_BATCHES)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = torch_parts.next_token_loss(nn.CrossEntropyLoss())
    model.train()
    return model, opt, batches, loss_fn


def train_step(model, opt, batch, loss_fn):
    opt.zero_grad()
    loss = loss_fn(model, batch)
    loss.backward()
    opt.step()
    return loss.item()


def params_sha256(model):
    """sha256 over (name, dtype, shape, bytes) of every parameter and buffer, in state_dict order.

    Hashes the tensors' memory in place (memoryview), so hashing allocates nothing tensor-sized.
    """
    h = hashlib.sha256()
    with torch.no_grad():
        for name, t in model.state_dict().items():
            t = t.detach().contiguous()
            h.update(f"{name}:{t.dtype}:{tuple(t.shape)};".encode())
            h.update(memoryview(t.numpy()).cast("B"))
    return h.hexdigest()
