"""Head weights from checkpoints: Google's and Hugging Face's pretraining heads (which the
pretraining runs of `bert_keras.training` read), and what every task type's head loader
shares: the arguments of a family's task head (`task_head_arguments`), loading a fine-tuned
head where it fits (`try_load_head`) and its label names (`fine_tuned_labels`).

The encoder's own weights come through `BertEncoder.from_pretrained`; each task type's head
loader (`bert_keras.tasks.<name>.head_checkpoint`) sets its head, through the exact name maps
of `bert_keras.checkpoints`.
"""

from bert_keras import checkpoints
from bert_keras.checkpoints import huggingface
from bert_keras.families import DEFAULT_MODEL_TYPE


def load_pretraining_heads(pretrainer, checkpoint, fmt=None, family=DEFAULT_MODEL_TYPE):
    """Sets a BertPretrainer's MLM (and NSP / SOP) head weights from a Google or HF checkpoint.

    `checkpoint`: a checkpoint directory (read with `bert_keras.checkpoints.read_tensors`; a
    Hugging Face directory names its family in config.json), or a dict {tensor name: array}
    with `fmt` "google" / "huggingface" and the Hugging Face `family`. Missing head tensors or
    wrong shapes raise `CheckpointError` naming them. The encoder weights are loaded
    separately (`BertEncoder.from_pretrained`); the tied decoder needs nothing more. Build
    the pretrainer with `mlm_activation=masked_lm_activation(path)`: RoBERTa's and ELECTRA's
    heads do not use the encoder's activation.

    >>> load_pretraining_heads(pretrainer, "uncased_L-12_H-768_A-12/")  # doctest: +SKIP
    """
    source = "the given tensors"
    if isinstance(checkpoint, str):
        source = checkpoint
        fmt, tensors = checkpoints.read_tensors(checkpoint)
        if fmt == "huggingface":
            family = huggingface.read_config(checkpoint)[0]
        checkpoint = tensors
    name_map = checkpoints.pretraining_head_name_map(
        fmt, pretrainer.masked_lm_head.name, getattr(pretrainer.next_sentence_head, "name", None),
        next_sentence=pretrainer.next_sentence, family=family,
    )
    checkpoints.assign_weights(pretrainer, name_map, checkpoint, source, partial=True)


def masked_lm_activation(path):
    """The activation of checkpoint `path`'s masked-LM head where it is not its encoder's
    (Hugging Face RoBERTa and ELECTRA's generator: "gelu"), else None."""
    if checkpoints.detect_format(path) != "huggingface":
        return None
    return huggingface.masked_lm_activation(path)


def load_replaced_token_head(electra, path):
    """Sets an ElectraPretrainer's discriminator head from a Hugging Face
    `ElectraForPreTraining` directory; CheckpointError naming what is missing or mis-shaped.

    >>> load_replaced_token_head(model, "electra-small-discriminator/")  # doctest: +SKIP
    """
    _, tensors = checkpoints.read_tensors(path)
    name_map = huggingface.replaced_token_head_name_map(electra.discriminator_head.name, path)
    checkpoints.assign_weights(electra, name_map, tensors, path, partial=True)


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
