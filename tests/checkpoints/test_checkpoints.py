"""Checkpoint import: parity with Hugging Face PyTorch on the real MiniLM, Google TF1 names,
errors."""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras import checkpoints
from bert_keras.checkpoints.google import save_google_checkpoint
from bert_keras.checkpoints.safetensors import read_safetensors

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures",
                       "minilm_reference.npz")


@pytest.fixture(scope="module")
def reference():
    return dict(np.load(FIXTURE))


@pytest.fixture(scope="module")
def minilm_encoder(minilm_dir):
    return bk.BertEncoder.from_pretrained(minilm_dir)


def inputs_of(reference, name):
    return {key: reference[f"{name}_{key}"]
            for key in ("input_word_ids", "input_mask", "input_type_ids")}


@pytest.mark.parametrize("batch", ["single", "pair"])
def test_huggingface_parity_on_real_minilm(minilm_encoder, reference, batch):
    outputs = minilm_encoder(inputs_of(reference, batch))
    mask = reference[f"{batch}_input_mask"].astype(bool)
    got = outputs["sequence_output"].numpy()[mask]  # Real tokens only: padding is undefined.
    want = reference[f"{batch}_sequence_output"][mask]
    assert np.abs(got - want).max() < 1e-4
    np.testing.assert_allclose(outputs["pooled_output"], reference[f"{batch}_pooled_output"],
                               atol=1e-4)


def test_config_read_from_huggingface(minilm_encoder):
    # The other fields (rotary positions, local attention, pre-norm, ...) are BERT's defaults.
    assert minilm_encoder.architecture == bk.EncoderConfig(
        vocab_size=30522, num_layers=6, hidden_size=384, num_heads=12, intermediate_size=1536,
        activation="gelu", dropout=0.1, attention_dropout=0.1, max_positions=512,
        type_vocab_size=2, layer_norm_epsilon=1e-12, initializer_range=0.02,
        embedding_size=None, num_layer_groups=None, position_offset=0, use_pooler=True,
    ).to_dict()


def write_as_google_tf1(minilm_dir, target):
    """Writes MiniLM's tensors under Google's TF1 names, independently of our name maps."""
    hf = read_safetensors(os.path.join(minilm_dir, "model.safetensors"))
    tensors = {
        "bert/embeddings/word_embeddings": hf["embeddings.word_embeddings.weight"],
        "bert/embeddings/token_type_embeddings": hf["embeddings.token_type_embeddings.weight"],
        "bert/embeddings/position_embeddings": hf["embeddings.position_embeddings.weight"],
        "bert/embeddings/LayerNorm/gamma": hf["embeddings.LayerNorm.weight"],
        "bert/embeddings/LayerNorm/beta": hf["embeddings.LayerNorm.bias"],
        "bert/pooler/dense/kernel": hf["pooler.dense.weight"].T,
        "bert/pooler/dense/bias": hf["pooler.dense.bias"],
        # A pretraining checkpoint also carries heads and optimizer state; import skips them.
        "cls/predictions/output_bias": np.zeros(30522, np.float32),
        "global_step": np.array(1000, np.int64),
    }
    for i in range(6):
        g, h = f"bert/encoder/layer_{i}", f"encoder.layer.{i}"
        for tf1, torch_name in [("attention/self/query", "attention.self.query"),
                                ("attention/self/key", "attention.self.key"),
                                ("attention/self/value", "attention.self.value"),
                                ("attention/output/dense", "attention.output.dense"),
                                ("intermediate/dense", "intermediate.dense"),
                                ("output/dense", "output.dense")]:
            tensors[f"{g}/{tf1}/kernel"] = hf[f"{h}.{torch_name}.weight"].T
            tensors[f"{g}/{tf1}/bias"] = hf[f"{h}.{torch_name}.bias"]
        for tf1, torch_name in [("attention/output/LayerNorm", "attention.output.LayerNorm"),
                                ("output/LayerNorm", "output.LayerNorm")]:
            tensors[f"{g}/{tf1}/gamma"] = hf[f"{h}.{torch_name}.weight"]
            tensors[f"{g}/{tf1}/beta"] = hf[f"{h}.{torch_name}.bias"]
    os.makedirs(target)
    names = sorted(tensors)
    tf.raw_ops.SaveV2(prefix=os.path.join(target, "bert_model.ckpt"), tensor_names=names,
                      shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(tensors[n]) for n in names])
    with open(os.path.join(minilm_dir, "config.json")) as f:
        hf_config = json.load(f)
    google_config = {k: v for k, v in hf_config.items() if k in (
        "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
        "intermediate_size", "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob",
        "max_position_embeddings", "type_vocab_size", "initializer_range")}
    with open(os.path.join(target, "bert_config.json"), "w") as f:
        json.dump(google_config, f)
    shutil.copy(os.path.join(minilm_dir, "vocab.txt"), target)


def test_google_tf1_names_import_to_identical_outputs(minilm_dir, reference, tmp_path):
    target = str(tmp_path / "google")
    write_as_google_tf1(minilm_dir, target)
    assert checkpoints.detect_format(target) == "google"
    google = bk.BertEncoder.from_pretrained(target)
    # Google's TF1 "gelu" is the tanh approximation: compare with the same weights from HF
    # under that activation, and with PyTorch's exact-GELU outputs at a looser tolerance.
    assert google.activation == "gelu_approximate"
    hf = bk.BertEncoder.from_pretrained(minilm_dir, activation="gelu_approximate")
    inputs = inputs_of(reference, "pair")
    np.testing.assert_array_equal(google(inputs)["sequence_output"], hf(inputs)["sequence_output"])
    mask = inputs["input_mask"].astype(bool)
    diff = google(inputs)["sequence_output"].numpy()[mask] - reference["pair_sequence_output"][mask]
    assert np.abs(diff).max() < 1e-2


def test_own_format_round_trip(minilm_encoder, reference, tmp_path):
    minilm_encoder.save_pretrained(str(tmp_path / "ours"))
    loaded = bk.BertEncoder.from_pretrained(str(tmp_path / "ours"))
    inputs = inputs_of(reference, "single")
    np.testing.assert_array_equal(minilm_encoder(inputs)["sequence_output"],
                                  loaded(inputs)["sequence_output"])
    # A standard safetensors file keyed by variable path (read by the reference package).
    from safetensors.numpy import load_file

    saved = load_file(str(tmp_path / "ours" / "model.safetensors"))
    np.testing.assert_array_equal(saved["transformer_layer_5/attention/qkv/kernel"],
                                  minilm_encoder.get_layer("transformer_layer_5").attention.qkv.kernel.numpy())
    assert len(saved) == len(minilm_encoder.weights)


def test_own_format_missing_tensor_is_named(tmp_path):
    from bert_keras.checkpoints.safetensors import read_safetensors, write_safetensors

    encoder = bk.BertEncoder.from_preset("bert_tiny", vocab_size=64)
    encoder.save_pretrained(str(tmp_path))
    tensors = read_safetensors(str(tmp_path / "model.safetensors"))
    del tensors["pooler/bias"]
    write_safetensors(str(tmp_path / "model.safetensors"), tensors)
    with pytest.raises(bk.CheckpointError, match=r"missing tensors \['pooler/bias'\]"):
        bk.BertEncoder.from_pretrained(str(tmp_path))


def test_google_writer_round_trip(tmp_path):
    encoder = bk.BertEncoder.from_preset("bert_tiny", vocab_size=64, activation="gelu_approximate")
    save_google_checkpoint(encoder, str(tmp_path))
    reader = tf.train.load_checkpoint(str(tmp_path / "bert_model.ckpt"))
    shapes = reader.get_variable_to_shape_map()
    assert shapes["bert/encoder/layer_1/attention/self/key/kernel"] == [128, 128]
    loaded = bk.BertEncoder.from_pretrained(str(tmp_path))
    for a, b in zip(encoder.weights, loaded.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def copy_hf_with(minilm_dir, target, edit):
    os.makedirs(target)
    for name in ("config.json", "vocab.txt"):
        shutil.copy(os.path.join(minilm_dir, name), target)
    tensors = read_safetensors(os.path.join(minilm_dir, "model.safetensors"))
    edit(tensors)
    from safetensors.numpy import save_file
    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()},
              os.path.join(target, "model.safetensors"))
    return target


def test_missing_tensor_is_named(minilm_dir, tmp_path):
    target = copy_hf_with(minilm_dir, str(tmp_path / "m"),
                          lambda t: t.pop("encoder.layer.3.attention.self.key.weight"))
    with pytest.raises(bk.CheckpointError,
                       match=r"missing tensors \['encoder.layer.3.attention.self.key.weight'\]"):
        bk.BertEncoder.from_pretrained(target)


def test_unused_tensor_is_named(minilm_dir, tmp_path):
    target = copy_hf_with(minilm_dir, str(tmp_path / "u"),
                          lambda t: t.update(
                              {"encoder.layer.6.output.dense.bias": np.zeros(384, np.float32)}))
    with pytest.raises(bk.CheckpointError,
                       match=r"unused tensors \['encoder.layer.6.output.dense.bias'\]"):
        bk.BertEncoder.from_pretrained(target)


def test_misshaped_tensor_is_named(minilm_dir, tmp_path):
    def shrink(t):
        name = "encoder.layer.2.intermediate.dense.weight"
        t[name] = t[name][:100]
    target = copy_hf_with(minilm_dir, str(tmp_path / "s"), shrink)
    with pytest.raises(bk.CheckpointError,
                       match=r"encoder.layer.2.intermediate.dense.weight: \(384, 100\)"):
        bk.BertEncoder.from_pretrained(target)


def test_not_a_checkpoint_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        bk.BertEncoder.from_pretrained(str(tmp_path / "nowhere"))
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(ValueError, match="not a BERT checkpoint directory"):
        bk.BertEncoder.from_pretrained(str(tmp_path))


def test_truncated_safetensors_is_a_clear_error(minilm_dir, tmp_path):
    target = tmp_path / "t"
    target.mkdir()
    shutil.copy(os.path.join(minilm_dir, "config.json"), target)
    (target / "model.safetensors").write_bytes(b"\xff" * 16)
    with pytest.raises(ValueError, match="not a safetensors file"):
        bk.BertEncoder.from_pretrained(str(target))


def test_old_huggingface_layer_norm_names_load(minilm_dir, minilm_encoder, reference, tmp_path):
    def rename(tensors):
        for name in [n for n in tensors if "LayerNorm" in n]:
            new = name.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias",
                                                                              "LayerNorm.beta")
            tensors[new] = tensors.pop(name)
    target = copy_hf_with(minilm_dir, str(tmp_path / "old"), rename)
    inputs = inputs_of(reference, "single")
    np.testing.assert_array_equal(bk.BertEncoder.from_pretrained(target)(inputs)["pooled_output"],
                                  minilm_encoder(inputs)["pooled_output"])
