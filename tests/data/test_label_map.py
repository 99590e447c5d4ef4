"""LabelMap: sorting, JSON round trip, and errors that name the unseen label and its row."""

import json

import numpy as np
import pytest

from bert_keras import finetuning_data as fd
from bert_keras.data.finetuning.label_map import LabelMap


def test_label_map_sorting_save_load(tmp_path):
    assert LabelMap.infer(["10", "2", "1", "2"]).labels == ["1", "2", "10"]  # numeric
    assert LabelMap.infer(["b", "a", "B"]).labels == ["B", "a", "b"]
    kept = LabelMap(["entailment", "neutral", "contradiction"])  # order kept as given
    assert kept.encode(["contradiction"]).tolist() == [2]
    assert kept.decode(np.array([0, 1])) == ["entailment", "neutral"]
    path = str(tmp_path / "labels.json")
    kept.save(path)
    assert LabelMap.load(path) == kept
    assert json.load(open(path)) == {"labels": ["entailment", "neutral", "contradiction"],
                                     "multi_label": False}
    with pytest.raises(ValueError, match="duplicate labels"):
        LabelMap(["a", "a"])
    with pytest.raises(ValueError, match="label id 3 is out of range"):
        kept.decode([3])


def test_label_map_unseen_label_names_value_and_row(tmp_path):
    (tmp_path / "train.tsv").write_text("pos\tgood\nneg\tbad\n")
    (tmp_path / "dev.tsv").write_text("pos\tfine\nneutral\tmeh\n")
    train, dev = fd.read_tsv(str(tmp_path / "train.tsv")), fd.read_tsv(str(tmp_path / "dev.tsv"))
    label_map = LabelMap.from_examples(train)
    assert label_map.labels == ["neg", "pos"]
    with pytest.raises(ValueError, match=r"label 'neutral' in .*dev.tsv:2 is not in the label map"):
        label_map.encode(dev)
    with pytest.raises(ValueError, match=r"label 'x' in eval.tsv:9"):
        label_map.encode(["pos", "x"], sources=["eval.tsv:8", "eval.tsv:9"])
    with pytest.raises(ValueError, match=r"label 'I-PER' in .*:1 is not in the label map"):
        LabelMap(["O"]).encode_tags([fd.TaggingExample(["a"], ["I-PER"], source="f.conll:1")])
