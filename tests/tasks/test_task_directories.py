"""A task directory (`bk.save_task`: fine-tuning's best/, pretraining's final/) holds the
model's weights and not its optimizer's state, which stays with the model (and the run's
checkpoints, which resume it)."""

import numpy as np

import bert_keras as bk
from bert_keras import assets


def test_a_task_directory_holds_the_weights_without_the_optimizer_state(tiny_encoder, tmp_path):
    tokenizer = bk.BertTokenizer(assets.path("vocab.txt"), lower_case=True)
    model = bk.BertClassifier(tiny_encoder(vocab_size=tokenizer.vocab_size), num_classes=2)
    optimizer = model.optimizer
    optimizer.build(model.trainable_variables)  # the slots of a fit: AdamW's 2 a weight
    bk.save_task(str(tmp_path / "best"), model, tokenizer, "classification", 16,
                 labels=["a", "b"])
    weight_bytes = sum(np.asarray(w).nbytes for w in model.weights)
    size = (tmp_path / "best" / "model.keras").stat().st_size
    assert size / weight_bytes < 1.2, (size, weight_bytes)  # 3.0 with the optimizer's state
    assert model.optimizer is optimizer  # the model trains on with its state
    loaded, _, _ = bk.load_task(str(tmp_path / "best"))
    ids = {"input_word_ids": np.arange(2, 18, dtype="int32").reshape(2, 8),
           "input_mask": np.ones((2, 8), "int32"), "input_type_ids": np.zeros((2, 8), "int32")}
    np.testing.assert_allclose(loaded(ids), model(ids), atol=1e-6)
