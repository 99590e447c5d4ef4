"""Every task type's export served without this project, checked against the Keras model."""

import numpy as np
import pytest
import tensorflow as tf

from bert_keras import task_features as features
from bert_keras.data.finetuning import batching
from bert_keras.serving import export
from bert_keras.tasks.registry import get_task
from bert_keras.tasks.span_qa import answer_inputs
from bert_keras.tasks.span_qa import featurizer as spans
from bert_keras.tasks.span_qa.reader import SpanExample
from bert_keras.tasks.tagging.reader import TaggingExample
from bert_keras.text.preprocessor import BertPreprocessor

from export_harness import SEQ, _keras_inputs, _outputs, _texts


@pytest.mark.slow
def test_every_model_type_served_without_project(task_type_export, served_task_type_exports):
    """What each task type serves means what its Keras model predicts (the long, empty and
    malformed requests of conftest's served_task_type_exports included); that every answer
    equals the model's serving function is the task-type contract's
    (tests/tasks/test_task_type_contract.py)."""
    exported = {task: task_type_export(task) for task in CHECKS}
    tokenizer = exported["encoder"][1]
    # Versions: the next free integer; a taken version is refused.
    assert export.next_version(task_type_export.base / "encoder") == 2
    with pytest.raises(FileExistsError):
        model, _, info, _ = exported["encoder"]
        export.export_saved_model(model, tokenizer, info, task_type_export.base, "encoder",
                                  version=1)
    for task, (model, tokenizer, info, _) in exported.items():
        for r in served_task_type_exports[task]:
            if r["signature"] != "serving_default":
                _outputs(r)
                continue
            out = _outputs(r)
            fields = get_task(info["task"]).serving_text_fields(info)
            texts = [_texts(r["inputs"], f) for f in fields]
            CHECKS[task](model, tokenizer, texts, out, info)


def _check_tagging(model, tokenizer, texts, out, info):
    # Every word, a long text's too, tagged as predicting on the words does
    # (`tagging_features`' rows of seq_length tokens).
    (text,) = texts
    for b, source in enumerate(text):
        source = source.decode("utf-8", "replace")
        valid = out["tag_ids"][b] >= 0
        assert not valid[valid.sum():].any() and all(out["tags"][b][~valid] == b"")
        words = [w.decode() for w in out["tokens"][b][valid]]
        assert [source[s:e] for s, e in zip(out["token_starts"][b][valid],
                                            out["token_ends"][b][valid])] == words
        if not words:
            continue
        rows = features.tagging_features([TaggingExample(words)], tokenizer, SEQ)
        logits = batching.predict(model, rows, 8, token_outputs=True)
        (want,) = features.word_predictions([row.argmax(-1) for row in logits],
                                            rows["word_index"], rows["num_words"],
                                            example_index=rows["example_index"])
        assert out["tag_ids"][b][valid].tolist() == want.tolist()


def _check_span_qa(model, tokenizer, texts, out, info):
    # The best span over every window of a long context, as fine-tuning scores it
    # (`span_features`' windows, `decode_answers`' rules).
    question, context = ([t.decode("utf-8", "replace") for t in x] for x in texts)
    examples = [SpanExample(str(i), q, c, []) for i, (q, c) in enumerate(zip(question, context))]
    rows = spans.span_features(examples, tokenizer, SEQ, 128, SEQ // 2)
    for b, want in enumerate(answer_inputs.best_answers(model, rows, context)):
        assert out["answer"][b].decode() == want["text"]
        assert [out["answer_start"][b], out["answer_end"][b]] == [want["start_char"],
                                                                  want["end_char"]]
        if want["text"]:
            assert out["score"][b] == pytest.approx(want["score"], abs=1e-4)


def _check_pretraining(model, tokenizer, texts, out, info):
    (text,) = texts
    positions = out["mask_positions"]
    assert positions.shape[0] == len(text)
    pre = BertPreprocessor(tokenizer, seq_length=SEQ, pad_to_longest=True)
    for b, t in enumerate(text):
        valid = positions[b][positions[b] >= 0]
        if b"[MASK]" not in t:
            assert valid.size == 0 and all(out["top_k_tokens"][b].ravel() == b"")
            continue
        ids = []  # the text's pieces with the [MASK] id where "[MASK]" is written
        for i, part in enumerate(t.decode().split("[MASK]")):
            ids += ([tokenizer.mask_id] if i else []) + tokenizer.tokenize([part]).to_list()[0]
        x = pre.pack([tf.ragged.constant([ids], tf.int32)])
        np.testing.assert_array_equal(valid,
                                      np.flatnonzero(x["input_word_ids"][0] == tokenizer.mask_id))
        x["masked_lm_positions"] = tf.constant([valid], tf.int32)
        want = tf.nn.softmax(model(x, training=False)["masked_lm"]).numpy()[0]
        k = out["top_k_ids"].shape[-1]
        for p in range(valid.size):
            top = np.argsort(-want[p])[:k]
            np.testing.assert_allclose(out["top_k_scores"][b][p], want[p][top], atol=1e-5)
            assert [tokenizer.vocab[i].encode() for i in out["top_k_ids"][b][p]] == list(
                out["top_k_tokens"][b][p])


def _check_encoder(model, tokenizer, texts, out, info):
    x = _keras_inputs(tokenizer, texts[0])
    want = model(x, training=False)
    np.testing.assert_allclose(out["pooled_output"], want["pooled_output"], atol=1e-5)
    np.testing.assert_array_equal(out["input_mask"], x["input_mask"])


def _check_multi_label(model, tokenizer, texts, out, info):
    probs = tf.sigmoid(model(_keras_inputs(tokenizer, texts[0]), training=False)).numpy()
    np.testing.assert_allclose(out["probabilities"], probs, atol=1e-5)
    np.testing.assert_array_equal(out["label_ids"], (probs >= 0.5).astype(np.int32))
    names = np.array(info["labels"])
    assert [s.decode() for s in out["labels"]] == [",".join(names[p >= 0.5]) for p in probs]


def _check_regression(model, tokenizer, texts, out, info):
    want = model(_keras_inputs(tokenizer, texts[0]), training=False).numpy()
    np.testing.assert_allclose(out["scores"], want, atol=1e-5)


CHECKS = {"tagging": _check_tagging, "span_qa": _check_span_qa, "pretraining": _check_pretraining,
          "encoder": _check_encoder, "multi_label": _check_multi_label,
          "regression": _check_regression}


# -- tools ------------------------------------------------------------------------------------
