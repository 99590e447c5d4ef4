"""The serving role of a task type (see `base.Task`): its signatures in the export (inputs,
outputs, warmup requests) and how tools/predict.py reads a line for it and writes its answer.

Shape legend (serving functions): B batch, T packed sequence length.

>>> from bert_keras.tasks.registry import get_task
>>> get_task("span_qa").input_line_help
'question<TAB>context'
"""

import numpy as np

from bert_keras.tasks.input_lines import InputLine


class TaskServing:
    """The export's serving functions of a task type and the client's view of them."""

    serves_pairs = False  # its export may take two texts (text_a, text_b) per example
    # The export options (ExportConfig fields, e.g. span QA's doc_stride) its serving
    # functions read from `fns.options`; an option no task type reads is refused by name.
    export_options = ()

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


# Most rows of seq_length tokens one served text may take (the export's `max_windows`:
# tagging's rows of a long text, span QA's windows of a long context): bounds a request's cost.
DEFAULT_MAX_WINDOWS = 64
# Rows of the long texts among an export's warmup requests.
WARMUP_WINDOWS = 4


def max_windows(fns):
    """The most rows one served text may take: the export's `max_windows` option."""
    return int(fns.options.get("max_windows") or DEFAULT_MAX_WINDOWS)


def class_labels(model, labels):
    """The label names of a model with `num_classes` outputs (default "0", "1", ...), checked
    against its number of classes."""
    num = int(getattr(model, "num_classes"))
    labels = list(labels) if labels else [str(i) for i in range(num)]
    if len(labels) != num:
        raise ValueError(f"task.json has {len(labels)} labels {labels} for a model with "
                         f"{num} classes.")
    return labels
