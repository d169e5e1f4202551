"""Training loops whose allocations come from thread pools, shared by the fixture recorder
(tests/fixtures/record_stream.py) and the live step tests (tests/steps/check_threaded_steps.py).

Nothing here pins a thread pool to one thread: TensorFlow runs with its default inter- and intra-op
pools (op determinism on, which makes results reproducible but does not serialise the pools),
PyTorch with 2 intra-op and 2 inter-op threads. So the order of a step's allocations changes from step
to step, which is what the order-free step detector must cope with (docs/step-detection.md).

run(name, steps, on_step) runs workload `name` for about `steps` training steps and calls
on_step(phase) at the start of every step (phase "train" or "eval"); it returns a hex digest of the
final parameters and the losses, so that a run with and without libsentinel.so can be compared bit for
bit. Every workload is deterministic in its data and initialisation.

Workloads (TF ones need the TensorFlow venv's python):
  keras_mlp      Keras fit, MLP 784-1024-512-10, batch 32, on numpy arrays (the fixtures keras_*.txt were
                 recorded with 784-512-256-10: with oneDNN's AVX2 kernels that model's step has only 3-4
                 tracked allocations, see docs/step-detection.md, "oneDNN's kernels")
  keras_tfdata   Keras fit of the same MLP on tf.data: interleave over 4 shards (parallel), batch, prefetch
  keras_cnn      Keras fit, a conv net on 28x28x1, batch 32
  keras_batch    Keras fit, the MLP with batch 32 for half the steps, then batch 48 (a second fit)
  keras_val      Keras fit of the MLP with validation data, as users write it: 3 epochs of steps/3 training
                 batches of 32 (shuffled), each followed by Keras's validation pass over 13 batches of 32
                 (phases train and eval; steps 156 is the reported run: 156 training steps, 39 validation)
  keras_val_cnn  Keras fit of a CIFAR-sized conv net (32x32x3; conv 64 and 128, Dense 512, 10; Adam), batch
                 64, 2 epochs, validation_split (0.2 at steps 104: 52 training batches and 13 validation
                 batches an epoch), as a user's script has it
  torch_threads  PyTorch, 2+2 threads: a scripted two-tower net whose towers run in parallel
                 (torch.jit.fork on the inter-op pool), so both towers' same-sized tensors race
  torch_pin      PyTorch MLP fed by a DataLoader with 2 worker processes and pin_memory=True, and a
                 pinning thread (see _PinThread)
  torch_phases   PyTorch CNN, 2+2 threads: train, evaluate (no_grad), train again
"""

import hashlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import keras_parts  # noqa: E402  (tests/lib; imports no TensorFlow itself)
import torch_parts  # noqa: E402  (tests/lib; imports no torch itself)

TF_WORKLOADS = ("keras_mlp", "keras_tfdata", "keras_cnn", "keras_batch", "keras_val", "keras_val_cnn")
TORCH_WORKLOADS = ("torch_threads", "torch_pin", "torch_phases")
WORKLOADS = TF_WORKLOADS + TORCH_WORKLOADS


def _digest(parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else repr(p).encode())
    return h.hexdigest()


# ------------------------------------------------------------------------------------ TensorFlow

def _tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import tensorflow as tf
    tf.keras.utils.set_random_seed(1234)
    tf.config.experimental.enable_op_determinism()  # reproducible results; the pools stay parallel
    return tf


def _keras_mlp_model(tf):
    keras = tf.keras
    model = keras.Sequential([keras.Input((784,)), keras.layers.Dense(1024, activation="relu"),
                              keras.layers.Dense(512, activation="relu"), keras.layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _marker_callback(tf, on_step):
    class StepMarker(tf.keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            on_step("train")

        def on_test_batch_begin(self, batch, logs=None):
            on_step("eval")
    return StepMarker()


class _Losses:
    def __init__(self, tf):
        self.values = []
        outer = self

        class Keep(tf.keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                outer.values.append(float(logs["loss"]) if logs and "loss" in logs else None)
        self.callback = Keep()


def _keras_digest(model, losses):
    return _digest([w.tobytes() for w in model.get_weights()] + [losses])


def _mlp_data(n):
    return keras_parts.random_samples(n, (784,), 1235)


def _fit_arrays(tf, model, x, y, on_step):
    """One epoch of model.fit on the arrays x, y in batches of 32, unshuffled, each step marked: the digest."""
    losses = _Losses(tf)
    model.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0,
              callbacks=[_marker_callback(tf, on_step), losses.callback])
    return _keras_digest(model, losses.values)


def keras_mlp(steps, on_step):
    tf = _tf()
    x, y = _mlp_data(32 * steps)
    return _fit_arrays(tf, _keras_mlp_model(tf), x, y, on_step)


def keras_tfdata(steps, on_step):
    tf = _tf()
    x, y = _mlp_data(32 * steps)
    shards = 4
    base = tf.data.Dataset.from_tensor_slices((x, y))
    # Four shards read in parallel by interleave's threads (deterministic order of elements, parallel
    # production), then batched and prefetched by tf.data's own threads.
    ds = tf.data.Dataset.range(shards).interleave(
        lambda i: base.shard(shards, i), cycle_length=shards, block_length=8,
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    ds = ds.map(lambda a, b: (a * 0.5, b), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    ds = ds.batch(32, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
    model = _keras_mlp_model(tf)
    losses = _Losses(tf)
    # steps_per_epoch: without it Keras probes the dataset once more after the last batch (one more
    # on_train_batch_begin than there are steps).
    model.fit(ds, epochs=1, steps_per_epoch=steps, verbose=0,
              callbacks=[_marker_callback(tf, on_step), losses.callback])
    return _keras_digest(model, losses.values)


def keras_cnn(steps, on_step):
    tf = _tf()
    x, y = keras_parts.random_samples(32 * steps, (28, 28, 1), 1236)
    return _fit_arrays(tf, keras_parts.conv_net(tf), x, y, on_step)


def keras_batch(steps, on_step):
    tf = _tf()
    half = steps // 2
    x, y = _mlp_data(32 * half + 48 * (steps - half))
    model = _keras_mlp_model(tf)
    losses = _Losses(tf)
    cb = [_marker_callback(tf, on_step), losses.callback]
    n32 = 32 * half
    model.fit(x[:n32], y[:n32], batch_size=32, epochs=1, shuffle=False, verbose=0, callbacks=cb)
    model.fit(x[n32:], y[n32:], batch_size=48, epochs=1, shuffle=False, verbose=0, callbacks=cb)
    return _keras_digest(model, losses.values)


KERAS_VAL_EPOCHS = 3
KERAS_VAL_BATCHES = 13  # validation batches of 32 each epoch (an 80/20 split of 52 training batches)


def keras_val(steps, on_step):
    tf = _tf()
    per_epoch = max(1, steps // KERAS_VAL_EPOCHS)
    x, y = _mlp_data(32 * (per_epoch + KERAS_VAL_BATCHES))
    n = 32 * per_epoch
    model = _keras_mlp_model(tf)
    losses = _Losses(tf)
    model.fit(x[:n], y[:n], batch_size=32, epochs=KERAS_VAL_EPOCHS, verbose=0,
              validation_data=(x[n:], y[n:]), callbacks=[_marker_callback(tf, on_step), losses.callback])
    return _keras_digest(model, losses.values)


KERAS_VAL_CNN_EPOCHS = 2


def _keras_val_cnn_batches(steps):
    """(training, validation) batches of 64 an epoch: a quarter as many validation batches, rounded up."""
    train = max(1, steps // KERAS_VAL_CNN_EPOCHS)
    return train, (train + 3) // 4


def keras_val_cnn(steps, on_step):
    tf = _tf()
    keras = tf.keras
    train, val = _keras_val_cnn_batches(steps)
    x, y = keras_parts.random_samples(64 * (train + val), (32, 32, 3), 1237)
    model = keras.Sequential([
        keras.Input((32, 32, 3)),
        keras.layers.Conv2D(64, 3, activation="relu"), keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(128, 3, activation="relu"), keras.layers.MaxPooling2D(),
        keras.layers.Flatten(), keras.layers.Dense(512, activation="relu"), keras.layers.Dense(10)])
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    losses = _Losses(tf)
    model.fit(x, y, batch_size=64, epochs=KERAS_VAL_CNN_EPOCHS, verbose=0, validation_split=val / (train + val),
              callbacks=[_marker_callback(tf, on_step), losses.callback])
    return _keras_digest(model, losses.values)


# --------------------------------------------------------------------------------------- PyTorch

def _torch(intra=2, interop=2):
    import torch
    torch.manual_seed(1234)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(intra)
    torch.set_num_interop_threads(interop)
    return torch


def _torch_digest(torch, model, losses):
    parts = []
    with torch.no_grad():
        for name, t in model.state_dict().items():
            parts.append(name.encode())
            parts.append(memoryview(t.detach().contiguous().numpy()).cast("B").tobytes())
    return _digest(parts + [losses])


def torch_threads(steps, on_step):
    torch = _torch()
    import torch.nn as nn

    class Tower(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(784, 512)
            self.b = nn.Linear(512, 256)

        def forward(self, x):
            return torch.relu(self.b(torch.relu(self.a(x))))

    class TwoTower(nn.Module):
        def __init__(self):
            super().__init__()
            self.left = Tower()
            self.right = Tower()
            self.head = nn.Linear(512, 10)

        def forward(self, x):
            # The left tower runs on the inter-op pool while this thread runs the right one: the
            # two towers allocate tensors of the same sizes at the same time.
            fut = torch.jit.fork(self.left, x)
            r = self.right(x)
            return self.head(torch.cat([torch.jit.wait(fut), r], 1))

    model = torch.jit.script(TwoTower())
    gen = torch.Generator().manual_seed(1235)
    batches = [(torch.randn(64, 784, generator=gen), torch.randint(0, 10, (64,), generator=gen)) for _ in range(4)]
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ce = nn.CrossEntropyLoss()
    losses = []
    for step in range(steps):
        on_step("train")
        x, y = batches[step % len(batches)]
        opt.zero_grad()
        loss = ce(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return _torch_digest(torch, model, losses)


class _PinThread:
    """What DataLoader's pin_memory thread does, on a machine without CUDA.

    torch only starts its pinning thread when CUDA is available (it silently drops pin_memory=True on a
    CPU-only build, as here). This thread does the same work with a copy instead of a page-locked one:
    it takes each batch the worker processes produced and copies it into fresh memory, up to 2 batches
    ahead of the training loop, so that those copies are allocated by a second thread while the main
    thread trains (the allocation pattern of a CUDA run's pinning thread, where the copies are pinned
    host buffers).
    """

    def __init__(self, loader):
        import queue
        import threading
        self.q = queue.Queue(maxsize=2)
        self.t = threading.Thread(target=self._loop, args=(iter(loader),), daemon=True)
        self.t.start()

    def _loop(self, it):
        for x, y in it:
            self.q.put((x.clone(), y.clone()))
        self.q.put(None)

    def __iter__(self):
        while True:
            b = self.q.get()
            if b is None:
                return
            yield b


def torch_pin(steps, on_step):
    torch = _torch()
    import torch.nn as nn
    import warnings
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ce = nn.CrossEntropyLoss()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loader = torch.utils.data.DataLoader(torch_parts.SyntheticSamples(64 * steps), batch_size=64, shuffle=False,
                                             num_workers=2, pin_memory=True)
    losses = []
    it = iter(_PinThread(loader))
    for _ in range(steps):
        on_step("train")
        x, y = next(it)
        opt.zero_grad()
        loss = ce(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return _torch_digest(torch, model, losses)


def torch_phases(steps, on_step):
    """steps is split 2:1:2 into train, eval, train."""
    torch = _torch()
    import torch.nn as nn
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
    gen = torch.Generator().manual_seed(1236)
    batches = [(torch.randn(32, 1, 28, 28, generator=gen), torch.randint(0, 10, (32,), generator=gen))
               for _ in range(4)]
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    ce = nn.CrossEntropyLoss()
    losses = []
    train1 = steps * 2 // 5
    evals = steps // 5
    train2 = steps - train1 - evals
    step = 0
    for phase, n in (("train", train1), ("eval", evals), ("train", train2)):
        model.train(phase == "train")
        for _ in range(n):
            on_step(phase)
            x, y = batches[step % len(batches)]
            step += 1
            if phase == "train":
                opt.zero_grad()
                loss = ce(model(x), y)
                loss.backward()
                opt.step()
            else:
                with torch.no_grad():
                    loss = ce(model(x), y)
            losses.append(loss.item())
    return _torch_digest(torch, model, losses)


def phases_of(name, steps):
    """The phase label of every true step, in order (what on_step receives)."""
    if name == "torch_phases":
        train1, evals = steps * 2 // 5, steps // 5
        return ["train"] * train1 + ["eval"] * evals + ["train"] * (steps - train1 - evals)
    if name == "keras_val":
        return (["train"] * max(1, steps // KERAS_VAL_EPOCHS) + ["eval"] * KERAS_VAL_BATCHES) * KERAS_VAL_EPOCHS
    if name == "keras_val_cnn":
        train, val = _keras_val_cnn_batches(steps)
        return (["train"] * train + ["eval"] * val) * KERAS_VAL_CNN_EPOCHS
    return ["train"] * steps


def run(name, steps, on_step):
    if name not in WORKLOADS:
        raise SystemExit(f"workloads: unknown workload {name!r}; one of {', '.join(WORKLOADS)}")
    sys.dont_write_bytecode = True
    return globals()[name](steps, on_step)
