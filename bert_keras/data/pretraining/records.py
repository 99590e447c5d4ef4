"""The pretraining TFRecord format (Google BERT's schema): writing examples and reading them.

`serialize_examples` writes the seven features with Google's names and types (the static tool's
output); `read_pretraining_tfrecords` reads our files and those of Google's
`create_pretraining_data.py` into the model's input names.
"""

import re

import tensorflow as tf
from absl import logging

from bert_keras.data.pretraining import example_proto, record_framing

# Google's TFRecord feature names -> the model's input names. The one place they are mapped.
GOOGLE_TO_MODEL_NAMES = {
    "input_ids": "input_word_ids",
    "input_mask": "input_mask",
    "segment_ids": "input_type_ids",
    "masked_lm_positions": "masked_lm_positions",
    "masked_lm_ids": "masked_lm_ids",
    "masked_lm_weights": "masked_lm_weights",
    "next_sentence_labels": "next_sentence_labels",
}


def feature_lengths(max_seq_length, max_predictions_per_seq):
    """Google name -> (length, is_float)."""
    t, p = max_seq_length, max_predictions_per_seq
    return {"input_ids": (t, False), "input_mask": (t, False), "segment_ids": (t, False),
            "masked_lm_positions": (p, False), "masked_lm_ids": (p, False),
            "masked_lm_weights": (p, True), "next_sentence_labels": (1, False)}


def serialize_examples(batch):
    """Model-named dict of [B, ...] tensors -> tf.string [B] serialized tf.train.Example with
    Google's feature names: int64 lists and a float list for masked_lm_weights, the same bytes
    as protobuf's `SerializeToString(deterministic=True)`. In-graph (`example_proto`)."""
    features = {}
    for google_name, model_name in GOOGLE_TO_MODEL_NAMES.items():
        value = batch[model_name]
        features[google_name] = value[:, None] if value.shape.rank == 1 else value  # (B, L)
    byte_names = ["input_mask", "segment_ids", "next_sentence_labels"]  # 0/1 values
    seq_length = batch["input_word_ids"].shape[1]
    if seq_length is not None and seq_length <= 128:  # positions < seq_length
        byte_names.append("masked_lm_positions")
    return example_proto.serialize_examples(features, float_names=["masked_lm_weights"],
                                            byte_names=byte_names)


def to_model_format(batch, as_dict, next_sentence=True):
    """Model-named dict -> itself (as_dict) or Keras (features, labels, sample_weights)."""
    if as_dict:
        return batch
    features = {k: batch[k] for k in ("input_word_ids", "input_mask", "input_type_ids",
                                        "masked_lm_positions")}
    labels = {"masked_lm": batch["masked_lm_ids"]}
    if next_sentence:
        labels["next_sentence"] = batch["next_sentence_labels"]
    return features, labels, {"masked_lm": batch["masked_lm_weights"]}


def _validate_first_record(path, lengths):
    """Raises ValueError naming the file and the missing/misshaped feature; False if empty."""
    for raw in tf.data.TFRecordDataset(path).take(1):
        try:
            example = tf.train.Example.FromString(raw.numpy())
        except Exception as e:  # protobuf raises its own DecodeError
            raise ValueError(f"{path}: first record is not a tf.train.Example ({e})") from e
        feats = example.features.feature
        for name, (length, is_float) in lengths.items():
            if name not in feats:
                raise ValueError(f"{path}: feature {name!r} is missing; has {sorted(feats)}")
            kind = feats[name].WhichOneof("kind")
            want = "float_list" if is_float else "int64_list"
            got = len(getattr(feats[name], kind).value) if kind else 0
            if kind != want or got != length:
                raise ValueError(f"{path}: feature {name!r} is {kind} of length {got}, expected "
                                 f"{want} of length {length}")
        return True
    return False


def corrupt_file(paths):
    """The first of `paths` that does not read to its end as TFRecords, with TF's reason, as
    "PATH: REASON"; None if all read. TF's own error ("truncated record at 39886") does not
    name the file, so a failed run calls this to find it.

    >>> corrupt_file([])
    """
    for path in paths:
        try:
            for _ in tf.data.TFRecordDataset(path).batch(4096):
                pass
        except tf.errors.OpError as e:
            reason = re.sub(r"\{\{function_node [^}]*\}\}\s*|\s*\[Op:\w+\].*", "",
                            e.message.splitlines()[0])
            return f"{path}: {reason}"
    return None


def cut_off_file(paths):
    """The first of `paths` that ends inside a record (a cut-off copy), as `corrupt_file` names
    it; None if none does. Cheap: reads each file's last bytes (`record_framing`), and reads a
    file through only to confirm it with TF's reason, so a run refuses it before any work.

    >>> cut_off_file([])
    """
    for path in paths:
        if not record_framing.ends_with_a_whole_record(path):
            found = corrupt_file([path])  # None: TF reads it whole (a very long last record)
            if found:
                return found
    return None


def read_pretraining_tfrecords(file_pattern, batch_size, max_seq_length, max_predictions_per_seq,
                               *, is_training=True, input_context=None, shuffle_buffer=10000,
                               seed=None, drop_remainder=True, next_sentence=True, as_dict=False):
    """Reads static pretraining TFRecords (ours or Google's) into the model's input names.

    Each file's first record is checked eagerly (error names the file and feature); empty files
    are skipped with a warning. Training: files sharded by `input_context` (a
    tf.distribute.InputContext) when there are enough, else examples; shuffled, repeated.
    batch_size is per input pipeline. Returns (features, labels, sample_weights) for
    `model.fit`, or with as_dict=True one dict with all seven model names;
    next_sentence=False drops the "next_sentence" label (no-NSP files).
    """
    files = tf.io.gfile.glob(file_pattern) if isinstance(file_pattern, str) else [
        f for p in file_pattern for f in tf.io.gfile.glob(p)]
    if not files:
        raise FileNotFoundError(f"file_pattern {file_pattern!r} matches no file")
    lengths = feature_lengths(max_seq_length, max_predictions_per_seq)
    nonempty = []
    for f in sorted(files):
        if _validate_first_record(f, lengths):
            nonempty.append(f)
        else:
            logging.warning("pretraining TFRecord %s is empty; skipped", f)
    files = nonempty
    if not files:
        raise ValueError(f"all files of {file_pattern!r} are empty")
    spec = {name: tf.io.FixedLenFeature([n], tf.float32 if is_float else tf.int64)
            for name, (n, is_float) in lengths.items()}
    ds = tf.data.Dataset.from_tensor_slices(files)
    ds, example_shard = shard_input(ds, len(files), input_context)
    if is_training:
        ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True).repeat()
    ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=min(8, len(files)),
                       num_parallel_calls=tf.data.AUTOTUNE, deterministic=seed is not None)
    if example_shard:
        ds = ds.shard(*example_shard)
    if is_training:
        ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)

    def parse(records):
        parsed = tf.io.parse_example(records, spec)
        out = {GOOGLE_TO_MODEL_NAMES[k]: tf.cast(v, tf.float32 if k == "masked_lm_weights"
                                                 else tf.int32) for k, v in parsed.items()}
        out["next_sentence_labels"] = out["next_sentence_labels"][:, 0]  # (B,)
        return to_model_format(out, as_dict, next_sentence)

    ds = ds.batch(batch_size, drop_remainder=drop_remainder)
    return ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def shard_input(files_ds, num_files, input_context):
    """Shards over files when each pipeline gets one, else returns (n, i) for example sharding."""
    if input_context is None or input_context.num_input_pipelines <= 1:
        return files_ds, None
    n, i = input_context.num_input_pipelines, input_context.input_pipeline_id
    if num_files >= n:
        return files_ds.shard(n, i), None
    return files_ds, (n, i)
