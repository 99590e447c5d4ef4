"""The head of a transformers `*ForTokenClassification` checkpoint (`classifier` alone in the
BERT-style families, `families.task_head`) read into a `BertTokenClassifier`'s head, and
written back from one (`tagger_spec`, for `bk.save_transformers`).

>>> from bert_keras.families import get_family
>>> sorted(head_name_map(get_family("modernbert", "ckpt"), "tagger"))[0]
'tagger/hidden/bias'
"""

from bert_keras import checkpoints, families
from bert_keras.checkpoints import huggingface
from bert_keras.checkpoints.transformers_spec import (
    TransformersSpec,
    check_family_head,
    label_config,
    no_generator,
)
from bert_keras.errors import InputError

TRANSFORMERS_HEAD = "ForTokenClassification"


def head_name_map(family, head):
    """A TokenClassificationHead named `head` -> `family`'s `*ForTokenClassification` head
    tensors."""
    return huggingface.head_names(families.task_head(family, TRANSFORMERS_HEAD), head)


def load_token_classification_head(tagger, path):
    """Sets a BertTokenClassifier's head from a transformers `*ForTokenClassification`
    directory (its family's head: `head_checkpoints.task_head_arguments`); CheckpointError
    naming what is missing or mis-shaped."""
    family = huggingface.read_family(path)[0]
    _, tensors = checkpoints.read_tensors(path)
    checkpoints.assign_weights(tagger, head_name_map(family, tagger.token_classification_head.name),
                               tensors, path, partial=True)


def tagger_spec(tagger, generator=False):
    """`tagger` (a BertTokenClassifier) as `*ForTokenClassification` with its tags (no
    pooler); InputError for a CRF, which transformers has no place for."""
    what = type(tagger).__name__
    no_generator(generator, what)
    if getattr(tagger, "crf_layer", None) is not None:
        raise InputError(f"{what} decodes its tags with a CRF (crf=True), which transformers' "
                         f"*{TRANSFORMERS_HEAD} has no place for; save it with model.save() or "
                         "export it instead.")
    head = tagger.token_classification_head

    def head_names(family, what):
        check_family_head(head, families.task_head(family, TRANSFORMERS_HEAD), family, what,
                          "token classification head")
        return [(head, head_name_map(family, head.name))]

    def tags(labels, what):
        return label_config(labels if labels is not None else tagger.labels, head.num_classes,
                            what)

    return TransformersSpec(tagger, tagger.encoder, TRANSFORMERS_HEAD, head_names=head_names,
                            head_config=tags)
