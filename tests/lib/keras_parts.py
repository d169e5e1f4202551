"""TensorFlow/Keras pieces that several test workloads share, each defined once.

Importing this module imports nothing heavy: the functions take the caller's `tf`, and random_samples
imports numpy. Each piece makes exactly what the inline code it replaced did, in the same order (the step
tests count allocations, the e2e test compares losses and weights bit for bit).

    setup_pinned(tf, seed)            one intra-op and one inter-op thread, deterministic ops, fixed seeds
    random_samples(n, shape, seed)    fixed synthetic data: (x float32 [n, *shape], y int32 [n] in 0..9)
    conv_net(tf)                      the small compiled conv net on 28x28x1 images, 10 classes
"""


def setup_pinned(tf, seed):
    """Before anything creates the TF runtime: one thread each, deterministic ops, fixed seeds."""
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.experimental.enable_op_determinism()
    tf.keras.utils.set_random_seed(seed)


def random_samples(n, shape, seed):
    """n standard-normal samples of `shape` (float32) and their labels (int32, 0..9), in that order from
    numpy's RandomState(seed)."""
    import numpy as np
    rng = np.random.RandomState(seed)
    x = rng.standard_normal((n,) + tuple(shape)).astype(np.float32)
    y = rng.randint(0, 10, size=(n,)).astype(np.int32)
    return x, y


def conv_net(tf):
    """Two conv blocks (16 and 32 filters) on 28x28x1, Dense 64, 10 logits; compiled with Adam(1e-3) and
    sparse categorical cross-entropy."""
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
    return model
