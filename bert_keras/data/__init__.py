"""Input pipelines: `pretraining` (documents -> sentence pairs -> masking -> TFRecords with
Google's schema, or dynamic masking in tf.data) and `finetuning` (task files -> features and
batches, span decoding)."""
