"""`Dropout`: the encoder's dropout layer, its masks hashed inside one XLA-compiled pass."""

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from bert_keras.models.layers import dropout_mask


@keras.saving.register_keras_serializable(package="bert_keras")
class Dropout(keras.layers.Dropout):
    """`keras.layers.Dropout` whose mask comes from a counter-based hash inside one
    XLA-compiled pass, forward and backward (`dropout_mask`), instead of TensorFlow's Philox
    kernel and a boolean mask written and read. An element is dropped with probability
    `rate` to within 2^-32.

    Example:
    >>> import numpy as np
    >>> y = np.asarray(Dropout(0.1, seed=1)(np.ones((1000, 100), "float32"), training=True))
    >>> round(float((y == 0).mean()), 2), float(y.max())
    (0.1, 1.1111111640930176)
    """

    def call(self, inputs, training=False, mask_seed=None):
        """`mask_seed`: the seed `seed_if_dropping` drew earlier for this call (where drawing
        it here would be inside a tf.cond branch), instead of the next one."""
        seed = self.seed_if_dropping(training) if mask_seed is None else mask_seed
        if seed is None:
            return super().call(inputs, training=training)
        return dropout_mask.dropout(ops.convert_to_tensor(inputs), seed, self.rate)

    def seed_if_dropping(self, training):
        """The next mask seed (`next_seed`) where `call` would drop with `dropout_mask`,
        else None."""
        if not training or not 0.0 < self.rate < 1.0 or self.noise_shape is not None:
            return None
        return self.next_seed()

    def next_seed(self):
        """A new (2,) int64 seed of a mask (`dropout_mask.keep_mask`): the seed generator's
        state, then advanced by (0, 1) as `SeedGenerator.next()` does, in 5 traced ops
        instead of its 8 (it reads the state twice and copies it with a `* 1`, which a
        TensorFlow read needs not: the read is a snapshot, ordered before the assign)."""
        state = self.seed_generator.state
        seed = tf.convert_to_tensor(state.value)  # a read now (`.value` is the variable)
        state.assign(seed + np.array([0, 1], seed.dtype.as_numpy_dtype))
        return tf.cast(seed, tf.int64)

