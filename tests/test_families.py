"""BERT-family checkpoints in the Hugging Face layout import exactly: DistilBERT, ELECTRA
(discriminator and generator), RoBERTa and ALBERT, against transformers' outputs on the same
small checkpoints (tests/make_family_references.py made them and the references; no torch
needed here). Tokenizer parity: the WordPiece families (RoBERTa's byte-level BPE and
ALBERT's SentencePiece tokenizers are not built yet: their encoders are checked on the
reference tokenizer's ids)."""

import json
import pathlib

import numpy as np
import pytest

import bert_keras as bk

FAMILIES = pathlib.Path(__file__).resolve().parent / "fixtures" / "families"
WORDPIECE_CASES = ["distilbert", "electra_discriminator", "electra_generator"]
CASES = WORDPIECE_CASES + ["roberta", "albert"]
TEXTS = json.loads((FAMILIES / "texts.json").read_text(encoding="utf-8"))


def reference(name):
    return dict(np.load(FAMILIES / name / "reference.npz"))


def batch_inputs(ref, batch):
    """The reference's padded batch as the encoder's three inputs."""
    return {"input_word_ids": ref[f"{batch}_input_ids"], "input_mask": ref[f"{batch}_input_mask"],
            "input_type_ids": ref[f"{batch}_input_type_ids"]}


@pytest.mark.parametrize("name", WORDPIECE_CASES)
def test_tokenizer_ids_equal_the_family_tokenizer(name):
    ref = reference(name)
    tokenizer = bk.BertTokenizer.from_pretrained(str(FAMILIES / name))
    got = tokenizer.tokenize(TEXTS)
    for i, text in enumerate(TEXTS):
        np.testing.assert_array_equal(got[i].numpy(), ref[f"text_{i}"], err_msg=repr(text))


@pytest.mark.parametrize("name", CASES)
def test_encoder_matches_transformers(name):
    ref = reference(name)
    encoder = bk.BertEncoder.from_pretrained(str(FAMILIES / name))
    for batch in ("singles", "pairs"):
        inputs = batch_inputs(ref, batch)
        got = encoder(inputs)["sequence_output"].numpy()
        mask = inputs["input_mask"].astype(bool)
        np.testing.assert_allclose(got[mask], ref[f"{batch}_sequence_output"][mask], atol=1e-4,
                                   err_msg=f"{name} {batch}")


def test_family_architectures():
    distil = bk.BertEncoder.from_pretrained(str(FAMILIES / "distilbert")).architecture
    assert (distil["type_vocab_size"], distil["use_pooler"]) == (0, False)
    electra = bk.BertEncoder.from_pretrained(str(FAMILIES / "electra_discriminator")).architecture
    assert (electra["embedding_size"], electra["hidden_size"], electra["use_pooler"]) == (16, 32, False)
    config = json.loads((FAMILIES / "electra_generator" / "config.json").read_text())
    assert config["embedding_size"] == config["hidden_size"]  # no projection tensor in the file
    generator = bk.BertEncoder.from_pretrained(str(FAMILIES / "electra_generator")).architecture
    assert generator["embedding_size"] is None


def test_roberta_and_albert_architectures():
    roberta = bk.BertEncoder.from_pretrained(str(FAMILIES / "roberta"))
    assert (roberta.position_offset, roberta.type_vocab_size, roberta.use_pooler) == (2, 1, False)
    assert roberta.max_sequence_length == 64
    albert = bk.BertEncoder.from_pretrained(str(FAMILIES / "albert"))
    assert (albert.num_layers, albert.num_layer_groups, albert.embedding_size) == (4, 2, 16)
    # Two blocks of weights serve four layers.
    assert len({v.path.split("/")[0] for v in albert.weights if "transformer_layer" in v.path}) == 2


def test_own_format_round_trip_keeps_the_family(tmp_path):
    encoder = bk.BertEncoder.from_pretrained(str(FAMILIES / "electra_discriminator"))
    tokenizer = bk.BertTokenizer.from_pretrained(str(FAMILIES / "electra_discriminator"))
    encoder.save_pretrained(str(tmp_path / "own"), tokenizer)
    again = bk.BertEncoder.from_pretrained(str(tmp_path / "own"))
    assert again.architecture == encoder.architecture
    ref = reference("electra_discriminator")
    inputs = batch_inputs(ref, "pairs")
    np.testing.assert_array_equal(again(inputs)["sequence_output"].numpy(),
                                  encoder(inputs)["sequence_output"].numpy())


def test_family_checkpoint_with_a_missing_tensor_names_it(tmp_path):
    from bert_keras.checkpoints.safetensors import read_safetensors, write_safetensors

    target = tmp_path / "distil"
    target.mkdir()
    for f in ("config.json", "vocab.txt"):
        (target / f).write_bytes((FAMILIES / "distilbert" / f).read_bytes())
    tensors = read_safetensors(str(FAMILIES / "distilbert" / "model.safetensors"))
    del tensors["distilbert.transformer.layer.1.ffn.lin2.bias"]
    write_safetensors(str(target / "model.safetensors"), tensors)
    with pytest.raises(bk.CheckpointError, match=r"layer\.1\.ffn\.lin2\.bias"):
        bk.BertEncoder.from_pretrained(str(target))


def test_unknown_model_type_is_refused(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(ValueError, match="model_type 'gpt2' is not one of"):
        bk.BertEncoder.from_pretrained(str(tmp_path))
