"""The arguments of a task model's head that say which family's head it is (`hidden_activation`,
`hidden_norm`: RoBERTa's dense-tanh, ModernBERT's dense-gelu-norm before the output layer), as
`from_pretrained` takes them: from a task directory's model of the same class, or from a
transformers checkpoint's family (`head_checkpoints.task_head_arguments`); and what a family's
classifier-style heads (`*ForSequenceClassification`, `*ForMultipleChoice`) pool, and their
tensor names for a model with such a head (`pooled_head_names`)."""

from bert_keras import checkpoints, families
from bert_keras.checkpoints import huggingface
from bert_keras.checkpoints.transformers_spec import check_family_head, check_pooled_input
from bert_keras.errors import InputError
from bert_keras.models import head_checkpoints

# Each with its value in a model saved before it existed.
HEAD_ARGUMENTS = {"hidden_activation": None, "hidden_norm": False}


def family_head_arguments(cls, path, trained, kwargs):
    """`kwargs` with the head arguments that it leaves out: those of `trained` (a task
    directory's model, or None) when it is a `cls`, else those of checkpoint `path`'s family
    head (`cls.transformers_head`; the classifier's pooling too)."""
    if isinstance(trained, cls):
        arguments = {key: getattr(trained, key, value) for key, value in HEAD_ARGUMENTS.items()}
    elif trained is None:
        arguments = head_checkpoints.task_head_arguments(path, cls.transformers_head)
    else:
        arguments = {}
    return {**arguments, **kwargs}


def family_poolings(family):
    """What `family`'s classifier heads (*ForSequenceClassification, *ForMultipleChoice) may
    pool (`pooling`, config.json's `classifier_pooling`): "cls" by default."""
    return getattr(family, "CLASSIFIER_POOLINGS", ("cls",))


def pooled_head_names(model, head, transformers_head, family, what, kind):
    """[(head, its tensor names)]: `model`'s `head` (a classifier-style head over its pooled
    input) as `family`'s transformers `*{transformers_head}` head; InputError, `what` and
    `kind` naming the model and the head, for a pooling, head layers or pooled input that
    transformers' head does not have."""
    table = families.task_head(family, transformers_head)
    poolings = family_poolings(family)
    if model.pooling not in poolings:
        raise InputError(f"{what}: pooling={model.pooling!r}; transformers' {family.MODEL_TYPE} "
                         f"{kind} reads {' or '.join(map(repr, poolings))}.")
    check_family_head(head, table, family, what, kind)
    check_pooled_input(table, model.encoder, family, what, kind)
    return [(head, huggingface.head_names(table, head.name))]


def checkpoint_pooling(path):
    """What the classifier heads of checkpoint `path` pool: "cls", or ModernBERT's config.json
    `classifier_pooling` ("mean"); "cls" for other layouts."""
    if checkpoints.detect_format(path) != "huggingface":
        return "cls"
    family, config = huggingface.read_family(path)
    read = getattr(family, "classifier_pooling", None)  # else "cls": the first token or pooler
    return read(config, path) if read else "cls"
