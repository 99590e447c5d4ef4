"""Pretraining data: static TFRecords (Google's schema) and a dynamic tf.data pipeline.

Both paths run the same in-graph stages, one code path: documents (Python `pairing.read_documents`
/ TFDS for the static tool, `TextLineDataset` chunks for the dynamic one) -> batched WordPiece
tokenization per chunk of documents (`_flat_tokens`) -> NSP/SOP/FULL-SENTENCES instances
(`graph_pairing.build_instances`, stateless seeds) -> masking (`masking.mask_tokens`).

- `create_pretraining_tfrecords(...)`: the library behind `tools/create_pretraining_data.py`;
  sharded TFRecords, multiprocessing workers (each with two threads running the tf.functions),
  bounded memory (two chunks of documents at a time per worker), byte-identical output for a
  given seed whatever the number of workers.
- `dynamic_pretraining_dataset(...)`: raw text -> batches with fresh pairs and masks every epoch.

This module is their public face: the static tool lives in `static.py`, the dynamic pipeline in
`dynamic.py` and the stages they share (`make_masker`, chunk tokenization, `default_vocab_file`)
in `stages.py`. The TFRecord format itself (Google's names, serialization, the reader for our
files and Google's) is `pretraining_records`.

Differences from Google's script (documented, deliberate): instances are shuffled within a chunk of
`documents_per_chunk` documents x dupe_factor (not across the whole corpus; the reader shuffles
again), the random next document is drawn from the same chunk, num_to_predict counts non-special
tokens, and the random replacement token is never a bracketed special token.
"""

from bert_keras.data.pretraining.dynamic import dynamic_pretraining_dataset
from bert_keras.data.pretraining.stages import default_vocab_file, make_masker
from bert_keras.data.pretraining.static import create_pretraining_tfrecords, shard_file_names

__all__ = [
    "create_pretraining_tfrecords",
    "dynamic_pretraining_dataset",
    "default_vocab_file",
    "make_masker",
    "shard_file_names",
]
