"""What every task type's head loader shares: the arguments of a family's task head
(`task_head_arguments`), loading a fine-tuned head where it fits (`try_load_head`) and its
label names (`fine_tuned_labels`).

The encoder's own weights come through `BertEncoder.from_pretrained`; each task type's head
loader (`bert_keras.tasks.<name>.head_checkpoint`, the pretraining heads' included) sets its
head, through the exact name maps of `bert_keras.checkpoints`.
"""

from bert_keras import checkpoints
from bert_keras.checkpoints import huggingface


def task_head_arguments(path, transformers_head):
    """The task model arguments that make its head compute what the family's
    `*<transformers_head>` ("ForSequenceClassification", "ForTokenClassification",
    "ForQuestionAnswering", ...) of checkpoint `path` computes: `hidden_activation` and
    `hidden_norm` (ModernBERT's dense-gelu-norm before each head); {} for other layouts.

    >>> task_head_arguments("tests/fixtures/families/roberta_qa", "ForQuestionAnswering")
    {'hidden_activation': None, 'hidden_norm': False}
    """
    if checkpoints.detect_format(path) != "huggingface":
        return {}
    table = huggingface.task_head(path, transformers_head)
    return dict(hidden_activation=table.activation, hidden_norm=table.norm is not None)


def try_load_head(load, model, path, labels=None):
    """`load(model, path)` when `path` is a fine-tuned Hugging Face checkpoint whose head fits
    (shapes, and its id2label names equal `labels` where both are named); True if loaded.
    Anything else keeps the new head."""
    if checkpoints.detect_format(path) != "huggingface":
        return False
    named = huggingface.head_labels(path)
    if labels is not None and named is not None and list(named) != list(labels):
        return False
    try:
        load(model, path)
    except checkpoints.CheckpointError:
        return False
    return True


def fine_tuned_labels(path, head):
    """The label names (id2label, placeholders included) of a fine-tuned Hugging Face
    checkpoint whose `architectures` names `head` (e.g. "ForTokenClassification"), else None.

    >>> fine_tuned_labels("tests/fixtures/families/roberta_tagger", "ForTokenClassification")
    ['O', 'B-PER', 'I-PER', 'B-LOC', 'I-LOC']
    """
    if checkpoints.detect_format(path) != "huggingface":
        return None
    if not (huggingface.head_architecture(path) or "").endswith(head):
        return None
    return huggingface.label_names(huggingface.read_config(path)[1]) or None
