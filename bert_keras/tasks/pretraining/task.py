"""The pretraining task in an export: fill-mask over the masked LM head of a BertPretrainer.

Pretraining itself (data, objectives, the loop) is `training.pretraining`; this class is
what a trained pretrainer directory (MODEL_DIR/final) serves.

Shape legend: B batch, P [MASK] tokens of a text, K top-k predictions, V vocabulary size.
"""

import tensorflow as tf

from bert_keras.tasks.base import Task
from bert_keras.tasks.graph_ops import rows
from bert_keras.tasks.pretraining.export_options import FillMaskOptions
from bert_keras.tasks.pretraining.model import BertPretrainer

MASK_LITERAL = "[MASK]"


class Pretraining(Task):
    """Serves `text` with literal "[MASK]"s: the top-k fillers of each."""

    name = "pretraining"
    output_docs = {
        "mask_positions": "token index of each [MASK], -1 padding",
        "top_k_ids": "vocab ids of the top-k fillers of each [MASK], -1 padding",
        "top_k_tokens": "WordPiece tokens of the top-k fillers, '' padding",
        "top_k_scores": "probabilities of the top-k fillers, 0 padding",
    }
    finetunable = False
    needs_label_map = False
    input_line_help = f"text with {MASK_LITERAL} where a word is to be filled in"
    export_options_class = FillMaskOptions

    padded_outputs = ("mask_positions", "top_k_ids", "top_k_tokens", "top_k_scores")
    padding_marker = ("mask_positions", -1)

    def builds(self, model):
        return isinstance(model, BertPretrainer)

    def export_metadata(self, fns):
        return {"top_k": fns.options.top_k}

    def warmup_texts(self, fields):
        return {"text": "masked"}

    def preprocess(self, fns, texts):
        return fns.pack([_tokenize_with_masks(fns.tokenizer, texts[0])])

    def serve(self, fns, texts):
        inputs, _ = self.preprocess(fns, texts)
        ids = inputs["input_word_ids"]
        batch = tf.shape(ids)[0]
        where = tf.cast(tf.where(ids == fns.tokenizer.mask_id), tf.int32)  # (M, 2)
        positions = rows(where[:, 1], where[:, 0], batch)  # tf.where's rows: in order
        width = tf.maximum(tf.reduce_max(tf.concat(
            [tf.cast(positions.row_lengths(), tf.int32), [1]], 0)), 1)
        shape = tf.stack([batch, width])
        valid = tf.ones_like(positions, tf.bool).to_tensor(False, shape=shape)  # (B, P)
        dense_positions = positions.to_tensor(0, shape=shape)
        logits = fns.run(inputs, masked_lm_positions=dense_positions)["masked_lm"]
        probs = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)  # (B, P, V)
        k = min(fns.options.top_k, len(fns.tokenizer.vocab))
        top_scores, top_ids = tf.math.top_k(probs, k=k)  # (B, P, K)
        valid_k = tf.broadcast_to(valid[:, :, None], tf.shape(top_ids))
        return {
            "mask_positions": tf.where(valid, dense_positions, -1),
            "top_k_ids": tf.where(valid_k, top_ids, -1),
            "top_k_tokens": tf.where(valid_k, tf.gather(fns.vocab_tokens, top_ids), ""),
            "top_k_scores": tf.where(valid_k, top_scores, 0.0),
        }


def _tokenize_with_masks(tokenizer, text):
    """Texts with literal "[MASK]" -> ids [B, (pieces)] with mask_id at each [MASK]."""
    parts = tf.strings.split(text, sep=MASK_LITERAL)  # (B, (parts)), at least one part
    ids = tokenizer.tokenize(parts.flat_values)  # (parts, (pieces))
    mask = tf.RaggedTensor.from_tensor(
        tf.fill([ids.nrows(out_type=tf.int32), 1], tokenizer.mask_id))
    ids = tf.concat([ids, mask], axis=1)  # each part + [MASK]
    texts = tf.RaggedTensor.from_row_splits(ids, parts.row_splits, validate=False)
    return texts.merge_dims(1, 2)[:, :-1]  # without the [MASK] after each text's last part
