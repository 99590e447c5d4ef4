"""The transformers writer (`bk.save_transformers`) on the ModernBERT and DeBERTa-v3 fixtures,
without torch: read with their heads, written again, every tensor comes back bit for bit
(ModernBERT's implied zero biases left out again), config.json's keys are the fixture's, the
tokenizer files are what transformers reads, and the written directory reads back into the
same model. That transformers computes the project's outputs from the written directories is
checked outside the suite (tests/fixtures/check_writer_new_families.py, its figures there).
"""

import json
import pathlib

import numpy as np
import pytest

import bert_keras as bk
from bert_keras.checkpoints.safetensors import read_safetensors
from bert_keras.errors import InputError
from bert_keras.families import FAMILIES
from bert_keras.tasks.registry import load_model

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "families"
CASES = ["modernbert", "modernbert_classifier", "modernbert_qa", "modernbert_tagger",
         "deberta_v3", "deberta_v3_classifier", "deberta_v3_qa", "deberta_v3_tagger"]
# Keys that transformers' save adds and no model reads.
NOT_COMPARED = {"dtype", "transformers_version"}


def read_json(path):
    return json.loads(pathlib.Path(path).read_text())


def write(name, directory):
    model, tokenizer, labels, model_type = load_model(str(FIXTURES / name))
    bk.save_transformers(model, directory, tokenizer=tokenizer, labels=labels)
    return model, tokenizer


def assert_same_weights(model, again):
    assert len(model.weights) == len(again.weights)
    for mine, back in zip(model.weights, again.weights):
        np.testing.assert_array_equal(back.numpy(), mine.numpy(), err_msg=mine.path)


@pytest.mark.parametrize("name", CASES)
def test_round_trip_gives_every_tensor_config_key_and_tokenizer_file_back(name, tmp_path):
    model, original_tokenizer = write(name, tmp_path / name)
    directory = tmp_path / name
    theirs = read_safetensors(FIXTURES / name / "model.safetensors")
    ours = read_safetensors(directory / "model.safetensors")
    assert sorted(ours) == sorted(theirs)  # ModernBERT's bias-free layers: no zeros written
    for tensor, value in theirs.items():
        assert ours[tensor].dtype == value.dtype and ours[tensor].shape == value.shape, tensor
        assert ours[tensor].tobytes() == value.tobytes(), tensor
    original = read_json(FIXTURES / name / "config.json")
    config = read_json(directory / "config.json")
    assert {k: config.get(k) for k in original if k not in NOT_COMPARED} == {
        k: v for k, v in original.items() if k not in NOT_COMPARED}
    family = FAMILIES[config["model_type"]]
    assert family.encoder_config(config, name) == family.encoder_config(original, name)
    # The tokenizer files transformers reads: ModernBERT's tokenizer.json as transformers
    # wrote it, DeBERTa's spm.model and its tokenizer_config.json's options.
    if (FIXTURES / name / "tokenizer.json").exists():
        assert read_json(directory / "tokenizer.json") == read_json(FIXTURES / name /
                                                                    "tokenizer.json")
    else:
        assert ((directory / "spm.model").read_bytes()
                == (FIXTURES / name / "spm.model").read_bytes())
        written = read_json(directory / "tokenizer_config.json")
        assert {k: written.get(k) for k in read_json(FIXTURES / name / "tokenizer_config.json")
                } == read_json(FIXTURES / name / "tokenizer_config.json")
    # It reads back into the same model (heads, pooling and tokenizer ids included).
    again, tokenizer, _, _ = load_model(str(directory))
    assert type(again) is type(model)
    assert getattr(again, "pooling", None) == getattr(model, "pooling", None)
    assert_same_weights(model, again)
    texts = read_json(FIXTURES / "texts.json")["texts"]
    assert (tokenizer.tokenize(texts).to_list()
            == original_tokenizer.tokenize(texts).to_list())


def test_a_cls_pooled_modernbert_classifier_writes_its_pooling_and_its_zero_bias(tmp_path):
    """classifier_pooling "cls" as well as the fixture's "mean"; a zero head bias is written
    as transformers' classifier_bias false (the zeros it stands for read back)."""
    model = bk.BertClassifier.from_pretrained(FIXTURES / "modernbert_classifier", pooling="cls",
                                              seq_length=64)
    head = model.classification_head
    head.hidden.bias.assign(np.zeros(head.hidden.bias.shape, "float32"))
    bk.save_transformers(model, tmp_path / "cls")
    config = read_json(tmp_path / "cls" / "config.json")
    assert config["classifier_pooling"] == "cls" and config["classifier_bias"] is False
    assert "head.dense.bias" not in read_safetensors(tmp_path / "cls" / "model.safetensors")
    again = bk.BertClassifier.from_pretrained(tmp_path / "cls", seq_length=64)
    assert again.pooling == "cls"
    assert_same_weights(model, again)


def test_a_modernbert_head_norm_bias_without_the_encoders_is_refused(tmp_path):
    """norm_bias is one switch in transformers' ModernBERT: a head norm bias that is not zero
    in a bias-free encoder has no file that holds it."""
    model, tokenizer, _, _ = load_model(str(FIXTURES / "modernbert_tagger"))
    beta = next(v for v in model.token_classification_head.weights
                if v.path.endswith("hidden_norm/beta"))
    beta.assign(np.ones(beta.shape, "float32"))
    with pytest.raises(InputError, match=r"^BertTokenClassifier: its head's layer norm has a "
                                         r"bias, and its encoder's norms have none") as e:
        bk.save_transformers(model, tmp_path / "out", tokenizer=tokenizer)
    assert "\n" not in str(e.value)
    assert not (tmp_path / "out").exists()


def test_a_mean_pooled_classifier_of_a_family_without_it_is_refused(tmp_path):
    encoder = bk.BertEncoder.from_pretrained(FIXTURES / "deberta_v3_classifier")
    model = bk.BertClassifier(encoder, 2, pooling="mean", hidden_activation="gelu")
    with pytest.raises(InputError, match=r"pooling='mean'"):
        bk.save_transformers(model, tmp_path / "out", tokenizer=bk.load_tokenizer(
            str(FIXTURES / "deberta_v3_classifier")))
    assert not (tmp_path / "out").exists()


def test_a_mean_pooled_multiple_choice_model_of_a_family_without_it_is_refused(tmp_path):
    """ModernBertForMultipleChoice reads classifier_pooling (its round trip, "cls" and "mean":
    test_transformers_writer.py over tests/fixtures/multiple_choice); DeBERTa's reads [CLS]."""
    encoder = bk.BertEncoder.from_pretrained(FIXTURES / "deberta_v3_classifier")
    model = bk.BertMultipleChoice(encoder, pooling="mean", hidden_activation="gelu")
    with pytest.raises(InputError, match=r"^BertMultipleChoice: pooling='mean'; transformers' "
                                         r"deberta-v2 multiple-choice head reads 'cls'") as e:
        bk.save_transformers(model, tmp_path / "out", tokenizer=bk.load_tokenizer(
            str(FIXTURES / "deberta_v3_classifier")))
    assert "\n" not in str(e.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name, prefix", [("modernbert", "model."),
                                          ("deberta_v3_classifier", "deberta.")])
def test_a_bare_encoder_is_written_without_the_task_files_prefix(name, prefix, tmp_path):
    encoder = bk.BertEncoder.from_pretrained(FIXTURES / name)
    bk.save_transformers(encoder, tmp_path / "encoder",
                         tokenizer=bk.load_tokenizer(str(FIXTURES / name)))
    theirs = {k.removeprefix(prefix): v
              for k, v in read_safetensors(FIXTURES / name / "model.safetensors").items()
              if k.startswith(prefix)}
    ours = read_safetensors(tmp_path / "encoder" / "model.safetensors")
    assert sorted(ours) == sorted(theirs)
    for tensor, value in theirs.items():
        assert ours[tensor].tobytes() == value.tobytes(), tensor
    config = read_json(tmp_path / "encoder" / "config.json")
    assert config["architectures"][0].endswith("Model")
