"""Google's TF1 ALBERT and ELECTRA checkpoints import exactly: the family fixtures' tensors are
written under the variable names of google-research/albert and google-research/electra (here,
independently of the library's name maps), and the encoder reproduces transformers' outputs."""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras import checkpoints
from bert_keras.checkpoints.safetensors import read_safetensors
from bert_keras.text.tokenizers import load_tokenizer

from test_families import FAMILIES, TEXTS, batch_inputs, reference


def save_tf1(tensors, prefix):
    names = sorted(tensors)
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(tensors[n]) for n in names])


def linear(tensors, tf1, hf):
    tensors[f"{tf1}/kernel"], tensors[f"{tf1}/bias"] = hf[0].T, hf[1]


def norm(tensors, tf1, hf):
    tensors[f"{tf1}/gamma"], tensors[f"{tf1}/beta"] = hf[0], hf[1]


def pair(hf, name):
    return hf[f"{name}.weight"], hf[f"{name}.bias"]


def embeddings(hf, scope, hf_scope):
    return {
        f"{scope}/embeddings/word_embeddings": hf[f"{hf_scope}.embeddings.word_embeddings.weight"],
        f"{scope}/embeddings/token_type_embeddings":
            hf[f"{hf_scope}.embeddings.token_type_embeddings.weight"],
        f"{scope}/embeddings/position_embeddings":
            hf[f"{hf_scope}.embeddings.position_embeddings.weight"],
        f"{scope}/embeddings/LayerNorm/gamma": hf[f"{hf_scope}.embeddings.LayerNorm.weight"],
        f"{scope}/embeddings/LayerNorm/beta": hf[f"{hf_scope}.embeddings.LayerNorm.bias"],
    }


def write_albert_as_google(target):
    """google-research/albert names, as in its TF Hub module (`module/` prefix)."""
    source = FAMILIES / "albert"
    hf = read_safetensors(str(source / "model.safetensors"))
    config = json.loads((source / "config.json").read_text())
    t = embeddings(hf, "bert", "albert")
    linear(t, "bert/encoder/embedding_hidden_mapping_in",
           pair(hf, "albert.encoder.embedding_hidden_mapping_in"))
    for g in range(config["num_hidden_groups"]):
        s, h = (f"bert/encoder/transformer/group_{g}/inner_group_0",
                f"albert.encoder.albert_layer_groups.{g}.albert_layers.0")
        for part in ("query", "key", "value"):
            linear(t, f"{s}/attention_1/self/{part}", pair(hf, f"{h}.attention.{part}"))
        linear(t, f"{s}/attention_1/output/dense", pair(hf, f"{h}.attention.dense"))
        norm(t, f"{s}/LayerNorm", pair(hf, f"{h}.attention.LayerNorm"))
        linear(t, f"{s}/ffn_1/intermediate/dense", pair(hf, f"{h}.ffn"))
        linear(t, f"{s}/ffn_1/intermediate/output/dense", pair(hf, f"{h}.ffn_output"))
        norm(t, f"{s}/LayerNorm_1", pair(hf, f"{h}.full_layer_layer_norm"))
    # The fixture has no pooler; ALBERT's TF1 graph always has one (unused by these outputs).
    hidden = config["hidden_size"]
    t["bert/pooler/dense/kernel"] = np.eye(hidden, dtype=np.float32)
    t["bert/pooler/dense/bias"] = np.zeros(hidden, np.float32)
    t["cls/predictions/output_bias"] = hf["predictions.bias"]
    t["global_step"] = np.array(10, np.int64)
    os.makedirs(target)
    save_tf1({f"module/{name}": v for name, v in t.items()},
             os.path.join(target, "model.ckpt-best"))
    google_config = {k: config[k] for k in (
        "embedding_size", "hidden_size", "num_hidden_layers", "num_hidden_groups",
        "num_attention_heads", "intermediate_size", "inner_group_num", "hidden_dropout_prob",
        "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
        "vocab_size", "initializer_range")}
    google_config.update(hidden_act="gelu", net_structure_type=0, gap_size=0,
                         num_memory_blocks=0, down_scale_factor=1)
    (target / "albert_config.json").write_text(json.dumps(google_config))
    shutil.copy(source / "spiece.model", target / "30k-clean.model")


def write_electra_as_google(target, with_config):
    """google-research/electra names: the discriminator under electra/, plus the generator and
    heads a pretraining checkpoint carries (the import must skip them)."""
    source = FAMILIES / "electra_discriminator"
    hf = read_safetensors(str(source / "model.safetensors"))
    config = json.loads((source / "config.json").read_text())
    t = embeddings(hf, "electra", "electra")
    linear(t, "electra/embeddings_project", pair(hf, "electra.embeddings_project"))
    for i in range(config["num_hidden_layers"]):
        g, h = f"electra/encoder/layer_{i}", f"electra.encoder.layer.{i}"
        for part in ("query", "key", "value"):
            linear(t, f"{g}/attention/self/{part}", pair(hf, f"{h}.attention.self.{part}"))
        linear(t, f"{g}/attention/output/dense", pair(hf, f"{h}.attention.output.dense"))
        norm(t, f"{g}/attention/output/LayerNorm", pair(hf, f"{h}.attention.output.LayerNorm"))
        linear(t, f"{g}/intermediate/dense", pair(hf, f"{h}.intermediate.dense"))
        linear(t, f"{g}/output/dense", pair(hf, f"{h}.output.dense"))
        norm(t, f"{g}/output/LayerNorm", pair(hf, f"{h}.output.LayerNorm"))
    linear(t, "discriminator_predictions/dense", pair(hf, "discriminator_predictions.dense"))
    linear(t, "discriminator_predictions/dense_1",
           pair(hf, "discriminator_predictions.dense_prediction"))
    t["generator/encoder/layer_0/output/dense/kernel"] = np.zeros((48, 32), np.float32)
    t["generator_predictions/output_bias"] = np.zeros(config["vocab_size"], np.float32)
    t["electra/encoder/layer_0/output/dense/kernel/adam_m"] = np.zeros((48, 32), np.float32)
    os.makedirs(target)
    save_tf1(t, os.path.join(target, "electra_tiny"))
    (target / "checkpoint").write_text('model_checkpoint_path: "electra_tiny"\n')
    shutil.copy(source / "vocab.txt", target)
    if with_config:  # what transformers' converter asks for beside the checkpoint
        shutil.copy(source / "config.json", target)


def assert_matches_reference(encoder, name):
    ref = reference(name)
    for batch in ("singles", "pairs"):
        inputs = batch_inputs(ref, batch)
        mask = inputs["input_mask"].astype(bool)
        got = encoder(inputs)["sequence_output"].numpy()
        np.testing.assert_allclose(got[mask], ref[f"{batch}_sequence_output"][mask], atol=1e-4,
                                   err_msg=f"{name} {batch}")


def test_google_albert_checkpoint_imports_exactly(tmp_path):
    target = tmp_path / "albert_base"
    write_albert_as_google(target)
    assert checkpoints.detect_format(str(target)) == "google"
    encoder = bk.BertEncoder.from_pretrained(str(target))
    arch = encoder.architecture
    assert (arch["embedding_size"], arch["num_layer_groups"], arch["activation"]) == (
        16, 2, "gelu_approximate")
    assert_matches_reference(encoder, "albert")
    hf_encoder = bk.BertEncoder.from_pretrained(str(FAMILIES / "albert"))
    np.testing.assert_array_equal(encoder.token_embedding.embeddings.numpy(),
                                  hf_encoder.token_embedding.embeddings.numpy())
    tokenizer = load_tokenizer(str(target))  # Google ships 30k-clean.model, not spiece.model
    assert type(tokenizer).__name__ == "SentencePieceTokenizer"
    ref = reference("albert")
    got = tokenizer.tokenize(TEXTS)
    for i, text in enumerate(TEXTS):
        np.testing.assert_array_equal(got[i].numpy(), ref[f"text_{i}"], err_msg=repr(text))


@pytest.mark.parametrize("with_config", [True, False])
def test_google_electra_checkpoint_imports_exactly(tmp_path, with_config):
    target = tmp_path / "electra_small"
    write_electra_as_google(target, with_config)
    assert checkpoints.detect_format(str(target)) == "google"
    if with_config:
        encoder = bk.BertEncoder.from_pretrained(str(target))
    else:  # shapes alone give 64-wide heads (1 for this 32-wide model); say the count instead
        assert checkpoints.read_encoder_config(str(target))["num_heads"] == 1
        encoder = bk.BertEncoder.from_pretrained(str(target), num_heads=4)
    arch = encoder.architecture
    assert (arch["embedding_size"], arch["hidden_size"], arch["use_pooler"], arch["activation"]) \
        == (16, 32, False, "gelu")
    assert_matches_reference(encoder, "electra_discriminator")


def test_a_tf_checkpoint_of_no_known_dialect_is_refused_by_name(tmp_path):
    save_tf1({"dense/kernel": np.zeros((2, 2), np.float32)}, str(tmp_path / "model.ckpt"))
    with pytest.raises(ValueError, match="not one of Google's BERT, ALBERT or ELECTRA"):
        bk.BertEncoder.from_pretrained(str(tmp_path))


def test_google_albert_with_a_missing_group_names_the_tensor(tmp_path):
    target = tmp_path / "albert"
    write_albert_as_google(target)
    config = json.loads((target / "albert_config.json").read_text())
    config["num_hidden_groups"] = 3
    (target / "albert_config.json").write_text(json.dumps(config))
    with pytest.raises(checkpoints.CheckpointError, match="group_2/inner_group_0"):
        bk.BertEncoder.from_pretrained(str(target))
