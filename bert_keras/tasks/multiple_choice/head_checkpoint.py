"""The head of a transformers `*ForMultipleChoice` checkpoint: its family's
`MULTIPLE_CHOICE_HEAD` (`families.transformers_names.MultipleChoiceHead`) read into a
`BertMultipleChoice`'s head, through the strict name maps of `bert_keras.checkpoints`.
"""

from bert_keras import checkpoints
from bert_keras.checkpoints import huggingface
from bert_keras.checkpoints.assign import identity, transpose
from bert_keras.errors import InputError

TRANSFORMERS_HEAD = "ForMultipleChoice"


def head_activation(path):
    """The hidden activation of the multiple-choice head of a transformers checkpoint's
    family (None: on the pooled output; "relu" DistilBERT; "gelu" ELECTRA's sequence
    summary); None for other layouts."""
    if checkpoints.detect_format(path) != "huggingface":
        return None
    return huggingface.read_family(path)[0].MULTIPLE_CHOICE_HEAD.activation


def head_name_map(head_fact, head):
    """A ClassificationHead named `head` -> the tensors of a family's `*ForMultipleChoice`
    head (`head_fact`, a MultipleChoiceHead)."""
    names = {f"{head}/logits/kernel": ([f"{head_fact.output}.weight"], transpose),
             f"{head}/logits/bias": ([f"{head_fact.output}.bias"], identity)}
    if head_fact.hidden:
        names.update({f"{head}/hidden/kernel": ([f"{head_fact.hidden}.weight"], transpose),
                      f"{head}/hidden/bias": ([f"{head_fact.hidden}.bias"], identity)})
    return names


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
    fact = family.MULTIPLE_CHOICE_HEAD
    for key, value in fact.config:
        if config.get(key, value) != value:
            raise InputError(f"{path}: config.json's {key}={config[key]!r}; the "
                             f"{family.TRANSFORMERS_PREFIX}{TRANSFORMERS_HEAD} head that can be "
                             f"read has {key}={value!r}.")
    _, tensors = checkpoints.read_tensors(path)
    checkpoints.assign_weights(model, head_name_map(fact, model.multiple_choice_head.name),
                               tensors, path, partial=True)
