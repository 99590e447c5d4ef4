"""Learning a WordPiece vocab from text with tensorflow-text's learner (tools/build_vocab.py)."""

import os

import tensorflow as tf

from bert_keras import text_files
from bert_keras.files import expand_patterns
from bert_keras.text.tokenizer import SPECIAL_TOKENS, normalize


def text_files_dataset(patterns):
    """Lines of the text files matching `patterns` (a glob or list of globs; .gz is
    decompressed) as a tf.data.Dataset of strings. FileNotFoundError if a glob matches nothing.

    The files are read once first under the text-file policy (`bert_keras.text_files.scan`):
    TextFileError for a binary or mis-named compressed file, more than 1% of lines not valid
    UTF-8, or no text at all; fewer bad lines are left out of the dataset (one warning per file).

    Example: `text_files_dataset("bert_keras/assets/web_bible_corpus.txt.gz")`
    """
    files = expand_patterns(patterns)
    counts = text_files.scan(files)
    gz = [f for f in files if f.endswith(".gz")]
    plain = [f for f in files if not f.endswith(".gz")]
    parts = []
    if gz:
        parts.append(tf.data.TextLineDataset(gz, compression_type="GZIP"))
    if plain:
        parts.append(tf.data.TextLineDataset(plain))
    ds = parts[0]
    for p in parts[1:]:
        ds = ds.concatenate(p)
    if any(c.bad_lines for c in counts):  # drop what the scan warned about
        ds = ds.filter(lambda line: text_files.good_lines_mask(line[None])[0])
    return ds


def learn_vocab(texts_or_files, vocab_size, lower_case=True, reserved_tokens=SPECIAL_TOKENS,
                max_token_length=50, max_unique_chars=1000, min_count=2, batch_size=1024):
    """Learns a WordPiece vocab with tensorflow-text's learner (`bert_vocab_from_dataset`).

    The text goes through the same normalization as `WordPieceTokenizer(lower_case=...)` and the
    same whitespace/punctuation/CJK splitting, so the vocab fits the tokenizer.

    Args:
      texts_or_files: a glob pattern (str) of text files (.gz ok), a list of texts, or a
        tf.data.Dataset of strings.
      vocab_size: target size (the learner hits it approximately, within a few percent).
      lower_case: learn an uncased vocab.
      reserved_tokens: first tokens of the vocab; default [PAD], [UNK], [CLS], [SEP], [MASK]
        (ids 0..4).
      max_token_length, max_unique_chars, min_count: passed to the learner (`lower_thresh`
        is min_count).

    Returns: the vocab, a list of tokens.

    The bundled bert_keras/assets/vocab.txt (7,887 tokens for a target of 8,000, uncased, ~20 s)
    was made with
      python tools/build_vocab.py --input=bert_keras/assets/web_bible_corpus.txt.gz \\
          --vocab_size=8000 --lower_case --output=bert_keras/assets/vocab.txt
    """
    from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset as bvd

    if vocab_size <= len(reserved_tokens):
        raise ValueError(f"vocab_size {vocab_size} must exceed the {len(reserved_tokens)} "
                         "reserved tokens.")
    if isinstance(texts_or_files, tf.data.Dataset):
        ds = texts_or_files
    elif isinstance(texts_or_files, (str, os.PathLike)):
        ds = text_files_dataset(texts_or_files)
    else:
        ds = tf.data.Dataset.from_tensor_slices(tf.constant(list(texts_or_files), tf.string))
    ds = ds.batch(batch_size).map(lambda t: normalize(t, lower_case),
                                  num_parallel_calls=tf.data.AUTOTUNE)
    vocab = bvd.bert_vocab_from_dataset(
        ds, vocab_size=vocab_size, reserved_tokens=list(reserved_tokens),
        bert_tokenizer_params=dict(lower_case=False),
        learn_params=dict(max_token_length=max_token_length, max_unique_chars=max_unique_chars,
                          lower_thresh=min_count))
    return list(vocab)
