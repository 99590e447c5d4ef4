"""Head weights from checkpoints: Google's and Hugging Face's pretraining heads, and the
fine-tuned heads of Hugging Face `*ForSequenceClassification` (each family's own),
`*ForTokenClassification` and `*ForQuestionAnswering` files.

The encoder's own weights come through `BertEncoder.from_pretrained`; these set the heads
of the task models over it, through the exact name maps of `bert_keras.checkpoints`.
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


def load_classification_head(classifier, path):
    """Sets a BertClassifier's head from a Hugging Face `*ForSequenceClassification`
    checkpoint directory (its family's head: `classifier_head_activation(path)`); missing or
    mis-shaped tensors raise `CheckpointError` naming them.

    >>> clf = BertClassifier(BertEncoder.from_pretrained(path), 3,  # doctest: +SKIP
    ...                      hidden_activation=classifier_head_activation(path))
    >>> load_classification_head(clf, path)  # doctest: +SKIP
    """
    _, name_map = huggingface.classifier_head(path)
    fmt, tensors = checkpoints.read_tensors(path)
    checkpoints.assign_weights(classifier, name_map(classifier.classification_head.name), tensors,
                               path, partial=True)


def classifier_head_activation(path):
    """The hidden activation of the classification head of a Hugging Face checkpoint's family
    (None: BERT / ALBERT, on the pooler; "tanh" RoBERTa; "gelu" ELECTRA; "relu" DistilBERT);
    None for other layouts."""
    if checkpoints.detect_format(path) != "huggingface":
        return None
    return huggingface.classifier_head(path)[0]


def classifier_pooling(path):
    """What the `*ForSequenceClassification` head of checkpoint `path` pools: "cls", or
    ModernBERT's config.json `classifier_pooling` ("mean"); "cls" for other layouts."""
    if checkpoints.detect_format(path) != "huggingface":
        return "cls"
    return huggingface.classifier_pooling(path)


def task_head_arguments(path, transformers_head):
    """The task model arguments that make its head compute what the family's
    `*<transformers_head>` ("ForSequenceClassification", "ForTokenClassification",
    "ForQuestionAnswering") of checkpoint `path` computes: `hidden_activation`,
    `hidden_norm` (ModernBERT's dense-gelu-norm before each head) and the classifier's
    `pooling`; {} for other layouts.

    >>> task_head_arguments("tests/fixtures/families/roberta_qa", "ForQuestionAnswering")
    {'hidden_activation': None, 'hidden_norm': False}
    """
    if checkpoints.detect_format(path) != "huggingface":
        return {}
    table = huggingface.task_head(path, transformers_head)
    arguments = dict(hidden_activation=table.activation, hidden_norm=table.norm is not None)
    if transformers_head == "ForSequenceClassification":
        arguments["pooling"] = classifier_pooling(path)
    return arguments


def load_token_classification_head(tagger, path):
    """Sets a BertTokenClassifier's head from a Hugging Face `*ForTokenClassification`
    directory (its family's head: `task_head_arguments`); CheckpointError naming what is
    missing or mis-shaped."""
    _, tensors = checkpoints.read_tensors(path)
    name_map = huggingface.token_classifier_head_name_map(tagger.token_classification_head.name,
                                                          path)
    checkpoints.assign_weights(tagger, name_map, tensors, path, partial=True)


def load_span_head(qa, path):
    """Sets a BertSpanQA's head from a Hugging Face `*ForQuestionAnswering` directory (its
    family's head: `task_head_arguments`); CheckpointError naming what is missing or
    mis-shaped."""
    _, tensors = checkpoints.read_tensors(path)
    checkpoints.assign_weights(qa, huggingface.span_head_name_map(qa.span_head.name, path),
                               tensors, path, partial=True)


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
