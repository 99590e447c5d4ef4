"""The arguments of a task model's head that say which family's head it is (`hidden_activation`,
`hidden_norm`: RoBERTa's dense-tanh, ModernBERT's dense-gelu-norm before the output layer), as
`from_pretrained` takes them: from a task directory's model of the same class, or from a
transformers checkpoint's family (`head_checkpoints.task_head_arguments`)."""

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
