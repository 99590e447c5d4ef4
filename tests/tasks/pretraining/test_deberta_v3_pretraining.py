"""DeBERTa-v3's pretraining (issue 69): ELECTRA's replaced-token detection on a DeBERTa-v3
encoder with gradient-disentangled embedding sharing (GDES, `ElectraOptions.deberta_v3()`):
which loss trains which embeddings, the saved discriminator, the recipe flagfiles."""

import pathlib

import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras.tasks.pretraining.electra import ElectraOptions, ElectraPretrainer
from bert_keras.tasks.pretraining.objectives import OBJECTIVES
from bert_keras.training.pretraining_config import PretrainConfig

FLAGS = pathlib.Path(__file__).resolve().parents[3] / "flags"
V = 40
# The losses computed on the discriminator's outputs (detection, its masked LM, COCO-LM's).
DISCRIMINATOR_TERMS = ("discriminator_loss", "discriminator_mlm_loss", "corrective_loss")


def deberta_pretrainer(**options):
    """DeBERTa-v3's recipe on a 2-layer DeBERTa-v3 encoder whose 4 position buckets are below
    the batch's length (the log buckets matter)."""
    encoder = bk.BertEncoder.from_preset("deberta_v3_tiny", vocab_size=V, hidden_size=32,
                                         num_heads=2, intermediate_size=64, max_positions=16,
                                         position_buckets=4)
    return ElectraPretrainer(encoder, ElectraOptions.deberta_v3(), seed=0, **options)


def batch():
    rng = np.random.default_rng(0)
    mask = np.ones((2, 10), "int32")
    mask[1, 7:] = 0
    positions = np.array([[1, 3, 5], [2, 4, 0]], "int32")
    weights = (positions > 0).astype("float32")
    return {"input_word_ids": rng.integers(5, V, (2, 10)).astype("int32") * mask,
            "input_mask": mask, "input_type_ids": np.zeros((2, 10), "int32"),
            "masked_lm_positions": positions,
            "masked_lm_ids": (rng.integers(5, V, (2, 3)) * weights).astype("int32"),
            "masked_lm_weights": weights}


def test_the_recipe_is_deberta_v3s():
    model = deberta_pretrainer()
    generator, discriminator = model.generator, model.encoder
    assert generator.num_layers == 1 and discriminator.num_layers == 2  # half the depth
    assert generator.hidden_size == discriminator.hidden_size  # the same width
    assert generator.encoder_config.disentangled_attention == "c2p|p2c"
    # No absolute positions or token types: the token table and the embeddings' norm.
    assert [v.path for v in model.shared_embeddings()] == [
        "token_embedding/embeddings", "embeddings_layer_norm/gamma", "embeddings_layer_norm/beta"]
    assert model.curriculum_steps == 0 and model.sampling_temperature(training=True) == 1.0


@pytest.mark.parametrize("options", [{}, dict(discriminator_mlm_share=0.5),
                                     dict(corrective_weight=1.0)],
                         ids=["deberta_v3", "discriminator_mlm", "corrective_lm"])
def test_only_the_generator_trains_the_shared_embeddings(options):
    """GDES' gradient rule: every loss on the discriminator's outputs (its masked LM through
    the head tied to the token table included) reaches the deltas and never the generator's
    embeddings; the generator's masked LM reaches those and never the deltas."""
    model = deberta_pretrainer(**options)
    shared, deltas = model.shared_embeddings(), model.embedding_deltas
    x = batch()
    with tf.GradientTape(persistent=True) as tape:
        terms = model.loss_terms(x, model(x, training=True))
    discriminator_terms = [name for name in DISCRIMINATOR_TERMS if name in terms]
    assert len(discriminator_terms) == (2 if options else 1)
    for name in discriminator_terms:
        assert all(g is None for g in tape.gradient(terms[name], shared)), name
        token_delta = tape.gradient(terms[name], deltas)[0]
        assert np.abs(np.asarray(tf.convert_to_tensor(token_delta))).sum() > 0, name
    assert all(g is None for g in tape.gradient(terms["generator_loss"], deltas))
    token_table = tape.gradient(terms["generator_loss"], shared)[0]
    assert np.abs(np.asarray(tf.convert_to_tensor(token_table))).sum() > 0


def test_the_saved_discriminator_reads_generator_plus_delta(tmp_path):
    """A few training steps move both the generator's embeddings (its masked LM) and the
    deltas (detection); the encoder a run saves has their sum, and computes what the
    discriminator computed during training."""
    model = deberta_pretrainer()
    shared, deltas = model.shared_embeddings(), model.embedding_deltas
    initial = [np.asarray(v) for v in shared]
    x = batch()
    model.fit(tf.data.Dataset.from_tensors((x,)).repeat(3), verbose=0)
    trained = [np.asarray(v) for v in shared]
    offsets = [np.asarray(d) for d in deltas]
    assert not np.allclose(trained[0], initial[0]) and np.abs(offsets[0]).max() > 0
    inputs = {name: x[name] for name in ("input_word_ids", "input_mask", "input_type_ids")}
    during_training = np.asarray(model.discriminate(inputs, False)["sequence_output"])

    OBJECTIVES["electra"].final_encoder(model).save_pretrained(str(tmp_path))
    saved = bk.BertEncoder.from_pretrained(str(tmp_path))
    by_path = {v.path: np.asarray(v) for v in saved.weights}
    for v, table, offset in zip(shared, trained, offsets):
        np.testing.assert_allclose(by_path[v.path], table + offset, rtol=0, atol=1e-7)
    np.testing.assert_allclose(np.asarray(saved(inputs)["sequence_output"]), during_training,
                               atol=1e-5)


def read_flagfile(name):
    """{field: value} of flags/`name`, typed as PretrainConfig's fields."""
    from bert_keras.configs import option_types

    types = option_types(PretrainConfig)
    values = {}
    for line in (FLAGS / name).read_text().splitlines():
        if line.startswith("--"):
            key, _, value = line[2:].partition("=")
            values[key] = value.lower() == "true" if types[key] is bool else types[key](value)
    return values


@pytest.mark.parametrize("name", ["pretrain_deberta_v3_base.flags",
                                  "pretrain_deberta_v3_mini.flags"])
def test_the_flagfiles_are_the_recipe(name, tmp_path):
    options = read_flagfile(name)
    options.setdefault("train_text", "bert_keras/assets/web_bible_corpus.txt.gz")
    config = PretrainConfig.from_options(model_dir=str(tmp_path), **options)
    recipe = ElectraOptions.deberta_v3()
    assert config.objective_options.replace(start_temperature=None) == recipe
    assert config.curriculum_steps() == 0
    assert config.encoder.preset.startswith("deberta_v3_")
