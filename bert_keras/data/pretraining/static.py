"""Static pretraining data: raw text or TFDS -> sharded TFRecords of masked examples.

`create_pretraining_tfrecords(...)` is the library behind `tools/create_pretraining_data.py`:
sharded TFRecords with Google's feature names, worker processes (this one and spawned ones;
each with two threads running the tf.functions), bounded memory (two chunks of documents at a
time per worker), byte-identical output for a given seed whatever the number of workers.
"""

import collections
import concurrent.futures
import multiprocessing
import os
import time

import numpy as np
import tensorflow as tf
from absl import logging

from bert_keras.data.pretraining import documents, pairing, unknown_tokens
from bert_keras.data.pretraining.records import serialize_examples
from bert_keras.data.pretraining.stages import (
    _flat_tokens,
    _suffix_table,
    default_vocab_file,
    make_masker,
)
from bert_keras.files import exists, expand_patterns, is_local, makedirs, remove_tree, writing
from bert_keras.text.tokenizer import WordPieceTokenizer
from bert_keras.text_files import TextFileError, describe_files


def shard_file_names(output_file, num_output_shards):
    """`out.tfrecord` -> itself for one shard, else `out.tfrecord-00000-of-00004`, ..."""
    if num_output_shards == 1:
        return [output_file]
    return [f"{output_file}-{k:05d}-of-{num_output_shards:05d}" for k in range(num_output_shards)]


def _documents(source, stats):
    if source["tfds_name"]:
        return _tfds_text(source).documents(stats)
    # The parent checked the files up front (and warned once): workers read them quietly.
    return documents.read_documents(source["input_files"], stats, warn=False)


def _tfds_text(source):
    return documents.TfdsText(source["tfds_name"], source["tfds_split"], source["tfds_text_key"],
                              source["tfds_data_dir"], source["tfds_download"])


def _chunks(documents, size):
    chunk = []
    for doc in documents:
        chunk.append(doc)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _static_functions(tokenizer, c):
    """The two tf.functions of the static tool: tokenize a chunk; pair + mask + serialize."""
    is_suffix = _suffix_table(tokenizer)
    mask_batch = make_masker(tokenizer, c["max_predictions_per_seq"], c["masked_lm_prob"],
                             c["whole_word_mask"], c["ngram"])
    pair_kwargs = dict(cls_id=tokenizer.cls_id, sep_id=tokenizer.sep_id, pad_id=tokenizer.pad_id,
                       max_seq_length=c["max_seq_length"], short_seq_prob=c["short_seq_prob"],
                       pair_mode=c["pair_mode"])

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string),
                                  tf.TensorSpec([None], tf.int64)], autograph=False)
    def tokenize(lines, doc_ids):
        return _flat_tokens(tokenizer, is_suffix, lines, doc_ids, c["pair_mode"])

    int_vector = tf.TensorSpec([None], tf.int32)

    @tf.function(input_signature=[int_vector] * 4 + [tf.TensorSpec([2], tf.int64)],
                 autograph=False)
    def records(pieces, word_starts, splits, doc_splits, seed):  # one dupe of one chunk
        inst = pairing.build_instances(pieces, word_starts, splits, doc_splits, seed,
                                             **pair_kwargs)
        masked = mask_batch(inst, tf.random.experimental.stateless_fold_in(seed, 1))
        return serialize_examples(masked)  # (N,)

    return tokenize, records


def _dupe_records(records, flat, seed):
    """Runs in a pool thread after the chunk's tokenize future -> numpy bytes [N]."""
    pieces, word_starts, splits, doc_splits, _ = flat.result()
    if tf.size(doc_splits) < 2:  # every line of the chunk tokenized to nothing
        return np.zeros([0], object)
    return records(pieces, word_starts, splits, doc_splits, seed).numpy()


def _write_shard(job):
    """Worker: writes shard `job["shard"]` from chunks c with c % num_shards == shard.

    Documents are read in Python (exact skip counts), everything else is in-graph: one call
    tokenizes a chunk (on its own thread, so the next chunk is ready early), one call per dupe
    pairs, masks and serializes it (two threads; TF releases the GIL). At most two chunks are in
    flight ahead of the writer: bounded memory. Each chunk's records (all dupes) are written in
    a seeded random order.
    """
    shard, num_shards, c = job["shard"], job["num_shards"], job["config"]
    logging.set_verbosity(c["verbosity"])  # spawned workers start at absl's default
    tokenizer = WordPieceTokenizer(c["vocab_file"], lower_case=c["lower_case"])
    tokenize, records = _static_functions(tokenizer, c)
    stats, read_stats = documents.DocumentStats(), documents.DocumentStats()

    def chunk_jobs():  # (index, tokenize future, [dupe record futures]) per chunk
        for index, chunk in enumerate(_chunks(_documents(c, read_stats),
                                              c["documents_per_chunk"])):
            if index % num_shards != shard:
                continue
            lines = [line for doc in chunk for line in doc]
            doc_ids = np.repeat(np.arange(len(chunk), dtype=np.int64), [len(d) for d in chunk])
            stats.documents += len(chunk)
            stats.lines += len(lines)
            flat = tokenize_pool.submit(tokenize, tf.constant(lines, tf.string), doc_ids)
            seeds = [np.array([c["random_seed"], index * 1_000_003 + d], np.int64)
                     for d in range(c["dupe_factor"])]
            dupes = [records_pool.submit(_dupe_records, records, flat, seed) for seed in seeds]
            yield index, flat, dupes

    def write(index, flat, dupes):
        nonlocal written, next_log
        counts = flat.result()[4].numpy()
        stats.empty_token_lines += int(counts[0])
        stats.skipped_documents += int(counts[1])
        out = np.concatenate([d.result() for d in dupes])
        for k in np.random.default_rng([c["random_seed"], index]).permutation(len(out)):
            writer.write(out[k])
        written += len(out)
        stats.instances += len(out)
        if written >= next_log:
            next_log = (written // c["log_every"] + 1) * c["log_every"]
            logging.info("shard %d: %d examples, %.0f examples/s", shard, written,
                         written / (time.time() - start))

    start, written, next_log = time.time(), 0, c["log_every"]
    with concurrent.futures.ThreadPoolExecutor(1) as tokenize_pool, \
            concurrent.futures.ThreadPoolExecutor(2) as records_pool, \
            tf.io.TFRecordWriter(job["path"]) as writer:
        # Trace and optimize `records` on two tiny documents while the first chunk is tokenized
        # (~0.7 s of Python tracing and graph optimization, otherwise on the critical path).
        warm_up = records_pool.submit(records, tf.constant([5, 6, 7]), tf.constant([1, 1, 1]),
                                      tf.constant([0, 1, 3]), tf.constant([0, 1, 2]),
                                      tf.constant([0, 0], tf.int64))
        pending = collections.deque()
        for item in chunk_jobs():
            pending.append(item)
            if len(pending) == 2:  # the next chunk runs while this one is written
                write(*pending.popleft())
        while pending:
            write(*pending.popleft())
        warm_up.result()  # raises if the warm-up failed
    if shard == 0:  # every worker reads all files; count file-level skips once
        stats.files, stats.empty_files = read_stats.files, read_stats.empty_files
        stats.invalid_utf8_lines = read_stats.invalid_utf8_lines
    return stats


def _write_shards(paths, config, num_workers):
    """Writes the shards under temporary names and renames them to `paths` only when all are
    complete and hold at least one instance, so a failed run leaves no (partial) output; a
    full disk is a WriteError naming the output."""
    tmp_paths = [f"{p}.tmp{os.getpid()}" for p in paths]
    jobs = [dict(shard=k, num_shards=len(paths), path=p, config=config)
            for k, p in enumerate(tmp_paths)]
    named = paths[0] if len(paths) == 1 else paths[0].replace("-00000-of-", "-*-of-")
    try:
        with writing(named):
            stats = _write_shard_jobs(jobs, config, num_workers)
            for tmp, path in zip(tmp_paths, paths):
                tf.io.gfile.rename(tmp, path, overwrite=True)
    finally:
        for tmp in tmp_paths:
            remove_tree(tmp)
    return stats


def _write_shard_jobs(jobs, config, num_workers):
    """The DocumentStats of every shard written. With num_workers > 1, this process writes
    every num_workers-th shard while num_workers - 1 spawned ones (TF is not fork-safe) write
    the rest: one TensorFlow start-up fewer than spawning them all and idling."""
    workers = min(num_workers, len(jobs))
    if workers == 1:
        results = [_write_shard(job) for job in jobs]
    else:
        own = jobs[::workers]
        others = [job for index, job in enumerate(jobs) if index % workers]
        with multiprocessing.get_context("spawn").Pool(workers - 1) as pool:
            spawned = pool.map_async(_write_shard, others, chunksize=1)
            results = [_write_shard(job) for job in own] + spawned.get()
    stats = documents.DocumentStats()
    for r in results:
        stats.add(r)
    if not stats.instances:
        source = config["tfds_name"] or describe_files(config["input_files"])
        raise TextFileError(
            f"{source}: no pretraining instance from {stats.documents} document(s) of "
            f"{stats.lines} line(s) ({stats.empty_token_lines} line(s) without tokens, "
            f"{stats.skipped_documents} document(s) skipped)")
    return stats


def create_pretraining_tfrecords(output_file, *, input_files=None, vocab_file=None,
                                 lower_case=True, tfds_name=None, tfds_split="train",
                                 tfds_text_key="text", tfds_data_dir=None, tfds_download=False,
                                 max_seq_length=128,
                                 max_predictions_per_seq=20, masked_lm_prob=0.15, dupe_factor=10,
                                 short_seq_prob=0.1, whole_word_mask=False, ngram=1,
                                 pair_mode="nsp", random_seed=12345, num_output_shards=1,
                                 num_workers=1,
                                 documents_per_chunk=1000, log_every=10000):
    """Writes masked pretraining examples as TFRecords with Google's feature names and shapes.

    Args:
      output_file: path; with num_output_shards > 1, `{output_file}-0000k-of-0000n`.
      input_files: comma-separated globs or a list (text, `.gz` ok); or tfds_name instead: a
        TFDS text dataset prepared in tfds_data_dir (`documents.TfdsText`; one not prepared
        there is refused at once, unless tfds_download).
      vocab_file: defaults to the bundled vocab. Other args as in Google's script, plus
      pair_mode ("nsp", "sop", "none"), ngram (ALBERT's n-gram masking: spans of up to ngram
      words, or WordPieces without whole_word_mask), num_workers (processes, this one included;
      each writes whole shards) and documents_per_chunk (memory bound and random-next-document
      pool).

    Returns:
      dict of counts (files, empty_files, documents, lines, invalid_utf8_lines,
      empty_token_lines, skipped_documents, instances) plus `output_files` and
      `examples_per_second`.

    Raises:
      TextFileError (before any output) for input files that are not text or cannot give
      pairs (`documents.check_corpus`), and (leaving no output) when no instance was made;
      InputError (before any output) when the vocab maps more than half of the tokens of the
      text's first lines to [UNK] (`unknown_tokens`; more than 5%: a warning).

    Example:
      create_pretraining_tfrecords("/tmp/pt.tfrecord",
                                   input_files="bert_keras/assets/web_bible_corpus.txt.gz",
                                   dupe_factor=1)
    """
    if (input_files is None) == (tfds_name is None):
        raise ValueError("give exactly one of input_files and tfds_name, got "
                         f"input_files={input_files!r}, tfds_name={tfds_name!r}")
    if pair_mode not in documents.PAIR_MODES:
        raise ValueError(f"pair_mode must be one of {documents.PAIR_MODES}, got {pair_mode!r}")
    for name, value in [("num_output_shards", num_output_shards), ("num_workers", num_workers),
                        ("dupe_factor", dupe_factor), ("documents_per_chunk", documents_per_chunk),
                        ("max_predictions_per_seq", max_predictions_per_seq), ("ngram", ngram)]:
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    if not 0.0 < masked_lm_prob < 1.0:
        raise ValueError(f"masked_lm_prob must be in (0, 1), got {masked_lm_prob}")
    vocab_file = vocab_file or default_vocab_file()
    if not exists(vocab_file):
        raise FileNotFoundError(f"vocab_file {vocab_file!r} does not exist")
    config = dict(input_files=expand_patterns(input_files) if input_files else None,
                  vocab_file=vocab_file, lower_case=lower_case, tfds_name=tfds_name,
                  tfds_split=tfds_split, tfds_text_key=tfds_text_key, tfds_data_dir=tfds_data_dir,
                  tfds_download=tfds_download,
                  max_seq_length=max_seq_length, max_predictions_per_seq=max_predictions_per_seq,
                  masked_lm_prob=masked_lm_prob, dupe_factor=dupe_factor,
                  short_seq_prob=short_seq_prob, whole_word_mask=whole_word_mask,
                  ngram=ngram, pair_mode=pair_mode, random_seed=random_seed,
                  documents_per_chunk=documents_per_chunk, log_every=log_every,
                  verbosity=logging.get_verbosity())
    if config["input_files"]:  # bad text fails here, before any output file exists
        documents.check_corpus(config["input_files"], pair_mode)
    else:  # so does a TFDS dataset that is not prepared, or has too little text
        documents.check_tfds_corpus(_tfds_text(config), pair_mode)
    # So does a vocab that maps the text to [UNK] (a sample of it is tokenized here).
    unknown_tokens.check_unknown_share(tfds_name or describe_files(config["input_files"]),
                                       _documents(config, documents.DocumentStats()),
                                       WordPieceTokenizer(vocab_file, lower_case=lower_case))
    paths = shard_file_names(output_file, num_output_shards)
    makedirs(os.path.dirname(os.path.abspath(output_file) if is_local(output_file)
                             else output_file))
    start = time.time()
    stats = _write_shards(paths, config, num_workers)
    seconds = time.time() - start
    summary = dict(vars(stats), output_files=paths,
                   examples_per_second=stats.instances / max(seconds, 1e-9))
    logging.info("wrote %d instances to %d file(s) in %.2f s (%.0f examples/s); documents %d, "
                 "skipped documents %d, empty files %d, invalid UTF-8 lines %d, empty lines %d",
                 stats.instances, len(paths), seconds, summary["examples_per_second"],
                 stats.documents, stats.skipped_documents, stats.empty_files,
                 stats.invalid_utf8_lines, stats.empty_token_lines)
    return summary


__all__ = [
    "create_pretraining_tfrecords",
    "shard_file_names",
]
