"""PyTorch pieces that several test workloads share, each defined once.

Importing this module imports nothing heavy: the functions take the caller's `torch` (and whatever it
made with it), and SyntheticSamples imports torch where it makes a sample. Each piece allocates exactly
what the inline code it replaced did, in the same order (the step tests count allocations).

    SyntheticSamples(n)                       map-style dataset of fixed random samples, for DataLoaders
    next_token_batches(torch, gen, vocab, batch, length, count)
    next_token_loss(ce)                       loss_fn(model, batch) for those batches
"""


class SyntheticSamples:
    """Map-style dataset of fixed random samples (784 features, 10 classes); picklable for workers.

    Sample i is drawn from its own generator (seed 1000 + i), so it is the same whichever worker
    process makes it and in whatever order."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import torch
        g = torch.Generator().manual_seed(1000 + i)
        return torch.randn(784, generator=g), int(torch.randint(0, 10, (1,), generator=g))


def next_token_batches(torch, gen, vocab, batch, length, count):
    """`count` language-model batches drawn from `gen`: (tokens, targets), each `batch` x `length` int64,
    the targets the tokens shifted by one (both cut from one random sequence of length + 1)."""
    batches = []
    for _ in range(count):
        seq = torch.randint(0, vocab, (batch, length + 1), generator=gen)
        batches.append((seq[:, :-1].contiguous(), seq[:, 1:].contiguous()))
    return batches


def next_token_loss(ce):
    """loss_fn(model, batch) for next_token_batches: `ce` (a CrossEntropyLoss) over every position."""
    def loss_fn(m, b):
        logits = m(b[0])
        return ce(logits.reshape(-1, logits.shape[-1]), b[1].reshape(-1))
    return loss_fn
