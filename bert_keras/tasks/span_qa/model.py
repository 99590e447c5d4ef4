"""`BertSpanQA`: extractive question answering (SQuAD), start and end logits over the tokens.

Shape legend: B batch, T sequence length.

x: the encoder inputs (int32 (B, T) each); y = {"start_positions": (B,), "end_positions":
(B,)} int token indices, 0 = [CLS] = no answer. Or, with the model's tokenizer
(`from_pretrained`), (questions, contexts) and SQuAD answers (`answer_inputs`: long contexts
in windows), the rows `tools/finetune.py --task=span_qa` trains on.
"""

import keras
import tensorflow as tf

from bert_keras.tasks import text_inputs
from bert_keras.tasks.family_heads import family_head_arguments
from bert_keras.tasks.span_qa import answer_inputs, head_checkpoint
from bert_keras.tasks.span_qa.head import SpanHead
from bert_keras.tasks.task_model import BertTaskModel, encoder_inputs


@keras.saving.register_keras_serializable(package="bert_keras")
class BertSpanQA(BertTaskModel):
    """Extractive question answering (SQuAD): start and end logits over the tokens.

    Outputs {"start_logits": (B, T), "end_logits": (B, T)} float32; padding positions are
    -1e9. y = {"start_positions": (B,), "end_positions": (B,)} int token indices; 0 ([CLS])
    means "no answer" (SQuAD 2.0). (y keyed "start_logits"/"end_logits" works too.)
    Default compile: AdamW at 5e-5, loss = (CE(start) + CE(end)) / 2, accuracy of each.
    Decode predictions with `bert_keras.tasks.span_qa.decoding`.

    Example:
    >>> import numpy as np
    >>> import bert_keras as bk
    >>> qa = BertSpanQA(bk.BertEncoder.from_preset("bert_tiny", vocab_size=100))
    >>> x = {"input_word_ids": np.ones((2, 6), "int32"), "input_mask": np.ones((2, 6), "int32"),
    ...      "input_type_ids": np.zeros((2, 6), "int32")}
    >>> y = {"start_positions": np.array([2, 0]), "end_positions": np.array([3, 0])}
    >>> history = qa.fit(x, y, verbose=0)
    >>> qa.predict(x, verbose=0)["start_logits"].shape
    (2, 6)

    From a checkpoint directory it also fits on questions, contexts and SQuAD answers (long
    contexts in windows, `answer_inputs`), and answers questions:
    >>> qa = BertSpanQA.from_pretrained("tests/fixtures/families/bert_qa")
    >>> pair = (["Who wept?"], ["Jesus wept."])
    >>> history = qa.fit(pair, [{"text": "Jesus", "answer_start": 0}], verbose=0)
    >>> sorted(qa.answer(pair)[0])
    ['end_char', 'n_best', 'null_score', 'score', 'start_char', 'text']
    """

    _RENAMES = {"start_positions": "start_logits", "end_positions": "end_logits"}

    head_name = "span_head"
    transformers_head = head_checkpoint.TRANSFORMERS_HEAD
    load_transformers_head = staticmethod(head_checkpoint.load_span_head)

    def __init__(self, encoder, preprocessor=None, hidden_activation=None, hidden_norm=False,
                 **kwargs):
        head = SpanHead(
            initializer_range=encoder.initializer_range, hidden_activation=hidden_activation,
            hidden_norm=hidden_norm, layer_norm_epsilon=encoder.layer_norm_epsilon,
            dtype=encoder.head_dtype_policy, name="span_head",
        )
        inputs = encoder_inputs()
        start, end = head(encoder(inputs)["sequence_output"], inputs["input_mask"])  # (B, T) each
        super().__init__(inputs=inputs, outputs={"start_logits": start, "end_logits": end},
                         **kwargs)
        self.span_head = head
        self.hidden_activation = hidden_activation
        self.hidden_norm = bool(hidden_norm)
        self._finish_init(encoder, ["start_logits", "end_logits"], preprocessor=preprocessor)

    def reads_pooled_output(self):
        return False  # the head reads the sequence output

    def transformers_spec(self, generator=False):
        """`*ForQuestionAnswering` (`bk.save_transformers`)."""
        return head_checkpoint.span_spec(self, generator)

    def _default_loss(self):
        return {name: keras.losses.SparseCategoricalCrossentropy(from_logits=True)
                for name in ("start_logits", "end_logits")}

    def _default_loss_weights(self):
        return {"start_logits": 0.5, "end_logits": 0.5}

    def _default_weighted_metrics(self):
        return {name: [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
                for name in ("start_logits", "end_logits")}

    def _prepare_targets(self, y, sample_weight):
        return self._complete(y, sample_weight, renames=self._RENAMES)

    # --- questions, contexts and SQuAD answers (`answer_inputs`) -----------------------
    def _span_rows(self, x, answers=None):
        owner = type(self).__name__
        if not (self._takes_text(x) and text_inputs.text_count(x) == 2
                and not isinstance(x, tf.data.Dataset)):
            raise ValueError(f"{owner}: questions and contexts go as a pair of lists, "
                             "(questions, contexts), with a model from "
                             f"{owner}.from_pretrained(path).")
        return answer_inputs.span_rows(self.preprocessor, x, answers, owner)

    def _text(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False,
              training=False):
        if answer_inputs.is_answers(y):
            if sample_weight is not None:
                raise ValueError(f"{type(self).__name__}: sample_weight does not go with "
                                 "answers.")
            rows, _ = self._span_rows(x, y)
            return answer_inputs.span_dataset(rows, batch_size, shuffle), None, None, None
        # Token positions of raw text are positions of packed tokens it does not have yet.
        if y is not None and self._takes_text(x):
            raise ValueError(
                f"{type(self).__name__}: the labels of raw questions and contexts are SQuAD "
                "answers, one per question: [{'text': 'Jesus', 'answer_start': 0}, ...] "
                "(character offsets in the context; empty lists for no answer).")
        return super()._text(x, y, sample_weight, batch_size, shuffle, training)

    def answer(self, x, batch_size=None, n_best_size=20,
               max_answer_length=answer_inputs.MAX_ANSWER_LENGTH,
               allow_no_answer=False, null_score_diff_threshold=0.0):
        """The best answer to each question of `x` = (questions, contexts): a list of dicts
        with `text`, `start_char`, `end_char` (in the context; -1 for no answer), `score`,
        `null_score` and the `n_best` answers with their probabilities, over every window of
        a long context (`decoding.decode_answers`: SQuAD's rules; `allow_no_answer`
        for SQuAD 2.0)."""
        rows, contexts = self._span_rows(x)
        return answer_inputs.best_answers(
            self, rows, contexts, batch_size, n_best_size=n_best_size,
            max_answer_length=max_answer_length, allow_no_answer=allow_no_answer,
            null_score_diff_threshold=null_score_diff_threshold)

    @classmethod
    def _pretrained_arguments(cls, path, trained, labels, kwargs):
        return family_head_arguments(cls, path, trained, kwargs)

    def _task_config(self):
        # Left out without, so earlier .keras configs stay as they were.
        return (dict(hidden_activation=self.hidden_activation, hidden_norm=self.hidden_norm)
                if self.hidden_activation else {})
