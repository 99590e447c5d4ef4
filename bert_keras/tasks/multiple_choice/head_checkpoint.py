"""The head of a transformers `*ForMultipleChoice` checkpoint: its family's
(`families.task_head`, a `families.transformers_names.TaskHead`) read into a
`BertMultipleChoice`'s head, and written back from one (`multiple_choice_spec`, for
`bk.save_transformers`), through the strict name maps of `bert_keras.checkpoints`.
"""

from bert_keras import checkpoints, families
from bert_keras.checkpoints import huggingface
from bert_keras.checkpoints.transformers_spec import (
    TransformersSpec,
    check_family_head,
    check_pooled_input,
    no_generator,
)
from bert_keras.errors import InputError

TRANSFORMERS_HEAD = "ForMultipleChoice"


def head_activation(path):
    """The hidden activation of the multiple-choice head of a transformers checkpoint's
    family (None: on the pooled output; "relu" DistilBERT; "gelu" ELECTRA's sequence
    summary); None for other layouts."""
    if checkpoints.detect_format(path) != "huggingface":
        return None
    return families.task_head(huggingface.read_family(path)[0], TRANSFORMERS_HEAD).activation


def head_name_map(family, head):
    """A ClassificationHead named `head` -> the tensors of `family`'s `*ForMultipleChoice`
    head."""
    return huggingface.head_names(families.task_head(family, TRANSFORMERS_HEAD), head)


def load_multiple_choice_head(model, path):
    """Sets a BertMultipleChoice's head from a transformers `*ForMultipleChoice` directory:
    CheckpointError naming a missing or mis-shaped tensor, InputError for a config.json whose
    head is not the one its family's facts describe (ELECTRA's summary options).

    >>> model = BertMultipleChoice.from_pretrained(path)  # doctest: +SKIP
    >>> load_multiple_choice_head(model, path)  # doctest: +SKIP
    """
    architecture = huggingface.head_architecture(path) or ""
    if not architecture.endswith(TRANSFORMERS_HEAD):  # another head's classifier may fit too
        raise checkpoints.CheckpointError(f"{path}: {architecture or 'no architectures'} is not "
                                          f"a *{TRANSFORMERS_HEAD} checkpoint.")
    family, config = huggingface.read_family(path)
    fact = families.task_head(family, TRANSFORMERS_HEAD)
    if fact.norm:  # its head starts fresh
        raise checkpoints.CheckpointError(
            f"{path}: its {family.TRANSFORMERS_PREFIX}{TRANSFORMERS_HEAD} head has a layer norm "
            f"({fact.norm}) that a BertMultipleChoice head has not.")
    for key, value in fact.config:
        if config.get(key, value) != value:
            raise InputError(f"{path}: config.json's {key}={config[key]!r}; the "
                             f"{family.TRANSFORMERS_PREFIX}{TRANSFORMERS_HEAD} head that can be "
                             f"read has {key}={value!r}.")
    _, tensors = checkpoints.read_tensors(path)
    checkpoints.assign_weights(model, head_name_map(family, model.multiple_choice_head.name),
                               tensors, path, partial=True)


def multiple_choice_spec(model, generator=False):
    """`model` (a BertMultipleChoice) as `*ForMultipleChoice`: its family's head on the
    pooler (BERT, RoBERTa, ALBERT) or on the first token through a hidden dense (DistilBERT's
    pre_classifier, ELECTRA's sequence summary), with the config.json keys that head
    assumes (transformers' defaults)."""
    no_generator(generator, type(model).__name__)
    head = model.multiple_choice_head

    def head_names(family, what):
        table = families.task_head(family, TRANSFORMERS_HEAD)
        check_family_head(head, table, family, what, "multiple-choice head")
        check_pooled_input(table, model.encoder, family, what, "multiple-choice head")
        return [(head, head_name_map(family, head.name))]

    # config.json's keys of the head (its table's `config`, ELECTRA's summary) are left to
    # transformers' defaults, which are the values the head assumes.
    return TransformersSpec(model, model.encoder, TRANSFORMERS_HEAD, reads_pooler=True,
                            head_names=head_names)
