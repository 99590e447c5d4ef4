"""The head of a transformers `*ForSequenceClassification` checkpoint: its family's table
(`families.task_head`) read into a `BertClassifier`'s head, and written back from one
(`classifier_spec`, for `bk.save_transformers`), through the strict name maps of
`bert_keras.checkpoints`.

>>> from bert_keras.families import get_family
>>> sorted(head_name_map(get_family("roberta", "ckpt"), "classification_head"))[:2]
['classification_head/hidden/bias', 'classification_head/hidden/kernel']
"""

from bert_keras import checkpoints, families
from bert_keras.checkpoints import huggingface
from bert_keras.checkpoints.transformers_spec import TransformersSpec, label_config, no_generator
from bert_keras.errors import InputError
from bert_keras.models import head_checkpoints
from bert_keras.tasks.family_heads import (
    checkpoint_pooling,
    family_poolings,
    pooled_head_names,
)

TRANSFORMERS_HEAD = "ForSequenceClassification"


def head_name_map(family, head):
    """A ClassificationHead named `head` -> the `*ForSequenceClassification` head tensors of
    `family` (a family module)."""
    return huggingface.head_names(families.task_head(family, TRANSFORMERS_HEAD), head)


def head_activation(path):
    """The hidden activation of the classification head of a transformers checkpoint's
    family (None: BERT / ALBERT, on the pooler; "tanh" RoBERTa; "gelu" ELECTRA; "relu"
    DistilBERT); None for other layouts."""
    if checkpoints.detect_format(path) != "huggingface":
        return None
    return families.task_head(huggingface.read_family(path)[0], TRANSFORMERS_HEAD).activation


def head_arguments(path):
    """The BertClassifier arguments that make its head compute what the
    `*ForSequenceClassification` of checkpoint `path`'s family computes: `hidden_activation`,
    `hidden_norm` and `pooling`; {} for other layouts.

    >>> head_arguments("tests/fixtures/families/roberta_classifier")
    {'hidden_activation': 'tanh', 'hidden_norm': False, 'pooling': 'cls'}
    """
    arguments = head_checkpoints.task_head_arguments(path, TRANSFORMERS_HEAD)
    return dict(arguments, pooling=checkpoint_pooling(path)) if arguments else {}


def load_classification_head(classifier, path):
    """Sets a BertClassifier's head from a transformers `*ForSequenceClassification`
    checkpoint directory (its family's head: `head_activation(path)`); missing or
    mis-shaped tensors raise `CheckpointError` naming them.

    >>> clf = BertClassifier(BertEncoder.from_pretrained(path), 3,  # doctest: +SKIP
    ...                      hidden_activation=head_activation(path))
    >>> load_classification_head(clf, path)  # doctest: +SKIP
    """
    family = huggingface.read_family(path)[0]
    _, tensors = checkpoints.read_tensors(path)
    checkpoints.assign_weights(classifier,
                               head_name_map(family, classifier.classification_head.name),
                               tensors, path, partial=True)


def classifier_spec(classifier, generator=False, head_config=None, extra_files=None):
    """`classifier` (a BertClassifier) as `*ForSequenceClassification`: InputError for a
    pooling or head layers that no transformers class computes. Its config.json keys: the
    labels and problem type (`head_config`: a (labels, what) -> keys of its own, as the
    reranker's; `extra_files` beside them)."""
    what = type(classifier).__name__
    no_generator(generator, what)
    _check_classifier_options(classifier, what)
    head = classifier.classification_head

    def head_names(family, what):
        return pooled_head_names(classifier, head, TRANSFORMERS_HEAD, family, what, "classifier")

    def labels_and_problem(labels, what):
        names = labels if labels is not None else classifier.labels
        return dict(label_config(names, head.num_classes, what),
                    problem_type=classifier.problem.transformers)

    head_keys = head_config or labels_and_problem

    def head_and_pooling(labels, what):
        # Another pooling than "cls" passed head_names only for a family that reads
        # config.json's classifier_pooling (`pooling`: ModernBERT's).
        keys = head_keys(labels, what)
        return keys if classifier.pooling == "cls" else dict(
            keys, classifier_pooling=classifier.pooling)

    return TransformersSpec(classifier, classifier.encoder, TRANSFORMERS_HEAD, reads_pooler=True,
                            head_names=head_names, head_config=head_and_pooling,
                            extra_files=extra_files)


def _check_classifier_options(classifier, what):
    """InputError for a classifier's pooling or head layers that no transformers
    *ForSequenceClassification computes (mean / max / attention pooling have no weights to
    leave out, so only this check keeps them from being written as a [CLS] classifier)."""
    # The poolings of the families of its tokenizer (each family's own: head_names).
    tokenizer = getattr(getattr(classifier, "preprocessor", None), "tokenizer", None)
    read = {p for family in families.FAMILIES.values() for p in family_poolings(family)
            if tokenizer is None or type(tokenizer) is family.TOKENIZER}
    if classifier.pooling not in read:
        others = "".join(f" or {p!r}" for p in sorted(read - {"cls"}))
        raise InputError(f"{what}: pooling={classifier.pooling!r} has no transformers "
                         "equivalent (its *ForSequenceClassification reads the first token: "
                         f"pooling='cls'{others}).")
    if classifier.head_hidden_layers:
        raise InputError(f"{what}: head_hidden_layers={classifier.head_hidden_layers} has no "
                         "transformers equivalent (its *ForSequenceClassification heads have no "
                         "such layers).")
