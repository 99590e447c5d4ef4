"""A linear-chain CRF over word tags: its layer (learned transition, start and end scores),
its negative log-likelihood (the forward algorithm in log space), Viterbi decoding and
per-position marginals (forward-backward), in core TF ops, so an export serves them.

Shape legend: B batch, T positions, C tags.

The chain runs over the positions where `mask` is true, in order, whatever lies between
them: the first piece of each word, the [CLS], [SEP], padding and non-first pieces left out.
A row with no such position has the empty path (score 0, log partition 0).

>>> import numpy as np
>>> crf = CRF(3)
>>> crf.build()
>>> emissions = np.array([[[0., 2., 0.], [9., 0., 0.], [0., 0., 1.]]], "float32")
>>> mask = np.array([[True, False, True]])
>>> crf.decode(emissions, mask).numpy().tolist()  # the middle position is no word
[[1, -1, 2]]
"""

import keras
import numpy as np
import tensorflow as tf

from bert_keras.models.objectives.losses import scale_for_replicas

# A forbidden transition's score: exp() of it is 0 in float32, yet no -inf reaches a
# logsumexp or its gradient.
FORBIDDEN = -1e4
CONSTRAINTS = ("none", "bio")


def allowed_transitions(labels, constraints="none"):
    """(allowed_start [C], allowed [C, C] (from, to)) bool arrays. "bio": a tag `I-X` only
    after `B-X` or `I-X`, never first; tags without a B-/I- prefix are free."""
    if constraints in (None, "none"):
        return None
    if constraints != "bio":
        raise ValueError(f"crf_constraints={constraints!r} is not one of {list(CONSTRAINTS)}.")
    if not labels:
        raise ValueError("crf_constraints='bio' needs the tag names (labels=).")
    labels = [str(label) for label in labels]
    start = np.ones(len(labels), bool)
    allowed = np.ones((len(labels), len(labels)), bool)
    for j, tag in enumerate(labels):
        if tag.startswith("I-"):
            start[j] = False
            allowed[:, j] = [t in (f"B-{tag[2:]}", tag) for t in labels]
    return start, allowed


def violations(tags, labels, constraints="none"):
    """The first (position, tag) of a tag sequence (names) that `constraints` forbid, or
    None."""
    rules = allowed_transitions(labels, constraints)
    if rules is None or not tags:
        return None
    start, allowed = rules
    index = {label: i for i, label in enumerate(labels)}
    ids = [index[t] for t in tags]
    if not start[ids[0]]:
        return 0, tags[0]
    for k in range(1, len(ids)):
        if not allowed[ids[k - 1], ids[k]]:
            return k, tags[k]
    return None


def check_tag_sequences(sequences, labels, constraints, owner):
    """ValueError naming the first sentence (lists of tag names) whose tags `constraints`
    forbid: a CRF scores them impossible, and a loss of thousands would train on them."""
    for i, tags in enumerate(sequences):
        found = violations(list(tags), labels, constraints)
        if found is not None:
            k, tag = found
            after = f"after {tags[k - 1]!r}" if k else "first"
            raise ValueError(
                f"{owner}: tag {tag!r} of word {k} of sentence {i} comes {after}, which "
                f"crf_constraints={constraints!r} forbids (IOB1 tags? use "
                "crf_constraints='none').")


@keras.saving.register_keras_serializable(package="bert_keras")
class CRF(keras.layers.Layer):
    """Learned transition (C, C), start (C,) and end (C,) scores of a linear-chain CRF,
    zeros at first (a CRF whose emissions alone decide: argmax and softmax). Optional
    `constraints` from the tag names `labels` (`allowed_transitions`) score forbidden
    moves `FORBIDDEN`, with no gradient.

    `learning_rate_multiplier` m: the variables hold the scores divided by m (`scores()`
    multiplies), so Adam-style optimizers (AdamW, LAMB), whose steps do not grow with the
    gradient, move the scores m times as fast as the encoder's weights: at a fine-tuning
    learning rate (5e-5) a CRF from zeros would hardly move in one epoch.

    Example:
    >>> import numpy as np
    >>> crf = CRF(3, labels=["O", "B-PER", "I-PER"], constraints="bio")
    >>> crf.build()
    >>> emissions = np.array([[[0., 0., 5.], [0., 0., 5.]]], "float32")
    >>> crf.decode(emissions, np.ones((1, 2), bool)).numpy().tolist()  # I-PER never first
    [[1, 2]]
    """

    def __init__(self, num_classes, labels=None, constraints="none",
                 learning_rate_multiplier=1.0, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.num_classes = int(num_classes)
        self.labels = list(labels) if labels is not None else None
        self.constraints = constraints or "none"
        self.learning_rate_multiplier = float(learning_rate_multiplier)
        if not self.learning_rate_multiplier > 0:
            raise ValueError("The CRF's learning_rate_multiplier must be > 0, got "
                             f"{learning_rate_multiplier!r}.")
        self._rules = allowed_transitions(self.labels, self.constraints)

    def build(self, input_shape=None):
        c = self.num_classes
        self.transitions = self.add_weight(shape=(c, c), initializer="zeros",
                                           name="transitions")
        self.start_scores = self.add_weight(shape=(c,), initializer="zeros", name="start")
        self.end_scores = self.add_weight(shape=(c,), initializer="zeros", name="end")
        self.built = True

    def scores(self):
        """(transitions (C, C), start (C,), end (C,)) float32, forbidden moves FORBIDDEN."""
        m = self.learning_rate_multiplier
        transitions = m * tf.convert_to_tensor(self.transitions)
        start = m * tf.convert_to_tensor(self.start_scores)
        if self._rules is not None:
            allowed_start, allowed = self._rules
            transitions = tf.where(allowed, transitions, FORBIDDEN)
            start = tf.where(allowed_start, start, FORBIDDEN)
        return transitions, start, m * tf.convert_to_tensor(self.end_scores)

    def call(self, emissions, mask):
        return self.decode(emissions, mask)

    def log_partition(self, emissions, mask):
        """log Z (B,) of each row's chain."""
        e, length, _ = _compact(emissions, mask)
        return _log_partition(e, length, *self.scores())

    def path_score(self, emissions, tags, mask):
        """The score (B,) of `tags` (B, T) int over the chain of each row."""
        e, length, order = _compact(emissions, mask)
        tags = tf.pad(tf.cast(tags, tf.int32), [[0, 0], [0, 1]])
        tags = tf.gather(tags, order, batch_dims=1)
        return _path_score(e, tags, length, *self.scores())

    def negative_log_likelihood(self, emissions, tags):
        """-log p(tags) (B,) of each row, its chain the positions whose tag is >= 0."""
        mask = tags >= 0
        tags = tf.maximum(tf.cast(tags, tf.int32), 0)
        tf.debugging.assert_less(  # a gather would clamp it (XLA) or fail deep in the graph
            tags, self.num_classes, message="CRF: a tag id is outside [0, num_classes)")
        emissions = tf.cast(emissions, tf.float32)
        return self.log_partition(emissions, mask) - self.path_score(emissions, tags, mask)

    def decode(self, emissions, mask):
        """The Viterbi path (B, T) int32 over each row's chain; -1 off the chain."""
        e, length, order = _compact(tf.cast(emissions, tf.float32), mask)
        return _expand(_viterbi(e, length, *self.scores()), order, length, -1)

    def marginals(self, emissions, mask):
        """p(tag at position) (B, T, C) float32 by forward-backward; 0 off the chain."""
        e, length, order = _compact(tf.cast(emissions, tf.float32), mask)
        return _expand(_marginals(e, length, *self.scores()), order, length, 0.0)

    def get_config(self):
        config = super().get_config()
        config.update(num_classes=self.num_classes, labels=self.labels,
                      constraints=self.constraints,
                      learning_rate_multiplier=self.learning_rate_multiplier)
        return config


@keras.saving.register_keras_serializable(package="bert_keras")
class CRFLoss(keras.losses.Loss):
    """The CRF's negative log-likelihood of the tags, summed over the rows of the batch and
    divided by the number of tagged positions: with zero transitions, start and end scores
    this is the token cross entropy of the emissions. y_true (B, T) int, negative where no
    word starts; y_pred the emissions (B, T, C); sample_weight (B,) per row, or None.
    `crf` is the model's CRF layer (its tagger binds it when it compiles)."""

    def __init__(self, name="crf_loss", crf=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.crf = crf

    def __call__(self, y_true, y_pred, sample_weight=None):
        nll = self.crf.negative_log_likelihood(y_pred, y_true)  # (B,)
        if sample_weight is not None:
            nll = nll * tf.reshape(tf.cast(sample_weight, tf.float32), [-1])
        tagged = tf.reduce_sum(tf.cast(y_true >= 0, tf.float32))
        return scale_for_replicas(tf.math.divide_no_nan(tf.reduce_sum(nll), tagged))

    def call(self, y_true, y_pred):  # Unused: __call__ does the weighting itself.
        raise NotImplementedError("CRFLoss is used through __call__.")

    def get_config(self):
        return dict(name=self.name)


# --- the algorithms over chains packed at the front of each row ----------------------------

def _compact(values, mask):
    """`values` (B, T, ...) with each row's chain positions moved to the front, in order,
    and one position off the chain after them all (so no loop runs over zero positions);
    (compacted (B, T + 1, ...), length (B,) int32, order (B, T + 1): the position of each
    compacted entry)."""
    mask = tf.pad(tf.cast(mask, tf.bool), [[0, 0], [0, 1]])
    values = tf.concat([values, tf.zeros_like(values[:, :1])], 1)
    t = tf.shape(mask)[1]
    key = tf.where(mask, 0, t) + tf.range(t)[None]  # chain first, each part in order
    order = tf.argsort(key, axis=1, stable=True)
    length = tf.reduce_sum(tf.cast(mask, tf.int32), axis=1)
    return tf.gather(values, order, batch_dims=1), length, order


def _expand(compacted, order, length, fill):
    """The inverse of `_compact`: compacted entries back at their positions (B, T, ...),
    `fill` off the chain."""
    valid = tf.range(tf.shape(order)[1])[None] < length[:, None]
    back = tf.argsort(order, axis=1)
    values = tf.gather(compacted, back, batch_dims=1)
    on_chain = tf.gather(valid, back, batch_dims=1)
    while on_chain.shape.rank < values.shape.rank:
        on_chain = on_chain[..., None]
    return tf.where(on_chain, values, tf.cast(fill, values.dtype))[:, :-1]


def _time_major(e, length):
    """(emissions (T, B, C), valid (T, B, 1)) of compacted rows."""
    valid = tf.range(tf.shape(e)[1])[:, None] < length[None]
    return tf.transpose(e, [1, 0, 2]), valid[..., None]


def _forward(e, length, transitions, start):
    """alpha (T, B, C): log-sum of the scores of the paths ending in each tag, carried on
    past each row's length."""
    e, valid = _time_major(e, length)

    def step(alpha, inputs):
        emission, ok = inputs
        moved = tf.reduce_logsumexp(alpha[:, :, None] + transitions[None], axis=1) + emission
        return tf.where(ok, moved, alpha)

    first = start[None] + e[0]
    return tf.concat([first[None], tf.scan(step, (e[1:], valid[1:]), initializer=first)], 0)


def _log_partition(e, length, transitions, start, end):
    alpha = _forward(e, length, transitions, start)
    log_z = tf.reduce_logsumexp(alpha[-1] + end[None], axis=-1)
    return tf.where(length > 0, log_z, 0.0)


def _path_score(e, tags, length, transitions, start, end):
    valid = tf.range(tf.shape(e)[1])[None] < length[:, None]  # (B, T)
    emitted = tf.gather(e, tags, batch_dims=2)  # (B, T)
    moves = tf.gather_nd(transitions, tf.stack([tags[:, :-1], tags[:, 1:]], -1))  # (B, T-1)
    last = tf.gather(tags, tf.maximum(length - 1, 0), batch_dims=1)
    ends = tf.gather(start, tags[:, 0]) + tf.gather(end, last)
    return (tf.reduce_sum(tf.where(valid, emitted, 0.0), 1)
            + tf.reduce_sum(tf.where(valid[:, 1:], moves, 0.0), 1)
            + tf.where(length > 0, ends, 0.0))


def _viterbi(e, length, transitions, start, end):
    """The best path (B, T) int32 of compacted rows (past a row's length: its last tag)."""
    e, valid = _time_major(e, length)
    c = tf.shape(transitions)[0]
    stay = tf.broadcast_to(tf.range(c)[None], tf.shape(e[0]))  # (B, C) identity pointers

    def step(carry, inputs):
        delta, _ = carry
        emission, ok = inputs
        candidates = delta[:, :, None] + transitions[None]  # (B, from, to)
        moved = tf.reduce_max(candidates, axis=1) + emission
        pointer = tf.argmax(candidates, axis=1, output_type=tf.int32)
        return tf.where(ok, moved, delta), tf.where(ok, pointer, stay)

    first = start[None] + e[0]
    deltas, pointers = tf.scan(step, (e[1:], valid[1:]), initializer=(first, stay))
    last = tf.concat([first[None], deltas], 0)[-1]
    best = tf.argmax(last + end[None], axis=-1, output_type=tf.int32)  # (B,)

    def back(tag, pointer):  # the tag one step earlier
        return tf.gather(pointer, tag, batch_dims=1)

    earlier = tf.scan(back, pointers, initializer=best, reverse=True)  # (T-1, B)
    return tf.transpose(tf.concat([earlier, best[None]], 0))


def _marginals(e, length, transitions, start, end):
    """p(tag) (B, T, C) of compacted rows, by forward-backward."""
    alpha = _forward(e, length, transitions, start)  # (T, B, C)
    e_t, valid = _time_major(e, length)
    # beta[t]: log-sum of the scores after position t, given its tag; `end` at the last.
    after = tf.concat([valid[1:], tf.zeros_like(valid[:1])], 0)  # position t + 1 in the chain

    def step(beta, inputs):
        emission, ok = inputs  # of position t + 1
        moved = tf.reduce_logsumexp(transitions[None] + (emission + beta)[:, None, :], axis=2)
        return tf.where(ok, moved, end[None] + tf.zeros_like(beta))

    last = end[None] + tf.zeros_like(e_t[0])
    beta = tf.scan(step, (e_t[1:], after[:-1]), initializer=last, reverse=True)
    beta = tf.concat([beta, last[None]], 0)
    log_z = tf.reduce_logsumexp(alpha[-1] + end[None], axis=-1)  # (B,)
    return tf.transpose(tf.exp(alpha + beta - log_z[None, :, None]), [1, 0, 2])
