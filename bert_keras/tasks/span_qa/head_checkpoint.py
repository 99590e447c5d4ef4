"""The head of a transformers `*ForQuestionAnswering` checkpoint (start, end rows; `qa_outputs`
alone in the BERT-style families, `families.task_head`) read into a `BertSpanQA`'s head, and
written back from one (`span_spec`, for `bk.save_transformers`).

>>> from bert_keras.families import get_family
>>> head_name_map(get_family("bert", "ckpt"), "span_head")["span_head/logits/bias"][0]
['qa_outputs.bias']
"""

from bert_keras import checkpoints, families
from bert_keras.checkpoints import huggingface
from bert_keras.checkpoints.transformers_spec import (
    TransformersSpec,
    check_family_head,
    no_generator,
)

TRANSFORMERS_HEAD = "ForQuestionAnswering"


def head_name_map(family, head):
    """A SpanHead named `head` -> `family`'s `*ForQuestionAnswering` head tensors."""
    return huggingface.head_names(families.task_head(family, TRANSFORMERS_HEAD), head)


def load_span_head(qa, path):
    """Sets a BertSpanQA's head from a transformers `*ForQuestionAnswering` directory (its
    family's head: `head_checkpoints.task_head_arguments`); CheckpointError naming what is
    missing or mis-shaped."""
    family = huggingface.read_family(path)[0]
    _, tensors = checkpoints.read_tensors(path)
    checkpoints.assign_weights(qa, head_name_map(family, qa.span_head.name), tensors, path,
                               partial=True)


def span_spec(qa, generator=False):
    """`qa` (a BertSpanQA) as `*ForQuestionAnswering` (no pooler)."""
    no_generator(generator, type(qa).__name__)
    head = qa.span_head

    def head_names(family, what):
        check_family_head(head, families.task_head(family, TRANSFORMERS_HEAD), family, what,
                          "span head")
        return [(head, head_name_map(family, head.name))]

    return TransformersSpec(qa, qa.encoder, TRANSFORMERS_HEAD, head_names=head_names)
