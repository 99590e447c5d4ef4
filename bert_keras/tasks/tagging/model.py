"""`BertTokenClassifier`: a tag per token (NER, POS) on the sequence output.

Shape legend: B batch, T sequence length, C classes (tags).

x: the encoder inputs (int32 (B, T) each); y: labels (B, T) int, `IGNORE_LABEL` (-1, any
negative) where not scored. Or, with the model's tokenizer (`from_pretrained`), pre-split
words and one tag per word (`word_inputs`), the rows `tools/finetune.py --task=tagging`
trains on. The loss averages over the scored tokens of the batch.
"""

import keras

from bert_keras.models.objectives.losses import TokenAccuracy, TokenCrossEntropy
from bert_keras.tasks import targets
from bert_keras.tasks.family_heads import family_head_arguments
from bert_keras.tasks.tagging import decoding, head_checkpoint, word_inputs
from bert_keras.tasks.tagging.crf import CRF, CRFLoss, check_tag_sequences
from bert_keras.tasks.tagging.head import TokenClassificationHead
from bert_keras.tasks.task_model import BertTaskModel, class_count, encoder_inputs, label_names


@keras.saving.register_keras_serializable(package="bert_keras")
class BertTokenClassifier(BertTaskModel):
    """Token tagging (e.g. NER): float32 logits (B, T, num_classes) on the sequence output.

    Labels (B, T) int; positions labelled `IGNORE_LABEL` (-1; any negative) are not scored:
    special tokens, padding and the non-first WordPieces of a word. Default compile: AdamW
    at 5e-5, `TokenCrossEntropy(epsilon=0, ignore_negative_labels=True)` (the mean over
    scored tokens of the batch), `TokenAccuracy`.

    Example:
    >>> import numpy as np
    >>> import bert_keras as bk
    >>> tagger = BertTokenClassifier(bk.BertEncoder.from_preset("bert_tiny", vocab_size=100),
    ...                              num_classes=5)
    >>> x = {"input_word_ids": np.ones((2, 6), "int32"), "input_mask": np.ones((2, 6), "int32"),
    ...      "input_type_ids": np.zeros((2, 6), "int32")}
    >>> labels = np.array([[-1, 1, 2, -1, 0, -1], [-1, 4, 4, 3, -1, -1]])
    >>> history = tagger.fit(x, labels, verbose=0)
    >>> tagger.predict(x, verbose=0).shape
    (2, 6, 5)

    From a checkpoint directory it also takes pre-split words, one tag per word (class ids
    or label names; each goes on its word's first piece, `word_inputs`), and predicts each
    word's logits:
    >>> tagger = BertTokenClassifier.from_pretrained("tests/fixtures/families/bert_tagger")
    >>> history = tagger.fit([["Jesus", "wept", "."]], [["B-PER", "O", "O"]], verbose=0)
    >>> tagger.predict([["Jesus", "wept", "."], ["Amen"]]).shape
    TensorShape([2, None, 5])

    `crf=True` adds a linear-chain CRF over each sentence's words (`crf.CRF`: learned
    transition, start and end scores, zeros at first; a transformers checkpoint has none),
    trained on its negative log-likelihood (`crf.CRFLoss`); the outputs stay the per-token
    logits (the CRF's emissions; the `accuracy` metric reads their argmax), and `tag` /
    `word_tags` decode the Viterbi path. `crf_learning_rate_multiplier` (100): how much
    faster than the encoder the CRF's scores learn (`crf.CRF`). `crf_constraints="bio"`
    forbids `I-X` first or after anything but `B-X` / `I-X` (from `labels`):
    >>> tagger = BertTokenClassifier.from_pretrained("tests/fixtures/families/bert_tagger",
    ...                                              crf=True, crf_constraints="bio")
    >>> tagger.tag([["Jesus", "wept", "."]])
    [['B-LOC', 'B-LOC', 'B-LOC']]
    """

    head_name = "token_classification_head"
    transformers_head = head_checkpoint.TRANSFORMERS_HEAD
    load_transformers_head = staticmethod(head_checkpoint.load_token_classification_head)

    def __init__(self, encoder, num_classes, dropout=0.1, labels=None, preprocessor=None,
                 crf=False, crf_constraints="none", crf_learning_rate_multiplier=100.0,
                 hidden_activation=None, hidden_norm=False, **kwargs):
        head = TokenClassificationHead(
            num_classes, dropout=dropout, initializer_range=encoder.initializer_range,
            hidden_activation=hidden_activation, hidden_norm=hidden_norm,
            layer_norm_epsilon=encoder.layer_norm_epsilon, dtype=encoder.head_dtype_policy,
            name="token_classification_head",
        )
        inputs = encoder_inputs()
        logits = head(encoder(inputs)["sequence_output"])  # (B, T, C)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.num_classes = num_classes
        self.dropout = dropout
        self.hidden_activation = hidden_activation
        self.hidden_norm = bool(hidden_norm)
        self.labels = label_names(labels, num_classes)
        self.token_classification_head = head
        self.crf = bool(crf)
        self.crf_constraints = crf_constraints or "none"
        self.crf_learning_rate_multiplier = float(crf_learning_rate_multiplier)
        if not self.crf and self.crf_constraints != "none":
            raise ValueError(f"crf_constraints={crf_constraints!r} needs crf=True.")
        self.crf_layer = None
        if self.crf:
            self.crf_layer = CRF(num_classes, labels=self.labels,
                                 constraints=self.crf_constraints,
                                 learning_rate_multiplier=self.crf_learning_rate_multiplier,
                                 name="crf")
            self.crf_layer.build()
        self._finish_init(encoder, preprocessor=preprocessor)

    @classmethod
    def _pretrained_arguments(cls, path, trained, labels, kwargs):
        if isinstance(trained, cls):  # a task directory's tagger: its CRF unless told
            kwargs.setdefault("crf", trained.crf)
            kwargs.setdefault("crf_constraints", trained.crf_constraints)
            kwargs.setdefault("crf_learning_rate_multiplier",
                              trained.crf_learning_rate_multiplier)
        kwargs = family_head_arguments(cls, path, trained, kwargs)
        if kwargs.get("num_classes") is None:
            kwargs["num_classes"] = class_count(path, labels)
        if labels is not None and len(labels) == kwargs["num_classes"]:
            kwargs.setdefault("labels", labels)
        return kwargs

    def reads_pooled_output(self):
        return False  # the head reads the sequence output

    def transformers_spec(self, generator=False):
        """`*ForTokenClassification` with its tags (`bk.save_transformers`; InputError with
        a CRF)."""
        return head_checkpoint.tagger_spec(self, generator)

    def _keep_head(self, trained):
        super()._keep_head(trained)
        if self.crf and trained.crf and self.num_classes == trained.num_classes:
            mine, theirs = self.crf_layer, trained.crf_layer
            ratio = theirs.learning_rate_multiplier / mine.learning_rate_multiplier
            mine.set_weights([w * ratio for w in theirs.get_weights()])  # the same scores

    def word_tags(self, word_logits):
        """Tag ids of per-word logits (`predict(words)`: a tf.RaggedTensor (sentences,
        (words), C)) as a tf.RaggedTensor (sentences, (words)) int32: the CRF's Viterbi path
        over each sentence's words when `crf`, else each word's argmax; -1 for a word with
        no piece (NaN logits)."""
        return decoding.word_tags(self.crf_layer, word_logits)

    def tag(self, words, batch_size=None):
        """Each sentence's tag names (lists of str, one per word; "" for a word with no
        piece): `word_tags` of `predict(words)`."""
        ids = self.word_tags(self.predict(words, batch_size=batch_size)).to_list()
        names = self.labels or [str(i) for i in range(self.num_classes)]
        return [[names[i] if i >= 0 else "" for i in row] for row in ids]

    def _checked_targets(self, y):
        return targets.check_class_ids(y, self.num_classes, type(self).__name__, per_token=True)

    # --- words and their tags (`word_inputs`) ------------------------------------------
    def _takes_text(self, x):
        return super()._takes_text(x) or word_inputs.is_words(x)

    def _check_words_go_in(self, sample_weight):
        owner = type(self).__name__
        if self.preprocessor is None:
            raise ValueError(f"{owner}: words need the model's tokenizer; build it with "
                             f"{owner}.from_pretrained(path), or pass preprocessor=.")
        if sample_weight is not None:
            raise ValueError(f"{owner}: sample_weight does not go with words; leave a "
                             "sentence out, or give ids and per-token labels instead.")

    def _word_rows(self, words, tags=None, sample_weight=None):
        self._check_words_go_in(sample_weight)
        names = self.labels or [str(i) for i in range(self.num_classes)]
        if tags is not None and self.crf_constraints != "none":
            examples = word_inputs.tagged_examples(word_inputs.sentences(words), tags, names,
                                                   type(self).__name__)
            check_tag_sequences([ex.tags for ex in examples], names, self.crf_constraints,
                                type(self).__name__)
        return word_inputs.word_features(self.preprocessor, words, tags, names,
                                         type(self).__name__)

    def _split_off(self, x, y, sample_weight, fraction):
        if not word_inputs.is_words(x):
            return super()._split_off(x, y, sample_weight, fraction)
        self._check_words_go_in(sample_weight)
        (x, y), split = word_inputs.split_off(x, y, fraction)
        return (x, y, None), split

    def _text(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False,
              training=False):
        if word_inputs.is_words(x):
            rows = self._word_rows(x, y, sample_weight)
            return word_inputs.word_dataset(rows, batch_size, shuffle), None, None, None
        # Per-token labels are positions of the packed tokens, which raw texts do not have
        # yet: a y of another length was an op error, and one of the same length trained on
        # misplaced tags.
        if y is not None and self._takes_text(x):
            raise ValueError(
                f"{type(self).__name__}: labels cannot go with raw texts (their tokens are not "
                "known yet); give each sentence's words and one tag per word instead: "
                "fit([['Jesus', 'wept', '.'], ...], [['B-PER', 'O', 'O'], ...]). predict "
                "takes raw texts too.")
        return super()._text(x, y, sample_weight, batch_size, shuffle, training)

    def predict(self, x, batch_size=None, **kwargs):
        """Keras `predict`; raw text as in `fit`, or words: then a float32 tf.RaggedTensor
        (sentences, (words), num_classes) of each word's logits at its first piece (a long
        sentence goes on in rows of its own; NaN only for a word without pieces)."""
        if word_inputs.is_words(x):
            return word_inputs.word_logits(self, self._word_rows(x), batch_size)
        return super().predict(x, batch_size=batch_size, **kwargs)

    def _default_loss(self):
        if self.crf:
            return CRFLoss(crf=self.crf_layer)
        return TokenCrossEntropy(epsilon=0.0, ignore_negative_labels=True)

    def compile(self, optimizer="auto", loss="auto", **kwargs):
        """`BertTaskModel.compile`; a `CRFLoss` (the default with `crf`) is bound to this
        model's CRF."""
        if isinstance(loss, CRFLoss):
            if not self.crf:
                raise ValueError(f"{type(self).__name__}: CRFLoss needs crf=True.")
            loss.crf = self.crf_layer
        super().compile(optimizer=optimizer, loss=loss, **kwargs)

    def _default_weighted_metrics(self):
        return [TokenAccuracy(name="accuracy")]

    def _task_config(self):
        config = dict(num_classes=self.num_classes, dropout=self.dropout, labels=self.labels)
        if self.hidden_activation:  # left out without, so earlier .keras configs stay as they were
            config.update(hidden_activation=self.hidden_activation, hidden_norm=self.hidden_norm)
        if self.crf:  # left out without, so earlier .keras configs stay as they were
            config.update(crf=True, crf_constraints=self.crf_constraints,
                          crf_learning_rate_multiplier=self.crf_learning_rate_multiplier)
        return config
