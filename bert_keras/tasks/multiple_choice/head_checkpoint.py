"""The head of a transformers `*ForMultipleChoice` checkpoint: its family's
(`families.task_head`, a `families.transformers_names.TaskHead`) read into a
`BertMultipleChoice`'s head, and written back from one (`multiple_choice_spec`, for
`bk.save_transformers`), through the strict name maps of `bert_keras.checkpoints`.
"""

from bert_keras import checkpoints, families
from bert_keras.checkpoints import huggingface
from bert_keras.checkpoints.transformers_spec import TransformersSpec, no_generator
from bert_keras.errors import InputError
from bert_keras.models import head_checkpoints
from bert_keras.tasks.family_heads import (
    checkpoint_pooling,
    pooled_head_names,
)

TRANSFORMERS_HEAD = "ForMultipleChoice"


def head_arguments(path):
    """The BertMultipleChoice arguments that make its head compute what the
    `*ForMultipleChoice` of checkpoint `path`'s family computes: `hidden_activation`,
    `hidden_norm` and `pooling`; {} for other layouts or no path.

    >>> head_arguments("tests/fixtures/families/roberta")
    {'hidden_activation': None, 'hidden_norm': False, 'pooling': 'cls'}
    """
    arguments = head_checkpoints.task_head_arguments(path, TRANSFORMERS_HEAD) if path else {}
    return dict(arguments, pooling=checkpoint_pooling(path)) if arguments else {}


def head_name_map(family, head):
    """A ClassificationHead named `head` -> the tensors of `family`'s `*ForMultipleChoice`
    head."""
    return huggingface.head_names(families.task_head(family, TRANSFORMERS_HEAD), head)


def load_multiple_choice_head(model, path):
    """Sets a BertMultipleChoice's head from a transformers `*ForMultipleChoice` directory:
    CheckpointError naming a missing or mis-shaped tensor or a model that pools otherwise
    (`pooling`), InputError for a config.json whose head is not the one its family's facts
    describe (ELECTRA's summary options).

    >>> model = BertMultipleChoice.from_pretrained(path)  # doctest: +SKIP
    >>> load_multiple_choice_head(model, path)  # doctest: +SKIP
    """
    architecture = huggingface.head_architecture(path) or ""
    if not architecture.endswith(TRANSFORMERS_HEAD):  # another head's classifier may fit too
        raise checkpoints.CheckpointError(f"{path}: {architecture or 'no architectures'} is not "
                                          f"a *{TRANSFORMERS_HEAD} checkpoint.")
    family, config = huggingface.read_family(path)
    fact = families.task_head(family, TRANSFORMERS_HEAD)
    read = checkpoint_pooling(path)
    if model.pooling != read:  # its head starts fresh
        raise checkpoints.CheckpointError(
            f"{path}: its {family.TRANSFORMERS_PREFIX}{TRANSFORMERS_HEAD} head reads "
            f"pooling={read!r}; this model has pooling={model.pooling!r}.")
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
    pre_classifier, ELECTRA's sequence summary, DeBERTa's ContextPooler; ModernBERT's with a
    layer norm, on the first token or the tokens' mean), with the config.json keys that head
    assumes (transformers' defaults; ModernBERT's `classifier_pooling` where "mean")."""
    no_generator(generator, type(model).__name__)
    head = model.multiple_choice_head

    def head_names(family, what):
        return pooled_head_names(model, head, TRANSFORMERS_HEAD, family, what,
                                 "multiple-choice head")

    def head_config(labels, what):
        # Another pooling than "cls" passed head_names only for a family that reads
        # config.json's classifier_pooling. The other keys of the head (its table's
        # `config`, ELECTRA's summary) are left to transformers' defaults, which are the
        # values the head assumes.
        return {} if model.pooling == "cls" else {"classifier_pooling": model.pooling}

    return TransformersSpec(model, model.encoder, TRANSFORMERS_HEAD, reads_pooler=True,
                            head_names=head_names, head_config=head_config)
