"""Dynamic pretraining data: raw text (files or a TFDS text dataset) -> tf.data batches with
fresh pairs and masks every epoch.

`dynamic_pretraining_dataset(...)` reads, chunks, tokenizes, pairs and masks in pure tf.data
and TF ops (no Python callbacks), deterministically for a seed.
"""

import tensorflow as tf

from bert_keras.data.pretraining import documents, pairing, unknown_tokens
from bert_keras.data.pretraining.records import shard_input, to_model_format
from bert_keras.data.pretraining.stages import _flat_tokens, _suffix_table, make_masker
from bert_keras.files import expand_patterns
from bert_keras.text_files import describe_files, good_lines_mask

_ROW_FIELDS = ("input_ids", "input_mask", "segment_ids", "word_starts")  # int32 [N, T] each


def _packed_instances(instances, max_seq_length):
    """The instances of `build_instances` as one int32 [N, 4 T + 1] tensor: the four [N, T]
    fields side by side, then next_sentence_labels. Unbatched and shuffled one by one, an
    instance costs tf.data per tensor: one tensor instead of five fills the shuffle buffer
    several times faster (the shuffle's order depends only on its seed and the count)."""
    rows = [instances[k] for k in _ROW_FIELDS] + [instances["next_sentence_labels"][:, None]]
    return tf.ensure_shape(tf.concat(rows, 1), [None, len(_ROW_FIELDS) * max_seq_length + 1])


def _unpacked_instances(packed, max_seq_length):
    """`_packed_instances` (batched: [B, 4 T + 1]) -> the dict of [B, T] fields and [B]
    next_sentence_labels."""
    T = max_seq_length
    out = {k: packed[:, i * T:(i + 1) * T] for i, k in enumerate(_ROW_FIELDS)}
    out["next_sentence_labels"] = packed[:, len(_ROW_FIELDS) * T]
    return out


_END_OF_FILE = "\n"  # a line TextLineDataset cannot produce: marks the end of a file


def _file_lines(path):
    """The lines of one text file (`.gz` decompressed)."""
    compression = tf.where(tf.strings.regex_full_match(path, r".*\.gz"), "GZIP", "")
    return tf.data.TextLineDataset(path, compression_type=compression)


def _document_chunks(lines, documents_per_chunk, block_lines=4096):
    """The lines of one text (a file, or a TFDS dataset's documents with a blank line after
    each) -> dataset of (lines string [n], doc_ids int64 [n]): chunks of documents_per_chunk
    documents (the last may be smaller), blank lines and lines that are not valid UTF-8
    dropped, doc_ids 0, 1, ... within the chunk. Pure tf.data: a scan carries the lines of the
    unfinished chunk from one block of lines to the next. `lines`: a dataset of strings, or
    the path of a text file."""
    if not isinstance(lines, tf.data.Dataset):
        lines = _file_lines(lines)
    lines = lines.concatenate(tf.data.Dataset.from_tensors(tf.constant(_END_OF_FILE)))
    n = tf.constant(documents_per_chunk, tf.int64)

    def step(carry, block):  # carry: lines of the unfinished chunk, blank lines between docs
        last = tf.reduce_any(block == _END_OF_FILE)
        valid = good_lines_mask(block)  # the bad lines documents.read_documents skips
        block = tf.boolean_mask(tf.strings.strip(block), valid & (block != _END_OF_FILE))
        x = tf.concat([carry, block], 0)  # (L,)
        text = x != ""
        prev = tf.concat([[False], text[:-1]], 0)
        ends = tf.where(~text & prev)[:, 0]  # blank lines that end a document
        full = tf.shape(ends, out_type=tf.int64)[0] // n * n  # documents of complete chunks
        # starts[k]: where the line after k complete documents starts (0 for k = 0); a gather
        # on `ends` itself would fail on a file without blank lines, even in the unused branch.
        starts = tf.concat([[0], ends + 1], 0)
        cut = tf.where(last, tf.size(x, out_type=tf.int64), tf.gather(starts, full))
        return x[cut:], x[:cut]

    def split(x):  # complete chunks -> one element per chunk
        text = x != ""
        first = text & ~tf.concat([[False], text[:-1]], 0)
        doc = tf.cumsum(tf.cast(first, tf.int64)) - 1
        lines, doc = tf.boolean_mask(x, text), tf.boolean_mask(doc, text)
        # Row ids ascending from 0 by construction: validating them only adds Assert branches
        # that every iterator instantiates.
        chunks = tf.RaggedTensor.from_value_rowids(tf.stack([tf.range(tf.size(doc, tf.int64)),
                                                             doc % n], 1), doc // n,
                                                   validate=False)
        return tf.data.Dataset.from_tensor_slices(chunks).map(
            lambda rows: (tf.gather(lines, rows[:, 0]), rows[:, 1]))

    return (lines.batch(block_lines)
            .scan(tf.constant([], tf.string), step)
            .filter(lambda x: tf.size(x) > 0)
            .flat_map(split))


def dynamic_pretraining_dataset(input_files, tokenizer, batch_size, *, max_seq_length=128,
                                max_predictions_per_seq=20, masked_lm_prob=0.15,
                                short_seq_prob=0.1, whole_word_mask=False, ngram=1,
                                pair_mode="nsp", seed=0, input_context=None, shuffle_buffer=10000,
                                documents_per_chunk=1000, repeat=True, drop_remainder=True,
                                as_dict=False, check_text=True):
    """Raw text files -> batches with fresh pairs and masks every epoch (dynamic masking).

    `input_files` may also be a `documents.TfdsText` (a TFDS text dataset prepared in its data
    dir; one that is not is refused at once): its documents are one stream, read like a file.

    Deterministic for a seed: epoch k of a run equals epoch k of any other run. Pure tf.data
    and TF ops, no Python callbacks (so a live iterator cannot hang interpreter exit): files are
    read in parallel (`TextLineDataset`), grouped into chunks of documents_per_chunk documents,
    tokenized and paired in-graph per chunk (`pairing.build_instances`), then shuffled,
    batched and masked in-graph by the same function as the static tool. With `input_context`,
    files are sharded by input_pipeline_id when there are at least as many files as pipelines, else
    examples are. batch_size is per pipeline. Elements: (features, labels, sample_weights) for
    `model.fit` with outputs "masked_lm" and "next_sentence" (the latter absent for
    pair_mode="none"), or with as_dict=True one dict with all seven model names.

    With check_text (the default) the files are first read once in Python
    (`documents.check_corpus`): a file that is not text, no text, or too few documents /
    sentences for pair_mode raise TextFileError here, not later inside tf.data. Pass False
    when the caller has checked them already. Whatever check_text, a tokenizer that maps more
    than half of the tokens of the first 1,000 lines to its unknown token raises InputError
    (more than 5%: one warning; `unknown_tokens`).

    Example:
      tok = WordPieceTokenizer(default_vocab_file())
      ds = dynamic_pretraining_dataset("bert_keras/assets/web_bible_corpus.txt.gz", tok, 32)
    """
    if pair_mode not in documents.PAIR_MODES:
        raise ValueError(f"pair_mode must be one of {documents.PAIR_MODES}, got {pair_mode!r}")
    tfds_text = input_files if isinstance(input_files, documents.TfdsText) else None
    if tfds_text is not None:
        if check_text:
            documents.check_tfds_corpus(tfds_text, pair_mode)
        files, source, text = [tfds_text.describe()], tfds_text.describe(), tfds_text.lines()
    else:
        files = expand_patterns(input_files)
        if check_text:
            documents.check_corpus(files, pair_mode)
        source = describe_files(files)
    # Always (the callers that check the text have no tokenizer there): a tokenizer that maps
    # the text to its unknown token is refused, once per process and text, before any work.
    unknown_tokens.check_unknown_share(
        source, tfds_text.documents() if tfds_text is not None
        else documents.read_documents(files, warn=False), tokenizer)
    mask_batch = make_masker(tokenizer, max_predictions_per_seq, masked_lm_prob, whole_word_mask,
                             ngram)
    pair_kwargs = dict(cls_id=tokenizer.cls_id, sep_id=tokenizer.sep_id, pad_id=tokenizer.pad_id,
                       max_seq_length=max_seq_length, short_seq_prob=short_seq_prob,
                       pair_mode=pair_mode)

    is_suffix = _suffix_table(tokenizer)

    def tokenize_and_pair(file_seed, index, lines, doc_ids):  # one chunk, all in-graph
        pieces, word_starts, splits, doc_splits, _ = _flat_tokens(tokenizer, is_suffix, lines,
                                                                  doc_ids, pair_mode)
        seed = tf.stack([file_seed, tf.cast(index, tf.int64)])
        inst = pairing.build_instances(pieces, word_starts, splits, doc_splits, seed,
                                             **pair_kwargs)
        order = tf.random.experimental.stateless_shuffle(
            tf.range(tf.shape(inst["input_ids"])[0]), tf.random.experimental.stateless_fold_in(
                seed, 1))
        return tf.gather(_packed_instances(inst, max_seq_length), order)

    def file_instances(path, file_seed):
        lines = text if tfds_text is not None else _file_lines(path)
        ds = _document_chunks(lines, documents_per_chunk).enumerate()
        ds = ds.map(lambda index, chunk: tokenize_and_pair(file_seed, index, *chunk),
                    num_parallel_calls=2, deterministic=True)
        return ds.unbatch()

    pipeline_id = input_context.input_pipeline_id if input_context else 0
    ds = tf.data.Dataset.from_tensor_slices(files)
    ds, example_shard = shard_input(ds, len(files), input_context)
    ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
    seeds = tf.data.Dataset.random(seed=seed * 7919 + pipeline_id, rerandomize_each_iteration=True)
    # Plain TF ops throughout, as the static tool's tf.functions (autograph=False): converting
    # them (autograph, the default of tf.data) only costs start-up time.
    ds = tf.data.Dataset.zip(ds, seeds).interleave(
        tf.autograph.experimental.do_not_convert(file_instances), cycle_length=min(4, len(files)),
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if example_shard:
        ds = ds.shard(*example_shard)
    ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    if repeat:
        ds = ds.repeat()
    ds = ds.batch(batch_size, drop_remainder=drop_remainder)
    mask_seeds = tf.data.Dataset.random(seed=seed * 7919 + pipeline_id + 1,
                                        rerandomize_each_iteration=True).batch(2)
    ds = tf.data.Dataset.zip(ds, mask_seeds).map(
        tf.autograph.experimental.do_not_convert(
            lambda b, s: to_model_format(mask_batch(_unpacked_instances(b, max_seq_length), s),
                                         as_dict, pair_mode != "none")),
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return ds.prefetch(tf.data.AUTOTUNE)


__all__ = [
    "dynamic_pretraining_dataset",
]
