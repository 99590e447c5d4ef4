"""A classifier with attention pooling and a deeper head, exported by `bk.export_model` and
served in a process without this project: its probabilities are the Python model's."""

import keras
import numpy as np
import pytest

import bert_keras as bk
from bert_keras.serving import export
from bert_keras.text.tokenizer import BertTokenizer

from export_harness import _enc, _outputs, _texts, run_client  # tests/support

TEXTS = ["In the beginning was the Word.", "Jesus wept.", "", "word " * 300]


def classifier(pooling):
    """A tiny classifier over the bundled vocab: a random encoder whose tokens' rows differ
    (those of the random transformers fixtures are nearly one row, alike under any pooling)."""
    keras.utils.set_random_seed(0)
    tokenizer = BertTokenizer(str(bk.assets.path("vocab.txt")), lower_case=True)
    encoder = bk.BertEncoder(vocab_size=tokenizer.vocab_size, num_layers=1, hidden_size=16,
                             num_heads=2, intermediate_size=32, max_positions=32)
    model = bk.BertClassifier(encoder, num_classes=3, pooling=pooling, head_hidden_layers=1,
                              labels=["a", "b", "c"],
                              preprocessor=bk.TextPreprocessor(tokenizer, seq_length=16))
    # Head weights of a trained size (from 0.02 every text's logits are nearly 0), so that
    # the pooling shows in the answers.
    rng = np.random.default_rng(0)
    for variable in model.classification_head.weights:
        variable.assign(rng.normal(scale=0.5, size=variable.shape).astype("float32"))
    return model


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    model = classifier("attention")
    kernel = model.pooling_layer.score.kernel  # away from its zero start (mean pooling)
    kernel.assign(np.random.default_rng(0).normal(size=kernel.shape).astype("float32"))
    path = bk.export_model(model, str(tmp_path_factory.mktemp("saved")), "pooled")
    return model, path


def test_served_probabilities_equal_the_python_models(tmp_path, exported):
    model, path = exported
    meta = export.read_metadata(path)
    assert meta["task"] == "classification" and meta["labels"] == ["a", "b", "c"]
    requests = {path: [["serving_default", {"text": _enc(np.array(TEXTS, dtype=object))}]]}
    results = run_client(tmp_path, [path], requests)["exports"][path]
    mine = [r for r in results if not r["warmup"]]
    assert len(mine) == 1
    out = _outputs(mine[0])
    texts = _texts(mine[0]["inputs"], "text")
    logits = model.predict(texts, verbose=0).astype(np.float64)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    np.testing.assert_allclose(out["probabilities"], probs, atol=1e-5)
    np.testing.assert_array_equal(out["label_ids"], probs.argmax(-1))
    # the attention pooling is not the mean: a mean-pooled copy answers otherwise
    mean = classifier("mean")  # the same encoder and head weights (the same seed)
    assert np.abs(mean.predict(texts, verbose=0) - logits).max() > 0.1
