"""What every task model shares (`BertClassifier`, `BertTokenClassifier`, `BertSpanQA`,
`BertPretrainer`, `BertEmbedder`: each in its task package): "auto" compile defaults, targets
renamed onto the outputs, raw text through the carried preprocessor, labels checked before a
step, (de)serialization, and `from_pretrained` over any checkpoint or task directory.

Each model is a functional `keras.Model` that takes the encoder as an argument and extends
its inputs (composition). Each compiles itself with defaults at the end of `__init__`
(like keras-hub Tasks), so `model.fit(ds)` works at once; `model.compile()` with no
arguments restores the defaults, and any argument left at "auto" keeps its default.

tf.data element formats `(x, y)` or `(x, y, sample_weight)` (all int32 unless noted; the
encoder inputs are `input_word_ids`, `input_mask`, `input_type_ids`, each (B, T); B batch, T
sequence length, P masked positions, C classes):

===================  ============================  ==============================================
model                x (dict)                      y  /  sample_weight
===================  ============================  ==============================================
BertPretrainer       encoder inputs +              y = {"masked_lm": masked_lm_ids (B, P),
                     masked_lm_positions (B, P)    "next_sentence": next_sentence_labels (B,)}
                                                   sample_weight = {"masked_lm":
                                                   masked_lm_weights float32 (B, P)}
BertClassifier       encoder inputs                y = label (B,) int; multi_label: (B, C)
                                                   0/1 float; regression: (B,) or (B, 1) float
BertTokenClassifier  encoder inputs                y = labels (B, T), IGNORE_LABEL (-1, any
                                                   negative) where not scored
BertSpanQA           encoder inputs                y = {"start_positions": (B,),
                                                   "end_positions": (B,)}; 0 = [CLS] = no answer
BertEmbedder         encoder inputs, or            none (in-batch negatives)
                     (anchors, positives)
===================  ============================  ==============================================
"""

import difflib
import inspect
import os

import keras
import tensorflow as tf

from bert_keras.errors import InputError
from bert_keras.models import head_checkpoints
from bert_keras.models.encoder import BertEncoder
from bert_keras.models.idle_layers import IdleLayers
from bert_keras.names import INPUT_NAMES
from bert_keras.optimization import default_optimizer
from bert_keras.optimization.slots import build_before_fit
from bert_keras.tasks import text_inputs
from bert_keras.tasks.task_io import is_task_directory, load_task_directory
from bert_keras.tasks.text_preprocessor import TEXT_FIELDS, TextPreprocessor
from bert_keras.text.tokenizers import load_tokenizer


def encoder_inputs():
    return {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}


def label_names(labels, num_classes):
    """`labels` as a list of num_classes strings, or None (unnamed, or transformers'
    placeholders LABEL_0, LABEL_1, ...)."""
    if labels is None or list(labels) == [f"LABEL_{i}" for i in range(len(labels))]:
        return None
    if len(labels) != num_classes:
        raise ValueError(f"{len(labels)} labels {list(labels)[:5]} for {num_classes} classes.")
    return [str(label) for label in labels]


def class_count(path, labels):
    """The number of classes of a directory whose fine-tuned head names `labels`."""
    if not labels:
        raise InputError(f"{path} has no fine-tuned head that names its classes: give "
                         "num_classes=.")
    return len(labels)


# What keras.Model's functional constructor takes besides its inputs and outputs (it drops
# any other keyword without a word).
KERAS_KEYWORDS = ("name", "trainable")


def check_keywords(where, keywords, known):
    """TypeError for the `keywords` not in `known`, each named with its close matches, as
    Python's own for a function `where` that does not take them.

    >>> check_keywords("f()", {"normalise": True}, ["pooling", "normalize"])
    Traceback (most recent call last):
    ...
    TypeError: f() got an unexpected keyword argument 'normalise' (did you mean 'normalize'?)
    """
    unknown = [name for name in keywords if name not in known]
    if not unknown:
        return
    described = []
    for name in unknown:
        close = difflib.get_close_matches(name, list(known))
        described.append(f"{name!r}" + (f" (did you mean {' or '.join(map(repr, close))}?)"
                                         if close else ""))
    raise TypeError(f"{where} got an unexpected keyword argument{'s' * (len(unknown) > 1)} "
                    f"{', '.join(described)}")


class BertTaskModel(IdleLayers, keras.Model):
    """Shared machinery: "auto" compile defaults, target renaming, (de)serialization, raw
    text through the carried preprocessor, `from_pretrained`. A keyword that no constructor
    takes is refused by name (Keras would drop it silently)."""

    default_learning_rate = 5e-5
    head_name = None  # the head layer's attribute, kept by from_pretrained when it fits
    # The class name ending of transformers' model with this head, and head_checkpoints'
    # loader of that head.
    transformers_head = None
    load_transformers_head = None

    def __init__(self, inputs, outputs, **kwargs):
        # Each subclass took its own arguments: what is left is Keras' or a mistake.
        check_keywords(f"{type(self).__name__}()", kwargs, self._constructor_keywords())
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

    @classmethod
    def _constructor_keywords(cls):
        """The keyword arguments `cls(...)` takes: the named parameters of each constructor
        from `cls` up to this class (a subclass passes the rest on), and Keras'."""
        names = []
        for klass in cls.__mro__[:cls.__mro__.index(BertTaskModel)]:
            if "__init__" in vars(klass):
                names += [p.name for p in inspect.signature(klass.__init__).parameters.values()
                          if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                          and p.name != "self"]
        return list(dict.fromkeys(names + list(KERAS_KEYWORDS)))

    def _finish_init(self, encoder, output_keys=None, preprocessor=None):
        if preprocessor is not None and preprocessor.seq_length > encoder.max_sequence_length:
            # Rows past the position table fail inside the graph, on the first long text.
            raise ValueError(f"seq_length={preprocessor.seq_length} is longer than the "
                             f"encoder's position table ({encoder.max_sequence_length} "
                             "positions).")
        self.encoder = encoder
        self.preprocessor = preprocessor  # TextPreprocessor or None (ids only)
        self._output_keys = list(output_keys or [])  # Keys of a dict output, in order.
        self.compile()

    def reads_pooled_output(self):
        """Whether a head reads the encoder's pooled output (the classifier's does)."""
        return True

    def idle_layers(self):
        # A pooler no head reads (token tagging, span QA, pretraining without NSP) gets no
        # gradient; transformers builds those models without one.
        return [] if self.reads_pooled_output() else [self.encoder.pooler]

    # --- from a checkpoint directory -----------------------------------------------------
    @classmethod
    def from_pretrained(cls, path, seq_length=None, **kwargs):
        """This task model over the encoder of checkpoint directory `path` (transformers,
        Google TF1, ours, or a task directory of tools/finetune.py), carrying its tokenizer
        (`seq_length`: the longest packed row; default 128, or the encoder's position table
        where shorter). A fine-tuned head in the directory is kept when its shape fits;
        `kwargs` go to the constructor (e.g. `num_classes`); one it does not take is a
        TypeError, before the checkpoint is read."""
        check_keywords(f"{cls.__name__}.from_pretrained()", kwargs, cls._constructor_keywords())
        path = os.fspath(path)
        if is_task_directory(path):
            trained, tokenizer, info = load_task_directory(path)
            encoder, labels = getattr(trained, "encoder", trained), info.get("labels")
        else:
            trained, tokenizer = None, load_tokenizer(path)
            encoder = BertEncoder.from_pretrained(path)
            encoder.check_tokenizer(tokenizer, path)
            labels = head_checkpoints.fine_tuned_labels(path, cls.transformers_head)
        if seq_length is None:
            seq_length = min(128, encoder.max_sequence_length)
        model = cls(encoder, preprocessor=TextPreprocessor(tokenizer, seq_length),
                    **cls._pretrained_arguments(path, trained, labels, dict(kwargs)))
        if isinstance(trained, cls):
            model._keep_head(trained)
        elif trained is None and cls.load_transformers_head is not None:
            head_checkpoints.try_load_head(cls.load_transformers_head, model, path)
        return model

    @classmethod
    def _pretrained_arguments(cls, path, trained, labels, kwargs):
        """The constructor arguments that the directory decides unless `kwargs` gives them:
        `trained` is a task directory's model (or None), `labels` its head's label names."""
        return kwargs

    def _keep_head(self, trained):
        """The head weights of `trained` (a task directory's model of this class) when each
        has this head's shape."""
        mine, theirs = getattr(self, self.head_name), getattr(trained, self.head_name)
        weights = theirs.get_weights()
        if [w.shape for w in weights] == [tuple(v.shape) for v in mine.weights]:
            mine.set_weights(weights)

    # --- raw text ------------------------------------------------------------------------
    def _text(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False,
              training=False):
        """(x, y, sample_weight, batch_size) for Keras: raw text becomes a dataset of packed
        batches (the preprocessor in the input pipeline); anything else is unchanged. Labels
        given as arrays are checked first (`_checked_targets`). `training`: the batches of
        `fit` (`TextPreprocessor.batch_function(training=True)`'s widths)."""
        if y is not None and not isinstance(y, (dict, tf.data.Dataset)):
            y = self._checked_targets(y)
        if not self._takes_text(x):
            return x, y, sample_weight, batch_size
        self.preprocessor.text_fields = TEXT_FIELDS[text_inputs.text_count(x)]
        return text_inputs.text_dataset(x, self.preprocessor.batch_function(training), y,
                                        sample_weight, batch_size, shuffle), None, None, None

    def _takes_text(self, x):
        """Whether `x` is raw text this model packs itself (it carries a preprocessor)."""
        return self.preprocessor is not None and text_inputs.is_text(x)

    def _split_off(self, x, y, sample_weight, fraction):
        """`((x, y, sample_weight), validation_data)` for `validation_split` of raw text."""
        return text_inputs.split_off(x, y, sample_weight, fraction)

    def _validation_text(self, data):
        if isinstance(data, tuple) and self._takes_text(data[0]):
            return self._text(*data)[0]
        return self._text(data)[0] if data is not None else None

    def fit(self, x=None, y=None, batch_size=None, epochs=1, sample_weight=None,
            validation_data=None, shuffle=True, validation_split=0.0, **kwargs):
        """Keras `fit`; `x` may also be raw text (see `text_inputs`) when the model carries a
        preprocessor (`from_pretrained`), `validation_split` included."""
        if validation_split and self._takes_text(x):
            (x, y, sample_weight), split = self._split_off(x, y, sample_weight,
                                                           validation_split)
            if validation_data is None:  # as Keras: validation_data wins
                validation_data = split
            validation_split = 0.0
        x, y, sample_weight, batch_size = self._text(x, y, sample_weight, batch_size, shuffle,
                                                     training=True)
        shuffle = shuffle and not isinstance(x, tf.data.Dataset)  # ours is shuffled already
        build_before_fit(self)
        return super().fit(x, y, batch_size=batch_size, epochs=epochs,
                           sample_weight=sample_weight, shuffle=shuffle,
                           validation_data=self._validation_text(validation_data),
                           validation_split=validation_split, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None, **kwargs):
        """Keras `evaluate`; `x` may be raw text, as in `fit`."""
        x, y, sample_weight, batch_size = self._text(x, y, sample_weight, batch_size)
        return super().evaluate(x, y, batch_size=batch_size, sample_weight=sample_weight,
                                **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        """Keras `predict`; `x` may be raw text, as in `fit`."""
        x, _, _, batch_size = self._text(x, batch_size=batch_size)
        return super().predict(x, batch_size=batch_size, **kwargs)

    # --- compile defaults -------------------------------------------------------------
    def _default_loss(self):
        raise NotImplementedError

    def _default_metrics(self):
        return None

    def _default_weighted_metrics(self):
        return None

    def _default_loss_weights(self):
        return None

    def compile(self, optimizer="auto", loss="auto", metrics="auto", weighted_metrics="auto",
                loss_weights="auto", **kwargs):
        """Keras `compile` where each argument left at "auto" gets this task's default."""
        if isinstance(optimizer, str) and optimizer == "auto":
            optimizer = default_optimizer(self.default_learning_rate)
        if isinstance(loss_weights, str) and loss_weights == "auto":
            auto_loss = isinstance(loss, str) and loss == "auto"
            loss_weights = self._default_loss_weights() if auto_loss else None
        if isinstance(loss, str) and loss == "auto":
            loss = self._default_loss()
        if isinstance(metrics, str) and metrics == "auto":
            metrics = self._default_metrics()
        if isinstance(weighted_metrics, str) and weighted_metrics == "auto":
            weighted_metrics = self._default_weighted_metrics()
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics,
                        weighted_metrics=weighted_metrics, loss_weights=loss_weights, **kwargs)

    def get_compile_config(self):
        return super().get_compile_config()

    def compile_from_config(self, config):
        # Keras skips this for a custom `compile`; ours takes the same arguments.
        config = keras.saving.deserialize_keras_object(config)
        self.compile(**config)
        if self.built:
            self.optimizer.build(self.trainable_variables)  # So saved slots load.

    # --- targets ----------------------------------------------------------------------
    def _checked_targets(self, y):
        """`y` (labels as an array) as this task scores them; ValueError for labels it
        cannot score (as they are, by default)."""
        return y

    def _prepare_targets(self, y, sample_weight):
        """Maps the data's y / sample_weight onto the model outputs (identity by default)."""
        return y, sample_weight

    def _complete(self, y, sample_weight, renames=None, drop=()):
        """Renames dict keys of y and sample_weight, drops `drop`, fills missing weights with
        None."""
        renames = renames or {}

        def rename(d):
            return {renames.get(k, k): v for k, v in d.items() if k not in drop}

        if isinstance(y, dict):
            y = rename(y)
            missing = [k for k in self._output_keys if k not in y]
            if missing:
                inverse = {v: k for k, v in renames.items()}
                raise ValueError(
                    f"{type(self).__name__}: y has no entry for "
                    f"{[inverse.get(k, k) for k in missing]}; "
                    f"got keys {sorted(y)}."
                )
        if isinstance(sample_weight, dict):
            sample_weight = rename(sample_weight)
            unknown = sorted(set(sample_weight) - set(self._output_keys))
            if unknown:
                raise ValueError(
                    f"{type(self).__name__}: sample_weight has keys {unknown} that are not outputs "
                    f"{list(self._output_keys)}."
                )
            sample_weight = {k: sample_weight.get(k) for k in self._output_keys}
        return y, sample_weight

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        y, sample_weight = self._prepare_targets(y, sample_weight)
        return super().compute_loss(x, y, y_pred, sample_weight, training=training)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        y, sample_weight = self._prepare_targets(y, sample_weight)
        return super().compute_metrics(x, y, y_pred, sample_weight)

    # --- config -----------------------------------------------------------------------
    def _task_config(self):
        raise NotImplementedError

    def get_config(self):
        config = dict(
            name=self.name,
            trainable=self.trainable,
            encoder=keras.saving.serialize_keras_object(self.encoder),
            **self._task_config(),
        )
        if self.preprocessor is not None:
            config["preprocessor"] = keras.saving.serialize_keras_object(self.preprocessor)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("encoder", "preprocessor"):
            if config.get(key) is not None:
                config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)
