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
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import keras_parts  # noqa: E402  (tests/lib)
import result_json  # noqa: E402  (tests/lib)
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

    keras_parts.setup_pinned(tf, SEED)
    x, y = keras_parts.random_samples(SAMPLES, (28, 28, 1), SEED + 1)

    mark = sentinel_ctypes.step_marker()

    batches = []

    class StepMarker(tf.keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            batches.append(batch)
            if mark is not None:
                mark()

    model = keras_parts.conv_net(tf)
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
    result_json.write(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
