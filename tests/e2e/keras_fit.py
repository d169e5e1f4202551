#!/usr/bin/env python3
"""Deterministic TensorFlow/Keras training run for Sentinel's end-to-end tests.

usage: keras_fit.py --out RESULT.json [--epochs N]     (run with the TensorFlow venv's python)

Fits a small conv net with Keras' model.fit on fixed synthetic data (1x28x28 images, 10 classes) and
writes RESULT.json: {"epochs", "losses": [float.hex() per epoch], "weights_sha256", "batches",
"sentinel_loaded", "tf_version"}. Exits 77 (skip) if TensorFlow cannot be imported.
If libsentinel.so is loaded, sentinel_step() is called at the start of every training batch.
"""

import argparse
import hashlib
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import sentinel_ctypes  # noqa: E402  (tests/lib)

SEED = 1234
SAMPLES = 512
BATCH = 64


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--epochs", type=int, default=3)
    args = ap.parse_args()

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    try:
        import numpy as np
        import tensorflow as tf
    except ImportError as e:
        print(f"keras_fit: TensorFlow is not importable by {sys.executable}: {e}", file=sys.stderr)
        return 77

    # Before anything creates the TF runtime: one thread each, deterministic ops, fixed seeds.
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.experimental.enable_op_determinism()
    tf.keras.utils.set_random_seed(SEED)

    rng = np.random.RandomState(SEED + 1)
    x = rng.standard_normal((SAMPLES, 28, 28, 1)).astype(np.float32)
    y = rng.randint(0, 10, size=(SAMPLES,)).astype(np.int32)

    mark = sentinel_ctypes.step_marker()

    batches = []

    class StepMarker(tf.keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            batches.append(batch)
            if mark is not None:
                mark()

    keras = tf.keras
    model = keras.Sequential([
        keras.Input(shape=(28, 28, 1)),
        keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Flatten(),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(10),
    ])
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hist = model.fit(x, y, batch_size=BATCH, epochs=args.epochs, shuffle=True, verbose=0,
                     callbacks=[StepMarker()])

    h = hashlib.sha256()
    for i, w in enumerate(model.get_weights()):
        w = np.ascontiguousarray(w)
        h.update(f"{i}:{w.dtype}:{w.shape};".encode())
        h.update(memoryview(w).cast("B"))
    result = {
        "epochs": args.epochs,
        "losses": [float(v).hex() for v in hist.history["loss"]],
        "weights_sha256": h.hexdigest(),
        "batches": len(batches),
        "sentinel_loaded": mark is not None,
        "tf_version": tf.__version__,
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
