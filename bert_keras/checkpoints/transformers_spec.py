"""What `bk.save_transformers` writes for a model, said by the model itself.

A model with a transformers class has a method `transformers_spec(generator=False)` that
returns a `TransformersSpec`: its encoder, the class name ending ("Model", "ForMaskedLM",
"ForSequenceClassification", "ForMultipleChoice", ...), whether that class reads the pooler,
and functions that give its head layers' name maps for a family (refusing a family whose head
computes something else) and its head's config.json keys. The writer
(`transformers_writer`) asks for the spec and applies it the same way to every model: it
neither imports a model nor switches on one, and a task type's part of it lives in its
package (`bert_keras.tasks.<name>`).

>>> spec = TransformersSpec(model=None, encoder=None, suffix="Model", reads_pooler=True,
...                         prefixed=False)
>>> spec.names(family=None, what="BertEncoder"), spec.config(labels=None, what="BertEncoder")
([], {})
"""

import dataclasses

from bert_keras.errors import InputError


@dataclasses.dataclass(frozen=True)
class TransformersSpec:
    """What a model is as a transformers model.

    model: the model whose every weight is written or deliberately `ignored`.
    encoder: its BertEncoder (the `<model_type>` part of the class).
    suffix: the class name ending after the family's prefix ("Model", "ForMaskedLM", ...).
    reads_pooler: whether that class has a pooler and its output depends on it (a pooler
        that no head reads is left out, as transformers' classes without one leave it out).
    prefixed: whether the class names the encoder's tensors "<model_type>.*" (every class
        but the bare `*Model`).
    head_names: (family module, what) -> [(head layer, its name map)], InputError naming
        `what` where the family's transformers head computes something else; None: no head.
    head_config: (labels, what) -> config.json's keys of the head (labels: the names given to
        `save_transformers`, or None); None: none.
    extra_files: () -> {file name: dict} written as JSON beside config.json; None: none.
    ignored: variables of `model` that go nowhere on purpose (ELECTRA's other half).
    deltas: id(variable) -> a variable added to it before writing (ELECTRA's GDES).
    """

    model: object
    encoder: object
    suffix: str
    reads_pooler: bool = False
    prefixed: bool = True
    head_names: object = None
    head_config: object = None
    extra_files: object = None
    ignored: tuple = ()
    deltas: dict = dataclasses.field(default_factory=dict)

    def names(self, family, what):
        """[(layer, name map)] of the head layers as `family` names them."""
        return self.head_names(family, what) if self.head_names else []

    def config(self, labels, what):
        """config.json's head keys."""
        return self.head_config(labels, what) if self.head_config else {}

    def files(self):
        """{file name: dict} of the JSON files beside config.json."""
        return self.extra_files() if self.extra_files else {}


def no_generator(generator, what):
    """InputError naming `what` when `generator` asks for an ELECTRA generator of a model
    that has none."""
    if generator:
        raise InputError(f"{what} has no ELECTRA generator (generator=True is for an "
                         "ElectraPretrainer).")


def weights_besides(model, kept):
    """The variables of `model` that are not in `kept` (a spec's `ignored`)."""
    kept = {id(v) for v in kept}
    return tuple(v for v in model.weights if id(v) not in kept)


def label_config(labels, count, what):
    """config.json's id2label and label2id of a head of `count` classes named `labels`
    (transformers' placeholders LABEL_0, LABEL_1, ... without names); InputError naming
    `what` for names of another count.

    >>> label_config(None, 2, "clf")["label2id"]
    {'LABEL_0': 0, 'LABEL_1': 1}
    """
    names = list(labels) if labels else [f"LABEL_{i}" for i in range(count)]
    if len(names) != count:
        raise InputError(f"{what}: {len(names)} labels {names[:5]} for its {count} classes.")
    return {"id2label": {str(i): str(n) for i, n in enumerate(names)},
            "label2id": {str(n): i for i, n in enumerate(names)}}


def check_family_head(head, table, family, what, kind):
    """InputError naming `what` unless `head` (a head layer with `hidden_activation` and
    `hidden_norm`, `kind` in messages) computes the layers of `family`'s head `table` (a
    `TaskHead`): the same activation of a hidden dense, a layer norm after it where the
    table names one."""
    if head.hidden_activation != table.activation:
        raise InputError(f"{what}: its {kind} has hidden_activation={head.hidden_activation!r}; "
                         f"transformers' {family.MODEL_TYPE} head has {table.activation!r}.")
    if bool(getattr(head, "hidden_norm", False)) != bool(table.norm):
        raise InputError(f"{what}: its {kind} has hidden_norm="
                         f"{bool(getattr(head, 'hidden_norm', False))}; transformers' "
                         f"{family.MODEL_TYPE} head has {'a' if table.norm else 'no'} layer norm "
                         "there.")


def check_pooled_input(table, encoder, family, what, kind):
    """InputError naming `what` unless the `kind` head of `family` (a `TaskHead` `table` on the
    encoder's pooled output) reads what `encoder`'s pooled output is: the pooler where the
    table has no hidden dense (BERT's, ALBERT's), the first token where it has one."""
    use_pooler = encoder.architecture["use_pooler"]
    if table.hidden is None and not use_pooler:
        raise InputError(f"{what}: its {kind} reads the first token without a pooler; "
                         f"transformers' {family.MODEL_TYPE} {kind} reads the pooler.")
    if table.hidden is not None and use_pooler:
        raise InputError(f"{what}: its {kind} reads the pooler; transformers' "
                         f"{family.MODEL_TYPE} {kind} reads the first token.")
