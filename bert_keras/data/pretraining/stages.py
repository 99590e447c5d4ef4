"""The in-graph stages both pretraining data paths share: chunk tokenization and masking.

`_flat_tokens` turns one chunk of documents into flat WordPiece ids with word starts and
sentence / document splits; `make_masker` builds the masking tf.function. The static tool
(`static.py`) and the dynamic pipeline (`dynamic.py`) run exactly these, so both produce the
same kind of examples. `default_vocab_file` is the vocab they use by default.
"""

import tensorflow as tf

from bert_keras import assets
from bert_keras.data.pretraining import masking
from bert_keras.text.tokenizer import is_suffix_token


def default_vocab_file():
    """The vocab bundled with the package (bert_keras/assets/vocab.txt)."""
    return assets.path("vocab.txt")


def make_masker(tokenizer, max_predictions_per_seq=20, masked_lm_prob=0.15,
                whole_word_mask=False, ngram=1):
    """(instances dict of [B, T] arrays, seed [2]) -> model-named dict, masked; a tf.function.

    The same function masks for the static tool and the dynamic pipeline.
    """
    kwargs = dict(mask_id=tokenizer.mask_id,
                  special_ids=[tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id],
                  replacement_ids=masking.replacement_token_ids(tokenizer.vocab),
                  masked_lm_prob=masked_lm_prob, max_predictions_per_seq=max_predictions_per_seq,
                  max_ngram=ngram)

    @tf.function(autograph=False)
    def mask_batch(batch, seed):
        out = masking.mask_tokens(
            batch["input_ids"], batch["input_mask"], seed,
            word_starts=batch["word_starts"] if whole_word_mask else None, **kwargs)
        out["input_mask"] = tf.cast(batch["input_mask"], tf.int32)  # (B, T)
        out["input_type_ids"] = tf.cast(batch["segment_ids"], tf.int32)  # (B, T)
        out["next_sentence_labels"] = tf.cast(batch["next_sentence_labels"], tf.int32)  # (B,)
        return out

    return mask_batch

def _tokenize_flat(tokenizer, lines):
    """`tokenizer.tokenize(lines)` as flat (ids int32 [P], row splits int32 [L + 1])."""
    ids = tokenizer.tokenize(lines)  # (L, (pieces))
    return ids.flat_values, tf.cast(ids.row_splits, tf.int32)


def _flat_tokens(tokenizer, is_suffix, lines, doc_ids, pair_mode):
    """One chunk of lines, in-graph -> pieces [P], word_starts [P], sentence splits [S + 1],
    document splits [D + 1] (lines and documents without tokens dropped) and the counts
    (empty-token lines, dropped documents) for the statistics. doc_ids: int [L], ascending."""
    pieces, splits = _tokenize_flat(tokenizer, lines)  # (P,), (L + 1,)
    word_starts = tf.logical_not(tf.gather(is_suffix, pieces))  # (P,)
    # A line's first piece starts a word even unmarked (byte-level BPE: no "Ġ" at line start).
    line_starts = tf.scatter_nd(splits[:-1, None], tf.ones_like(splits[:-1], tf.bool),
                                tf.shape(pieces))
    word_starts = tf.cast(word_starts | line_starts, tf.int32)
    nonempty = splits[1:] > splits[:-1]  # lines with no tokens are dropped
    splits = tf.concat([[0], tf.boolean_mask(splits[1:], nonempty)], 0)
    kept = tf.boolean_mask(doc_ids, nonempty)  # (S,) document of each kept sentence
    first = tf.concat([tf.size(kept)[None] > 0, kept[1:] != kept[:-1]], 0)  # (S,) starts a document
    doc_splits = tf.concat([tf.cast(tf.where(first)[:, 0], tf.int32), [tf.size(kept)]], 0)
    num_docs = tf.cast(tf.reduce_max(tf.concat([doc_ids, [-1]], 0)) + 1, tf.int32)
    skipped = num_docs - (tf.size(doc_splits) - 1)  # documents without any token
    if pair_mode == "sop":  # a lone one-token sentence cannot be split: graph_pairing skips it
        sentences = doc_splits[1:] - doc_splits[:-1]  # (D,)
        lengths = tf.gather(splits, doc_splits[1:]) - tf.gather(splits, doc_splits[:-1])
        skipped += tf.reduce_sum(tf.cast((sentences == 1) & (lengths < 2), tf.int32))
    counts = tf.stack([tf.reduce_sum(tf.cast(~nonempty, tf.int32)), skipped])
    return pieces, word_starts, splits, doc_splits, counts


def _suffix_flags(tokenizer):
    """Per vocab entry: whether it continues a word. WordPiece marks continuations ("##ing");
    SentencePiece and byte-level BPE mark word starts instead ("\u2581the", "\u0120the")."""
    marker = getattr(tokenizer, "word_start_marker", None)
    if marker is None:
        return [is_suffix_token(t) for t in tokenizer.vocab]
    return [not t.startswith(marker) for t in tokenizer.vocab]


def _suffix_table(tokenizer):
    """bool [V]: the "##" continuation pieces (every other piece starts a word)."""
    return tf.constant(_suffix_flags(tokenizer))


__all__ = [
    "default_vocab_file",
    "make_masker",
]
