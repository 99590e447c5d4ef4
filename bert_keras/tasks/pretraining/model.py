"""`BertPretrainer`: BERT's pretraining model, masked LM (decoder tied to the word embeddings)
and next sentence (or sentence order) prediction, over a `BertEncoder`.

Shape legend: B batch, T sequence length, V vocabulary size, P masked positions per sequence.

tf.data elements `(x, y, sample_weight)`: x = the encoder inputs + `masked_lm_positions`
int32 (B, P); y = {"masked_lm": masked_lm_ids (B, P), "next_sentence": next_sentence_labels
(B,)}; sample_weight = {"masked_lm": masked_lm_weights float32 (B, P)}. `sample_weight` is
optional; from tf.data a dict may name only some outputs (the others get no weight). Keras'
numpy-array path (`fit(x, y, sample_weight=...)`) insists on a weight for every output: pass
`"next_sentence": np.ones(B)` there. With `next_sentence=False` a `"next_sentence"` entry in
y is ignored.

The masked-LM loss is Google BERT's `sum(w * ce) / (sum(w) + 1e-5)` per batch
(`TokenCrossEntropy`), not Keras' mean over all B*P slots. Under a distribution strategy each
replica normalizes by its own weights and the result is divided by the number of replicas,
as Keras does for its own losses.
"""

import keras

from bert_keras.checkpoints.transformers_spec import no_generator
from bert_keras.models.objectives.losses import TokenCrossEntropy
from bert_keras.names import INPUT_NAMES
from bert_keras.tasks.pretraining import head_checkpoint, heads
from bert_keras.tasks.task_model import BertTaskModel, encoder_inputs


@keras.saving.register_keras_serializable(package="bert_keras")
class BertPretrainer(BertTaskModel):
    """BERT pretraining: masked LM (decoder tied to the word embeddings) and next sentence.

    Inputs: the encoder inputs + `masked_lm_positions` int32 (B, P); any P.
    Outputs: {"masked_lm": float32 logits (B, P, V), "next_sentence": float32 logits (B, 2)};
    `next_sentence=False` (RoBERTa-style, MLM only) drops "next_sentence". The same head
    serves sentence-order prediction (SOP): only the labels differ.

    Default compile: AdamW at 1e-4; masked-LM loss `TokenCrossEntropy` (Google's
    sum(w*ce) / (sum(w) + 1e-5) with w = masked_lm_weights), NSP sparse cross entropy;
    weighted metrics masked_lm accuracy (weighted by masked_lm_weights), next_sentence accuracy.

    Args:
        encoder: a `BertEncoder`.
        next_sentence: add the NSP/SOP head.
        mlm_activation: the MLM transform's activation; None: the encoder's (as Google's
            `run_pretraining.py`, which uses `hidden_act`).
        mlm_norm_bias: a bias in the MLM transform's layer norm; None: as the encoder's norms
            (`EncoderConfig.norm_bias`), as transformers' heads (ModernBERT's has none). A
            config saved before this option reads as True: those heads had one.

    Example:
    >>> import numpy as np
    >>> import tensorflow as tf
    >>> import bert_keras as bk
    >>> encoder = bk.BertEncoder.from_preset("bert_tiny", vocab_size=100)
    >>> pretrainer = BertPretrainer(encoder)
    >>> x = {"input_word_ids": np.ones((2, 8), "int32"), "input_mask": np.ones((2, 8), "int32"),
    ...      "input_type_ids": np.zeros((2, 8), "int32"),
    ...      "masked_lm_positions": np.array([[1, 2, 0], [3, 0, 0]], "int32")}
    >>> y = {"masked_lm": np.array([[5, 6, 0], [7, 0, 0]]), "next_sentence": np.array([0, 1])}
    >>> w = {"masked_lm": np.array([[1, 1, 0], [1, 0, 0]], "float32")}
    >>> ds = tf.data.Dataset.from_tensor_slices((x, y, w)).batch(2)
    >>> history = pretrainer.fit(ds, verbose=0)
    >>> pretrainer.predict(x, verbose=0)["masked_lm"].shape
    (2, 3, 100)
    """

    default_learning_rate = 1e-4

    def __init__(self, encoder, next_sentence=True, mlm_activation=None, mlm_norm_bias=None,
                 **kwargs):
        policy = encoder.head_dtype_policy
        if mlm_norm_bias is None:
            mlm_norm_bias = encoder.encoder_config.norm_bias
        mlm_head = heads.MaskedLMHead(
            encoder.token_embedding,
            activation=mlm_activation or encoder.activation,
            layer_norm_epsilon=encoder.layer_norm_epsilon,
            initializer_range=encoder.initializer_range,
            norm_bias=mlm_norm_bias,
            dtype=policy,
            name="masked_lm_head",
        )
        nsp_head = None
        if next_sentence:
            nsp_head = heads.NextSentenceHead(
                initializer_range=encoder.initializer_range, dtype=policy, name="next_sentence_head"
            )

        inputs = encoder_inputs()
        inputs["masked_lm_positions"] = keras.Input(shape=(None,), dtype="int32",
                                                    name="masked_lm_positions")
        # The encoder's last block runs on the masked rows (and [CLS]) only.
        encoded = encoder({name: inputs[name] for name in INPUT_NAMES},
                          output_positions=inputs["masked_lm_positions"])
        outputs = {"masked_lm": mlm_head(encoded["sequence_output"])}  # (B, P, V)
        if next_sentence:
            outputs["next_sentence"] = nsp_head(encoded["pooled_output"])  # (B, 2)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        self.next_sentence = next_sentence
        self.mlm_activation = mlm_activation
        self.masked_lm_head = mlm_head
        self.next_sentence_head = nsp_head
        self._finish_init(encoder, outputs)

    def reads_pooled_output(self):
        return self.next_sentence  # the NSP/SOP head's input

    def transformers_spec(self, generator=False):
        """`*ForPreTraining` with the pair head, else `*ForMaskedLM` (`bk.save_transformers`)."""
        no_generator(generator, type(self).__name__)
        return head_checkpoint.masked_lm_spec(self, self.encoder, self.masked_lm_head,
                                              self.next_sentence_head)

    def _default_loss(self):
        loss = {"masked_lm": TokenCrossEntropy(epsilon=1e-5, name="masked_lm_loss")}
        if self.next_sentence:
            loss["next_sentence"] = keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, name="next_sentence_loss"
            )
        return loss

    def _default_weighted_metrics(self):
        # Keras prefixes a metric with its output's name only when there are several outputs:
        # without NSP the masked-LM accuracy would be logged as a bare "accuracy".
        name = "accuracy" if self.next_sentence else "masked_lm_accuracy"
        metrics = {"masked_lm": [keras.metrics.SparseCategoricalAccuracy(name=name)]}
        if self.next_sentence:
            metrics["next_sentence"] = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        return metrics

    def _prepare_targets(self, y, sample_weight):
        drop = () if self.next_sentence else ("next_sentence",)
        return self._complete(y, sample_weight, drop=drop)

    def _task_config(self):
        return dict(next_sentence=self.next_sentence, mlm_activation=self.mlm_activation,
                    mlm_norm_bias=self.masked_lm_head.norm_bias)

    @classmethod
    def from_config(cls, config):
        # Saved before mlm_norm_bias: the head had a norm bias whatever the encoder's norms.
        return super().from_config({"mlm_norm_bias": True, **config})
