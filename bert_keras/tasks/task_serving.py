"""The serving role of a task type (see `base.Task`): its signatures in the export (inputs,
outputs, warmup requests) and how tools/predict.py reads a line for it and writes its answer.

Shape legend (serving functions): B batch, T packed sequence length.

>>> from bert_keras.tasks.registry import get_task
>>> get_task("span_qa").input_line_help
'question<TAB>context'
"""

import dataclasses

import numpy as np

from bert_keras.configs import Config, check, option
from bert_keras.tasks.input_lines import InputLine


class TaskServing:
    """The export's serving functions of a task type and the client's view of them."""

    # The Config class of its export's options (e.g. span QA's doc_stride), or None: its
    # fields are flags of tools/export.py (serving.export_options), given to a source of
    # another type refused; its serving functions read the object as `fns.options`.
    export_options_class = None

    # -- serving (in-graph; `fns` is the export's serving.signatures.ServingFunctions) ---------

    def serving_text_fields(self, info):
        """The serving_default input names, from task.json's dict."""
        return ("text",)

    # The serving_default inputs of another rank than 1 ([B]: a text per row), e.g.
    # {"choices": 2} for [B, K] strings; each is refused in the graph unless of its rank.
    serving_ranks = {}
    # {output name: what it holds} of its signatures' outputs, written into the export's
    # metadata (`encode` / `preprocess` outputs: serving.saved_model.ENCODE_OUTPUT_DOCS).
    output_docs = {}

    def serving_labels(self, model, labels):
        """The label names the export serves (checked against the model), or None."""
        return None

    def decoding_options(self, config):
        """The options of a fine-tuning run (FinetuneConfig) that its predictions depend on
        beyond the model, kept in task.json's "decoding" for the export."""
        return {}

    def with_export_options(self, model, info, options, source):
        """(model, info) as its export `options` change what is served, before the serving
        functions are made: another model (an encoder's embedder) or other inputs (a
        classifier's pairs); `source`: the exported directory, named in errors (None: a
        model of user code)."""
        return model, info

    def check_serving(self, fns):
        """InputError (naming the flag) if the export's options leave the task no room."""

    def export_metadata(self, fns):
        """Task-specific entries of the export's metadata asset."""
        return {}

    def warmup_texts(self, fields):
        """{serving input name: example key of serving.warmup.EXAMPLES} for warmup requests."""
        return {f: f for f in fields}

    def warmup_longest(self, fns, field, text):
        """A long text for input `field` of the warmup requests: `text` repeated past a row."""
        return " ".join([text] * fns.seq_length)

    def preprocess(self, fns, texts):
        """Text tensors -> (the three int32 [B, T] inputs, kept segment lengths)."""
        return fns.pack([fns.tokenizer.tokenize(t) for t in texts])

    def serve(self, fns, texts):
        """Text tensors -> the dict of serving_default outputs."""
        raise NotImplementedError

    # More signatures of the export: {name: ((input name, rank), ...)}, string inputs, served
    # by `serve_extra`, warmed up by `extra_warmup`'s requests.
    extra_signatures = {}

    def serve_extra(self, fns, name, inputs):
        """The outputs of extra signature `name` for its checked inputs {name: tensor}."""
        raise NotImplementedError

    def extra_warmup(self, fns):
        """[(signature name, {input name: np.ndarray})] warmup requests of the extra ones."""
        return []

    # tools/predict.py's input line of serving_default, as its help shows it per task type
    # (`input_line` is what reads it).
    input_line_help = "text"

    def input_line(self, signature, inputs):
        """How tools/predict.py reads one line as one request row of `signature`, whose string
        inputs are `inputs` ((name, rank), ...) in the export's order: an
        `input_lines.InputLine` (tab-separated texts, a rank-2 input taking the rest)."""
        return InputLine(inputs)

    # The serving_default outputs padded to the longest text of a batch ([B, W, ...]), and
    # (output, pad value) marking where each text's own values end.
    padded_outputs = ()
    padding_marker = None

    def prediction_rows(self, outputs):
        """A batch of serving_default outputs ({name: numpy [B, ...]}) -> one dict per text
        holding only that text's values (lists, keys in sorted order), as tools/predict.py
        writes them: what a line gets never depends on the lines batched with it."""
        batch = len(next(iter(outputs.values()))) if outputs else 0
        rows = []
        for i in range(batch):
            row = {key: outputs[key][i] for key in sorted(outputs)}
            if self.padding_marker:
                key, pad = self.padding_marker
                own = int(np.sum(row[key] != pad))  # padding is trailing
                for name in self.padded_outputs:
                    if name in row:
                        row[name] = row[name][:own]
            rows.append({key: listed(value) for key, value in row.items()})
        return rows


def listed(value):
    """A numpy value as JSON-able Python: lists, str for bytes."""
    value = value.tolist() if hasattr(value, "tolist") else value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list):
        return [listed(v) for v in value]
    return value


@dataclasses.dataclass(frozen=True)
class WindowOptions(Config):
    """The export option of the task types that cut a long text into rows (tagging's rows of
    a text, span QA's windows of a context): a bound on a request's cost.

    >>> WindowOptions().max_windows
    64
    """

    max_windows: int = option(64, "Most rows of seq_length tokens one text may take (the "
                              "windows of a context, the rows of a text to tag); a request "
                              "with a longer one is refused (InvalidArgument).")

    def validate(self):
        check(self.max_windows >= 1, f"--max_windows must be positive, got {self.max_windows}.")


# Rows of the long texts among an export's warmup requests.
WARMUP_WINDOWS = 4


def max_windows(fns):
    """The most rows one served text may take: the export's `max_windows` option."""
    return fns.options.max_windows


def class_labels(model, labels):
    """The label names of a model with `num_classes` outputs (default "0", "1", ...), checked
    against its number of classes."""
    num = int(getattr(model, "num_classes"))
    labels = list(labels) if labels else [str(i) for i in range(num)]
    if len(labels) != num:
        raise ValueError(f"task.json has {len(labels)} labels {labels} for a model with "
                         f"{num} classes.")
    return labels
