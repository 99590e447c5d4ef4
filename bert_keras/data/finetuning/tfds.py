"""TFDS fine-tuning tasks (GLUE, SQuAD, CoNLL-2003) -> the examples of `finetuning_data`.

`load_tfds_task(name, split)` gives ClassificationExample / SpanExample / TaggingExample
lists, `tfds_label_map(name)` the LabelMap in the dataset's ClassLabel order, and
`tfds_task_type(name)` the fine-tuning task ("classification", "regression", "span_qa",
"tagging") a dataset is.

Example (mock data, no network):
    >>> import tensorflow_datasets as tfds
    >>> from bert_keras.data.finetuning import tfds as tfds_tasks
    >>> with tfds.testing.mock_data(num_examples=2):
    ...     examples = tfds_tasks.load_tfds_task("glue/mrpc", "train")
    >>> len(examples), tfds_tasks.tfds_task_type("glue/mrpc")
    (2, 'classification')
"""

from __future__ import annotations

from bert_keras.data.finetuning.examples import ClassificationExample, SpanExample, TaggingExample
from bert_keras.data.finetuning.label_map import LabelMap


# (text_a key, text_b key) of every GLUE config in TFDS.
GLUE_TEXT_FEATURES = {
    "cola": ("sentence", None),
    "sst2": ("sentence", None),
    "mrpc": ("sentence1", "sentence2"),
    "qqp": ("question1", "question2"),
    "stsb": ("sentence1", "sentence2"),
    "mnli": ("premise", "hypothesis"),
    "qnli": ("question", "sentence"),
    "rte": ("sentence1", "sentence2"),
    "wnli": ("sentence1", "sentence2"),
    "ax": ("premise", "hypothesis"),
}
SQUAD_TFDS_NAMES = ("squad", "squad/v1.1", "squad/v2.0")
CONLL_TFDS_NAMES = ("conll2003", "conll2003/conll2003")


def _task_kind(name: str) -> str:
    base = name.split(":")[0]
    if base.startswith("glue/") and base[5:] in GLUE_TEXT_FEATURES:
        return "glue"
    if base in SQUAD_TFDS_NAMES:
        return "squad"
    if base in CONLL_TFDS_NAMES:
        return "conll"
    known = [f"glue/{t}" for t in GLUE_TEXT_FEATURES] + list(SQUAD_TFDS_NAMES) + list(CONLL_TFDS_NAMES)
    raise ValueError(f"unsupported TFDS task {name!r}; supported: {known}")


def tfds_task_type(name: str) -> str:
    """The fine-tuning task of a TFDS dataset: "classification", "regression" (glue/stsb),
    "span_qa" (squad) or "tagging" (conll2003); ValueError for unsupported names."""
    kind = _task_kind(name)
    if kind == "glue":
        return "regression" if name.split(":")[0] == "glue/stsb" else "classification"
    return {"squad": "span_qa", "conll": "tagging"}[kind]


def _str(x) -> str:
    return x.decode("utf-8") if isinstance(x, bytes) else str(x)


def tfds_label_map(name: str, data_dir: str | None = None) -> LabelMap | None:
    """The LabelMap of a TFDS task in the dataset's own ClassLabel order (so model
    ids equal TFDS ids); None for regression (glue/stsb) and SQuAD."""
    import tensorflow_datasets as tfds

    kind = _task_kind(name)
    if kind == "squad":
        return None
    features = tfds.builder(name, data_dir=data_dir).info.features
    if kind == "conll":
        return LabelMap(features["ner"].feature.names)
    label = features["label"]
    return LabelMap(label.names) if hasattr(label, "names") else None


def load_tfds_task(name: str, split: str, data_dir: str | None = None, download: bool = True) -> list:
    """Examples of a TFDS fine-tuning task.

    Supported: glue/{cola,sst2,mrpc,qqp,stsb,mnli,qnli,rte,wnli,ax} ->
    ClassificationExample (label: the ClassLabel name, float for stsb, None for
    unlabeled test splits); squad/v1.1, squad/v2.0 -> SpanExample; conll2003 ->
    TaggingExample (NER tags by name, IOB2).

    Splits are TFDS's: "train", "validation", "test" (mnli:
    "validation_matched", "validation_mismatched", "test_matched", ...); slicing
    like "train[:1%]" works.

    Real data: `tfds.load` downloads and prepares the dataset into `data_dir`
    (default ~/tensorflow_datasets, or $TFDS_DATA_DIR) on first use; this needs
    the network. For offline machines run `tfds build glue/mrpc` (etc.) where the
    network is available and copy the data dir, then pass data_dir= (and
    download=False to fail fast instead of trying to download).
    """
    import tensorflow_datasets as tfds

    kind = _task_kind(name)
    ds, info = tfds.load(name, split=split, data_dir=data_dir, download=download, with_info=True)
    examples = []
    for i, ex in enumerate(tfds.as_numpy(ds)):
        where = f"{name}[{split}]:{i}"
        if kind == "glue":
            a_key, b_key = GLUE_TEXT_FEATURES[name.split(":")[0][5:]]
            label_feature = info.features["label"]
            if hasattr(label_feature, "names"):
                label = None if int(ex["label"]) < 0 else label_feature.names[int(ex["label"])]
            else:  # stsb: float similarity; TFDS marks unlabeled test rows with -1.
                label = None if split.startswith("test") else float(ex["label"])
            text_b = None if b_key is None else _str(ex[b_key])
            examples.append(ClassificationExample(_str(ex[a_key]), text_b, label, source=where))
        elif kind == "squad":
            texts = [_str(t) for t in ex["answers"]["text"]]
            starts = [int(s) for s in ex["answers"]["answer_start"]]
            examples.append(
                SpanExample(
                    qid=_str(ex["id"]),
                    question=_str(ex["question"]),
                    context=_str(ex["context"]),
                    answers=list(zip(texts, starts)),
                    is_impossible=bool(ex.get("is_impossible", False)),
                    source=where,
                )
            )
        else:
            names = info.features["ner"].feature.names
            words = [_str(w) for w in ex["tokens"]]
            tags = [names[int(t)] for t in ex["ner"]]
            if len(words) != len(tags):
                raise ValueError(f"{where}: {len(words)} tokens but {len(tags)} ner tags")
            examples.append(TaggingExample(words, tags, source=where))
    return examples


__all__ = ["GLUE_TEXT_FEATURES", "SQUAD_TFDS_NAMES", "CONLL_TFDS_NAMES", "tfds_task_type",
           "tfds_label_map", "load_tfds_task"]
