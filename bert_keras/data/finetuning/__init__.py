"""Fine-tuning data: readers of TSV / CSV / JSONL / CoNLL / SQuAD files and TFDS tasks into
examples, examples -> packed features (SQuAD windows with doc_stride, word-aligned tags),
batching, and span decoding back to answer text."""
