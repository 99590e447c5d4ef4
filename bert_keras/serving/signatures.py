"""The in-graph serving functions of an export: raw text in, named dense outputs out.

Shape legend: B batch, T sequence length (the longest packed row of the batch, at most the
model's seq_length), H hidden size, C classes / tags, W words of a text, P [MASK] tokens of
a text, K top-k predictions, V vocabulary size.

Everything here is TF ops only (core TF plus the tf-text ops of `op_audit.TF_SERVING_TEXT_OPS`),
so the SavedModel needs no Python from this project. `ServingFunctions` binds a model, its
tokenizer and its task object; each task type's `serve` (bert_keras/tasks/) computes the
outputs below, packing with `text.packing.pack_segments` like `BertPreprocessor`.

Signatures (all batch sizes, including 0; string inputs are tf.string [B], multiple choice's
`choices` [B, K]). Every input is
checked in the graph before use (`input_checks`): another rank, ids outside the model's
vocabulary or token types, or a mask other than 0/1 fail the request with an
InvalidArgumentError naming the input, and the server goes on serving.

What serving_default (and a task's extra signatures, as the tagger's `tag_words`) take and
return is the task type's: its `serving_text_fields` / `serving_ranks` name the inputs, its
`serve` computes the outputs, its `output_docs` say what each holds (written into every
export's metadata, `bert_keras_metadata.json`'s "signatures"; docs/serving.md lists them).

Every export also has `encode` (the TF Hub BERT interface: input_word_ids, input_mask,
input_type_ids int32 [B, T] -> sequence_output float32 [B, T, H], pooled_output float32
[B, H]) and `preprocess` (the serving_default text inputs -> the three int32 [B, T] tensors,
type ids all 0 for a model with one token type, so that they are what the model reads and
`encode` takes them).
"""

import tensorflow as tf

from bert_keras.errors import InputError
from bert_keras.models.layers.dense import forward_only
from bert_keras.serving.input_checks import checked_strings, checked_texts, checked_token_ids
from bert_keras.tasks.registry import get_task
from bert_keras.text.packing import pack_with, shortest_packing


class ServingFunctions:
    """The functions of an export, bound to a Keras task model, its tokenizer and task type.

    Args:
      model: the Keras task model (or a bare BertEncoder).
      tokenizer: its tokenizer (WordPiece, byte-level BPE or SentencePiece).
      info: the task.json dict (task, labels, seq_length, text_fields).
      task: its Task object, as the source's description handed it down (default: info's
        task, by name).
      options: its type's export options, an object of `task.export_options_class` (such as
        span QA's max_answer_length, doc_stride and max_windows; None: their defaults), which
        the task's serving functions read as `fns.options`.
    """

    def __init__(self, model, tokenizer, info, task=None, options=None):
        self.model = model
        self.info = info
        # Not tracked here: export.py tracks its variables (as Keras' export does).
        self.encoder = getattr(model, "encoder", model)
        self.tokenizer = _TracedOnceTokenizer(tokenizer)
        self._model_graph = _traced_once(lambda inputs: _forward(model, inputs))
        self.task = task if task is not None else get_task(info["task"])
        self.options = _task_options(self.task, options)
        self.text_fields = tuple(self.task.serving_text_fields(info))
        # Refused, not clamped: a request must never be packed other than the model was.
        self.seq_length = int(info["seq_length"])
        longest = getattr(self.encoder, "max_sequence_length", None)
        if longest and self.seq_length > longest:
            raise InputError(f"--seq_length={self.seq_length} is longer than the model's "
                             f"position table ({longest} positions).")
        shortest = shortest_packing(len(self.text_fields), tokenizer.separators_between)
        if self.seq_length < shortest:
            raise InputError(f"--seq_length={self.seq_length} leaves no room for the text: "
                             f"{info['task']} packs {' + '.join(self.text_fields)} with special "
                             f"tokens into at least {shortest} tokens.")
        self.task.check_serving(self)
        self.labels = self.task.serving_labels(model, info.get("labels"))
        self.label_names = tf.constant(self.labels or [""])
        self.vocab_tokens = tf.constant(tokenizer.vocab)

    def text_signature(self):
        return [tf.TensorSpec([None] * self.task.serving_ranks.get(name, 1), tf.string, name=name)
                for name in self.text_fields]

    def encode(self, input_word_ids, input_mask, input_type_ids):
        inputs = checked_token_ids(
            dict(input_word_ids=input_word_ids, input_mask=input_mask,
                 input_type_ids=input_type_ids),
            vocab_size=self.encoder.vocab_size, type_vocab_size=self.encoder.type_vocab_size,
            max_length=self.encoder.max_sequence_length)
        out = _forward(self.encoder, inputs)
        return {"sequence_output": tf.cast(out["sequence_output"], tf.float32),  # (B, T, H)
                "pooled_output": tf.cast(out["pooled_output"], tf.float32)}  # (B, H)

    def preprocess(self, *texts):
        return self.task.preprocess(self, self.checked(texts))[0]

    def serve(self, *texts):
        return self.task.serve(self, self.checked(texts))

    def serve_extra(self, name, inputs):
        """The task's extra signature `name` (`Task.extra_signatures`) on its string inputs,
        each refused in the graph unless of its rank."""
        ranks = dict(self.task.extra_signatures[name])
        return self.task.serve_extra(self, name, checked_strings(inputs, ranks))

    def checked(self, texts):
        """The text inputs (in `text_fields` order), each refused in the graph unless rank 1
        (or the rank the task's `serving_ranks` gives it)."""
        inputs = dict(zip(self.text_fields, texts))
        ranks = self.task.serving_ranks
        checked = checked_texts({k: v for k, v in inputs.items() if k not in ranks})
        checked.update(checked_strings({k: v for k, v in inputs.items() if k in ranks}, ranks))
        return tuple(checked[name] for name in self.text_fields)

    # -- what the task types' serving functions use ---------------------------------------------

    def pack(self, segments):
        """Tokenized segments -> (the three int32 [B, T] inputs, kept lengths)."""
        inputs, kept = pack_with(self.tokenizer, segments, self.seq_length)
        if self.encoder.type_vocab_size == 1:  # it reads every token as type 0 anyway
            inputs["input_type_ids"] = tf.zeros_like(inputs["input_type_ids"])
        return inputs, kept

    def run(self, inputs, **extra):
        """The model on packed `inputs` (and a task's `extra` inputs), inference mode: one
        traced graph that every signature of the export calls."""
        return self._model_graph(dict(inputs, **extra))


class _TracedOnceTokenizer:
    """A tokenizer whose tokenizing methods are `_traced_once`: every signature of an export
    calls one graph of each instead of tracing its own copy (byte-level BPE's merges: ~0.25 s
    a trace). Other attributes are the tokenizer's."""

    TRACED = ("tokenize", "tokenize_with_offsets", "tokenize_words_with_offsets")

    def __init__(self, tokenizer):
        self.wrapped = tokenizer
        for name in self.TRACED:
            setattr(self, name, _traced_once(getattr(tokenizer, name)))

    def __getattr__(self, name):
        return getattr(self.wrapped, name)


def _forward(model, inputs):
    """`model` on `inputs` in inference mode, traced without gradient plumbing
    (`dense.forward_only`): serving computes no gradient."""
    with forward_only():
        return model(inputs, training=False)


def _traced_once(function):
    """`function` of tensors, called in a graph being built: a tf.function (shapes relaxed)
    that every graph calls, traced once; called eagerly: `function` itself (a trace per new
    input shape would cost more than running its ops)."""
    graph = tf.function(function, autograph=False, reduce_retracing=True)
    return lambda *tensors: function(*tensors) if tf.executing_eagerly() else graph(*tensors)


def _task_options(task, options):
    """`options`, checked to be `task`'s type's export options; None: their defaults."""
    cls = task.export_options_class
    if options is None:
        return cls() if cls is not None else None
    if cls is None or not isinstance(options, cls):
        raise TypeError(f"{type(options).__name__} are not the export options of a {task.name} "
                        f"model ({cls.__name__ if cls else 'it has none'}).")
    return options
