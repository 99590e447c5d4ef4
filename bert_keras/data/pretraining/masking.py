"""In-graph masked-LM masking, the one implementation used by both pretraining data paths.

The static tool (`tools/create_pretraining_data.py`) and the dynamic `tf.data` pipeline both call
`mask_tokens` on padded batches of token ids; it is pure TF ops with stateless random numbers, so
the same (ids, seed) gives the same masks eagerly, in `tf.function` and inside `Dataset.map`.

Legend: B = batch, T = sequence length, P = max_predictions_per_seq.
"""

import re

import numpy as np
import tensorflow as tf

_SPECIAL_TOKEN = re.compile(r"^\[[^\]]*\]$")  # [PAD], [CLS], [unused17], ...


def replacement_token_ids(vocab):
    """Ids that the "10% random token" branch may draw: every vocab entry except bracketed specials.

    Google's script draws from the whole vocabulary (including [PAD], [CLS] and the [unusedN]
    slots); drawing only real tokens is what the paper describes ("a random token").

    >>> replacement_token_ids(["[PAD]", "[CLS]", "the", "##s"]).tolist()
    [2, 3]
    """
    ids = np.array([i for i, tok in enumerate(vocab) if not _SPECIAL_TOKEN.match(tok)], np.int32)
    if ids.size == 0:
        raise ValueError(f"vocab of {len(vocab)} entries has no non-special token to draw from")
    return ids


def ngram_starts(starts, seed, max_ngram):
    """The first tokens of n-gram units: `starts` (bool [B, T], word starts) regrouped into
    runs of n consecutive words from left to right, each n drawn from 1..`max_ngram` with
    p proportional to 1/n (ALBERT's n-gram masking). Returns bool [B, T], a subset of `starts`.

    >>> starts = tf.constant([[True] * 6])
    >>> bool(tf.reduce_all(ngram_starts(starts, [1, 2], 1) == starts))  # n = 1: every word
    True
    """
    batch, length = tf.shape(starts)[0], tf.shape(starts)[1]
    word_id = tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1  # (B, T) word of each token
    num_words = tf.reduce_sum(tf.cast(starts, tf.int32), axis=1)  # (B,)
    logits = tf.math.log([[1.0 / n for n in range(1, max_ngram + 1)]])
    span = tf.random.stateless_categorical(tf.tile(logits, [batch * length, 1]), 1,
                                           tf.cast(seed, tf.int64), dtype=tf.int32)
    span = tf.reshape(span, [batch, length]) + 1  # (B, T) unit length if a unit starts there

    def next_unit(word, is_first):  # word (B,): the word index where the current unit starts
        is_first = is_first | (tf.range(length)[None, :] == word[:, None])
        return word + tf.gather(span, tf.minimum(word, length - 1), batch_dims=1), is_first

    _, first_word = tf.while_loop(
        lambda word, _: tf.reduce_any(word < num_words), next_unit,
        (tf.zeros([batch], tf.int32), tf.zeros([batch, length], tf.bool)),
        maximum_iterations=length)  # (B, T) indexed by word
    return starts & tf.gather(first_word, tf.maximum(word_id, 0), batch_dims=1)


def mask_tokens(input_ids, input_mask, seed, *, mask_id, special_ids, replacement_ids,
                word_starts=None, masked_lm_prob=0.15, max_predictions_per_seq=20,
                mask_token_prob=0.8, random_token_prob=0.1, max_ngram=1):
    """Chooses and corrupts masked-LM targets for a padded batch, BERT style.

    Per row: `num_to_predict = min(P, max(1, round(n * masked_lm_prob)))` where n counts the
    maskable tokens (input_mask == 1 and not in `special_ids`: [CLS], [SEP] and padding are
    never chosen). Whole words (a token with `word_starts` 1 and the following tokens with 0)
    are taken in random order while the running total stays <= num_to_predict, so a word is
    never partly masked. With `max_ngram` N > 1 the units are n-grams of consecutive words
    (of WordPieces without `word_starts`), n drawn from 1..N with p proportional to 1/n, as
    ALBERT's n-gram masking (N = 3). Each chosen token becomes [MASK] with `mask_token_prob`, a
    random token from `replacement_ids` with `random_token_prob`, and stays unchanged otherwise.

    Args:
      input_ids: int [B, T] token ids. input_mask: int [B, T], 1 = real token.
      seed: int [2] stateless seed; equal seeds give equal masks.
      mask_id: id of [MASK]. special_ids: ids never masked (at least [CLS], [SEP], [PAD]).
      replacement_ids: int [R] ids for the random-token branch (see `replacement_token_ids`).
      word_starts: optional int/bool [B, T], 1 at the first WordPiece of each word (whole-word
        masking); None masks single WordPieces.
      max_ngram: the longest span of units masked together (1: none; ALBERT: 3).

    Returns:
      dict with `input_word_ids` int32 [B, T] (corrupted ids), `masked_lm_positions` int32
      [B, P] (ascending, 0-padded), `masked_lm_ids` int32 [B, P] (original ids, 0-padded),
      `masked_lm_weights` float32 [B, P] (1.0 for real predictions).

    Example:
    >>> out = mask_tokens([[101, 7, 8, 9, 102, 0]], [[1, 1, 1, 1, 1, 0]], [1, 2], mask_id=103,
    ...                   special_ids=[0, 101, 102], replacement_ids=[5, 6],
    ...                   max_predictions_per_seq=4)
    >>> int(out["masked_lm_weights"].numpy().sum())  # round(3 * 0.15) = 0 -> at least 1
    1
    """
    P = int(max_predictions_per_seq)
    ids = tf.cast(tf.convert_to_tensor(input_ids), tf.int32)  # (B, T)
    real = tf.cast(input_mask, tf.int32) > 0  # (B, T)
    batch, length = tf.shape(ids)[0], tf.shape(ids)[1]
    special = tf.constant(np.asarray(special_ids, np.int32).reshape(-1))
    replacement = tf.constant(np.asarray(replacement_ids, np.int32).reshape(-1))
    seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 3)

    is_special = tf.reduce_any(ids[:, :, None] == special[None, None, :], axis=-1)  # (B, T)
    cand = real & ~is_special  # (B, T) maskable tokens
    num_cand = tf.reduce_sum(tf.cast(cand, tf.float32), axis=1)  # (B,)
    budget = tf.cast(tf.round(num_cand * masked_lm_prob), tf.int32)  # round half to even, as py3
    budget = tf.minimum(tf.minimum(tf.maximum(budget, 1), P), tf.cast(num_cand, tf.int32))  # (B,)
    scores = tf.random.stateless_uniform([batch, length], seeds[0])  # (B, T)

    if max_ngram > 1 and word_starts is None:  # n-grams of single WordPieces
        word_starts = tf.ones_like(ids)
    if word_starts is None:  # single WordPieces: the `budget` best random scores among cand
        k = tf.minimum(length, P)
        _, top = tf.math.top_k(tf.where(cand, scores, -1.0), k=k, sorted=True)  # (B, k)
        top = tf.where(tf.range(k)[None, :] < budget[:, None], top, length)
        key = tf.pad(tf.sort(top, axis=1), [[0, 0], [0, P - k]], constant_values=length)
    else:  # whole words in random order while the running total stays within budget
        prev_cand = tf.pad(cand[:, :-1], [[0, 0], [1, 0]])
        # a maskable token after a non-maskable one always starts a word (e.g. after [SEP])
        starts = cand & ((tf.cast(word_starts, tf.int32) > 0) | ~prev_cand)
        if max_ngram > 1:  # n-gram units never run across [SEP]
            ngram_seed = tf.random.experimental.stateless_fold_in(tf.cast(seed, tf.int64), 3)
            starts = cand & (ngram_starts(starts, ngram_seed, max_ngram) | ~prev_cand)
        word_id = tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1  # (B, T) word per token
        num_words = tf.reduce_sum(tf.cast(starts, tf.int32), axis=1)  # (B,)
        # Word lengths in WordPieces, (B, T) indexed by word id (columns >= num_words are 0).
        row_base = tf.range(batch)[:, None] * length
        segment = tf.where(cand, word_id + row_base, batch * length)
        word_len = tf.math.unsorted_segment_sum(tf.ones_like(ids), segment, batch * length + 1)
        word_len = tf.reshape(word_len[:-1], [batch, length])  # (B, T)
        scores = tf.where(tf.range(length)[None, :] < num_words[:, None], scores, 2.0)
        order = tf.argsort(scores, axis=1, stable=True)  # (B, T) word ids, random order first
        sorted_len = tf.gather(word_len, order, batch_dims=1)
        take_sorted = (tf.cumsum(sorted_len, axis=1) <= budget[:, None]) & (sorted_len > 0)
        take_word = tf.gather(take_sorted, tf.argsort(order, axis=1), batch_dims=1)  # by word
        selected = cand & tf.gather(take_word, tf.maximum(word_id, 0), batch_dims=1)  # (B, T)
        pos = tf.range(length)[None, :]
        key = tf.where(selected, pos, pos + length)  # (B, T) selected positions sort first
        key = tf.pad(tf.sort(key, axis=1), [[0, 0], [0, tf.maximum(P - length, 0)]],
                     constant_values=2 * length)[:, :P]  # (B, P)

    # Selected positions ascending, padded to P; then 80% [MASK], 10% random, 10% unchanged.
    valid = key < length  # (B, P)
    positions = tf.where(valid, key, 0)
    lm_ids = tf.where(valid, tf.gather(ids, positions, batch_dims=1), 0)  # (B, P)
    u = tf.random.stateless_uniform([batch, P], seeds[1])
    pick = tf.random.stateless_uniform([batch, P], seeds[2], minval=0,
                                       maxval=tf.size(replacement), dtype=tf.int32)
    new = tf.where(u < mask_token_prob, tf.cast(mask_id, tf.int32),
                   tf.where(u < mask_token_prob + random_token_prob,
                            tf.gather(replacement, pick), lm_ids))
    rows = tf.broadcast_to(tf.range(batch)[:, None], [batch, P])
    cols = tf.where(valid, key, length)  # padding slots write a scratch column, sliced off
    corrupted = tf.tensor_scatter_nd_update(tf.pad(ids, [[0, 0], [0, 1]]),
                                            tf.stack([rows, cols], -1), new)[:, :length]  # (B, T)
    return {
        "input_word_ids": tf.ensure_shape(corrupted, ids.shape),
        "masked_lm_positions": tf.ensure_shape(positions, [None, P]),
        "masked_lm_ids": tf.ensure_shape(lm_ids, [None, P]),
        "masked_lm_weights": tf.ensure_shape(tf.cast(valid, tf.float32), [None, P]),
    }
