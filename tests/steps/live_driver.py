"""A training loop that does NOT mark its steps, for testing the automatic step detector live.

usage: live_driver.py MODEL STEPS TRUTH.json
MODEL: mlp, cnn, lstm, transformer (tests/e2e/e2e_models.py), dataloader (an MLP fed by a DataLoader
with 2 forked workers), loader_phases (training, then evaluation, each a DataLoader loop left with
`break` part-way through an epoch; loader_phases_late_zero: the same, zeroing the gradients after the
loss), word_lm (a word language model trained the way pytorch/examples' does it:
truncated backpropagation through time, gradient clipping, a hand-written SGD update) or keras (TensorFlow/Keras fit; run with the TensorFlow venv's python), all with
their thread pools pinned to one thread; epochs (a CNN trained epoch after epoch as users write it, a
short last batch and an evaluation pass each, pools not pinned) and accum (the same with gradient
accumulation over 4 batches and an evaluation phase); or a thread-pool workload of workloads.py (keras_mlp,
keras_tfdata, keras_cnn, keras_batch, torch_threads, torch_pin, torch_phases), pools not pinned.
TRUTH.json receives the true step starts: the runtime's tracked-allocation count when each step began,
read through sentinel_get_stats() (which does not mark anything); for the thread-pool workloads also
each step's phase and a digest of the results. Without libsentinel.so loaded, the starts are all 0.
"""
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from sentinel_ctypes import allocation_clock  # noqa: E402  (tests/lib)


def torch_models(model, steps, clock):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
    import e2e_models
    m, opt, batches, loss_fn = e2e_models.build(model)
    starts = []
    for step in range(steps):
        starts.append(clock())
        e2e_models.train_step(m, opt, batches[step % len(batches)], loss_fn)
    return starts


def dataloader(steps, clock):
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset
    torch.manual_seed(0)
    torch.set_num_threads(1)
    ds = TensorDataset(torch.randn(32 * steps, 256), torch.randint(0, 10, (32 * steps,)))
    dl = DataLoader(ds, batch_size=32, num_workers=2, shuffle=False)
    m = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.SGD(m.parameters(), lr=0.05)
    starts = []
    it = iter(dl)
    for _ in range(steps):
        xb, yb = next(it)  # the batch arrives from a worker through shared memory: part of the step
        starts.append(clock())
        opt.zero_grad()
        nn.functional.cross_entropy(m(xb), yb).backward()
        opt.step()
    return starts


def loader_phases(steps, clock, zero_after_forward=False):
    """Training, then an evaluation pass, each a DataLoader loop that stops part-way through an epoch
    with `break`, as scripts that train and validate for a set number of batches do: two thirds of the
    steps train (AdamW, a two-layer transformer encoder), the rest evaluate under no_grad. Each loop's
    iterator has fetched one batch more than it ran when it breaks: the step that batch opens never
    runs, and no step is counted for it. The truth is read after each batch arrives.
    zero_after_forward: the loop computes the loss, then zeroes the gradients, as many scripts do
    (`loss = ...; opt.zero_grad(); loss.backward(); opt.step()`)."""
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset
    torch.manual_seed(0)
    torch.set_num_threads(1)
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 4, 128, batch_first=True), 2)
    head = nn.Linear(64, 10)
    opt = torch.optim.AdamW(list(encoder.parameters()) + list(head.parameters()), lr=1e-3)
    ds = TensorDataset(torch.randn(16 * 7, 32, 64), torch.randint(0, 10, (16 * 7,)))  # 7 batches an epoch
    train, evals = steps * 2 // 3, steps - steps * 2 // 3
    starts, done = [], 0
    while done < train:
        for x, y in DataLoader(ds, batch_size=16, shuffle=True):
            if done == train:
                break
            starts.append(clock())
            if not zero_after_forward:
                opt.zero_grad()
            loss = nn.functional.cross_entropy(head(encoder(x).mean(1)), y)
            if zero_after_forward:
                opt.zero_grad()
            loss.backward()
            opt.step()
            done += 1
    encoder.eval()
    done = 0
    with torch.no_grad():
        while done < evals:
            for x, y in DataLoader(ds, batch_size=16):
                if done == evals:
                    break
                starts.append(clock())
                nn.functional.cross_entropy(head(encoder(x).mean(1)), y).item()
                done += 1
    return starts


def word_lm(steps, clock):
    """An LSTM language model on a random token stream, trained as pytorch/examples' word_language_model
    trains one. Its iteration allocates nothing before the forward (the batch is a view of the corpus,
    the hidden state is detached), and its step ends in a big log_softmax whose output lives until the
    next step's loss replaces it."""
    import torch
    import torch.nn as nn
    torch.manual_seed(0)
    torch.set_num_threads(1)
    ntokens, emsize, nhid, nlayers, bptt, batch = 2000, 64, 64, 2, 20, 16

    class RNNModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.2)
            self.encoder = nn.Embedding(ntokens, emsize)
            self.rnn = nn.LSTM(emsize, nhid, nlayers, dropout=0.2)
            self.decoder = nn.Linear(nhid, ntokens)

        def forward(self, tokens, hidden):
            emb = self.drop(self.encoder(tokens))
            output, hidden = self.rnn(emb, hidden)
            decoded = self.decoder(self.drop(output)).view(-1, ntokens)
            return nn.functional.log_softmax(decoded, dim=1), hidden

    corpus = torch.randint(0, ntokens, (bptt * (steps + 1) + 1, batch))
    model = RNNModel()
    criterion = nn.NLLLoss()
    hidden = (torch.zeros(nlayers, batch, nhid), torch.zeros(nlayers, batch, nhid))
    lr, starts = 20.0, []
    model.train()
    for i in range(0, bptt * steps, bptt):
        starts.append(clock())
        data, targets = corpus[i:i + bptt], corpus[i + 1:i + 1 + bptt].reshape(-1)
        model.zero_grad()
        hidden = tuple(h.detach() for h in hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
    return starts


def epochs(steps, clock, accumulate=1):
    """A script as users write one on PyTorch 2.x, thread pools not pinned: a 2-conv, 2-linear CNN under
    AdamW, a shuffled DataLoader of 900 samples at batch 64 (14 batches and a last one of 4), then an
    evaluation pass under no_grad, epoch after epoch. The truth is each iteration's start (read after its
    batch arrives). Each epoch repeats exactly: before the detector told a loop of steps from a step, the
    epoch was taken for the step (docs/step-detection.md, "Epochs").
    accumulate=1 ("epochs"): steps // 15 epochs; the evaluation passes hold 100 samples (2 batches), too
    few to be a phase, and are not in the truth.
    accumulate=4 ("accum"): gradient accumulation, the optimizer's update after every 4th batch (3 an
    epoch; the epoch's last 3 batches carry their gradients into the next, as such loops do), and a
    StepLR schedule; the evaluation passes hold 1000 samples (16 batches), a phase of their own, and are
    in the truth: steps // 31 epochs. Before, the update's allocations, foreign to the micro-batch's
    lock and in rhythm, voided it (docs/step-detection.md, "Tolerance policy")."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset
    torch.manual_seed(0)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2 = nn.Conv2d(3, 32, 3, padding=1), nn.Conv2d(32, 64, 3, padding=1)
            self.f1, self.f2 = nn.Linear(64 * 8 * 8, 256), nn.Linear(256, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.c1(x)), 2)
            x = F.max_pool2d(F.relu(self.c2(x)), 2)
            return self.f2(F.relu(self.f1(x.flatten(1))))

    g = torch.Generator()
    g.manual_seed(1)
    train = DataLoader(TensorDataset(torch.randn(900, 3, 32, 32), torch.randint(0, 10, (900,))), batch_size=64,
                       shuffle=True, generator=g)
    n_val = 100 if accumulate == 1 else 1000
    val = DataLoader(TensorDataset(torch.randn(n_val, 3, 32, 32), torch.randint(0, 10, (n_val,))), batch_size=64)
    model = Net()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    schedule = torch.optim.lr_scheduler.StepLR(opt, 1, 0.9)
    starts = []
    for _ in range(steps // (len(train) + (len(val) if accumulate > 1 else 0))):
        model.train()
        for i, (x, y) in enumerate(train):
            starts.append(clock())
            if accumulate == 1:
                opt.zero_grad()
            (F.cross_entropy(model(x), y) / accumulate).backward()
            if (i + 1) % accumulate == 0:
                opt.step()
                if accumulate > 1:
                    opt.zero_grad()
        if accumulate > 1:
            schedule.step()
        model.eval()
        with torch.no_grad():
            for x, y in val:
                if accumulate > 1:
                    starts.append(clock())
                (model(x).argmax(1) == y).sum().item()
    return starts


def keras(steps, clock):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import numpy as np
    import tensorflow as tf
    tf.keras.utils.set_random_seed(0)
    tf.config.experimental.enable_op_determinism()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    x = np.random.RandomState(0).rand(32 * steps, 784).astype("float32")
    y = np.random.RandomState(1).randint(0, 10, 32 * steps)
    model = tf.keras.Sequential([tf.keras.Input((784,)), tf.keras.layers.Dense(1024, activation="relu"),
                                 tf.keras.layers.Dense(512, activation="relu"), tf.keras.layers.Dense(10)])
    model.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    starts = []

    class Truth(tf.keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            starts.append(clock())
    model.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0, callbacks=[Truth()])
    return starts


def main():
    model, steps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    clock = allocation_clock()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import workloads
    if model in workloads.WORKLOADS:
        starts, phases = [], []

        def on_step(phase):
            starts.append(clock())
            phases.append(phase)
        digest = workloads.run(model, steps, on_step)
        with open(out, "w") as f:
            json.dump({"model": model, "starts": starts, "phases": phases, "digest": digest, "end": clock()}, f)
        return
    if model == "dataloader":
        starts = dataloader(steps, clock)
    elif model == "keras":
        starts = keras(steps, clock)
    elif model == "word_lm":
        starts = word_lm(steps, clock)
    elif model == "epochs":
        starts = epochs(steps, clock)
    elif model == "accum":
        starts = epochs(steps, clock, accumulate=4)
    elif model == "loader_phases":
        starts = loader_phases(steps, clock)
    elif model == "loader_phases_late_zero":
        starts = loader_phases(steps, clock, zero_after_forward=True)
    else:
        starts = torch_models(model, steps, clock)
    with open(out, "w") as f:
        json.dump({"model": model, "starts": starts, "end": clock()}, f)


if __name__ == "__main__":
    main()
