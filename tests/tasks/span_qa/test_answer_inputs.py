"""A span-QA model fit and evaluated on questions, contexts and SQuAD answers, answering
questions with `answer`: checked against the families' reference tokenizers (tokenizers'
tokenizer.json) and against what transformers answered for the fine-tuned fixtures."""

import json
import pathlib

import numpy as np
import pytest
import tokenizers

import bert_keras as bk
from bert_keras.tasks.span_qa import answer_inputs

FAMILIES = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "families"
QUESTIONS = ["Who wept?", "Where did he go?", "Who created the earth?", "What is naïve?"]
CONTEXTS = ["Jesus wept. Then Lazarus came out of the tomb.",
            "He went up to Jerusalem, to the temple of the LORD.",
            "In the beginning, God created the heavens and the earth.",
            "Café naïve résumé! It is a word with accents."]
ANSWERS = [{"text": "Jesus", "answer_start": 0},
           {"text": ["Jerusalem", "the temple"], "answer_start": [14, 28]},  # the first trains
           {"text": "God", "answer_start": 18},
           {"text": [], "answer_start": []}]  # no answer: [CLS]


def reference_rows(name):
    """Ids and the answers' first / last token by the family's reference tokenizer (pairs
    packed as transformers packs them; 0, [CLS], for no answer)."""
    tokenizer = tokenizers.Tokenizer.from_file(str(FAMILIES / name / "tokenizer.json"))
    encodings = [tokenizer.encode(q, c) for q, c in zip(QUESTIONS, CONTEXTS)]
    width = max(len(e.ids) for e in encodings)
    x = {key: np.zeros((len(encodings), width), "int32")
         for key in ("input_word_ids", "input_mask", "input_type_ids")}
    starts, ends = [], []
    for row, (e, answer) in enumerate(zip(encodings, ANSWERS)):
        x["input_word_ids"][row, :len(e.ids)] = e.ids
        x["input_mask"][row, :len(e.ids)] = 1
        x["input_type_ids"][row, :len(e.ids)] = e.type_ids
        text = answer["text"] if isinstance(answer["text"], str) else (answer["text"] or [""])[0]
        start = answer["answer_start"]
        start = start if isinstance(start, int) else (start or [0])[0]
        inside = [t for t, ((a, b), seq) in enumerate(zip(e.offsets, e.sequence_ids))
                  if text and seq == 1 and a < start + len(text) and b > start]
        starts.append(inside[0] if inside else 0)
        ends.append(inside[-1] if inside else 0)
    return x, {"start_positions": np.array(starts), "end_positions": np.array(ends)}


@pytest.mark.parametrize("name", ["bert_qa", "roberta_qa", "albert_qa"])
def test_answers_are_scored_at_the_tokens_the_reference_tokenizer_puts_them_on(name):
    model = bk.BertSpanQA.from_pretrained(str(FAMILIES / name))
    x, y = reference_rows(name)
    assert y["start_positions"][3] == 0 and y["start_positions"][:3].min() > 0
    rows, _ = answer_inputs.span_rows(model.preprocessor, (QUESTIONS, CONTEXTS), ANSWERS, "QA")
    for i, ids in enumerate(rows["input_word_ids"]):
        assert ids.tolist() == x["input_word_ids"][i, :x["input_mask"][i].sum()].tolist()
    for key in y:
        assert rows[key].tolist() == y[key].tolist()
    want = model.evaluate(x, y, batch_size=4, verbose=0, return_dict=True)
    got = model.evaluate((QUESTIONS, CONTEXTS), ANSWERS, batch_size=4, verbose=0,
                         return_dict=True)
    assert got == pytest.approx(want, rel=1e-4)  # float32 sums over other padding


@pytest.mark.parametrize("name", ["roberta_qa", "distilbert_qa", "xlm_roberta_qa"])
def test_answer_gives_what_transformers_answered(name):
    answers = json.loads((FAMILIES / name / "answers.json").read_text("utf-8"))
    model = bk.BertSpanQA.from_pretrained(str(FAMILIES / name))
    got = model.answer(([a["question"] for a in answers], [a["context"] for a in answers]),
                       max_answer_length=30)
    for want, answer in zip(answers, got):
        assert (answer["text"], answer["start_char"], answer["end_char"]) == (
            want["answer"], want["answer_start"], want["answer_end"])
        assert answer["score"] == pytest.approx(want["score"], abs=1e-4)


def test_fit_with_validation_split_long_contexts_in_windows_and_one_line_refusals():
    model = bk.BertSpanQA.from_pretrained(str(FAMILIES / "bert_qa"), seq_length=32)
    history = model.fit((QUESTIONS * 2, CONTEXTS * 2), ANSWERS * 2, batch_size=2, epochs=2,
                        validation_split=0.25, verbose=0)
    assert len(history.history["val_loss"]) == 2
    long = " ".join(CONTEXTS * 6)  # many windows of 32 tokens
    best = model.answer((["Who wept?"], [long]))[0]
    assert best["text"] and long[best["start_char"]:best["end_char"]] == best["text"]
    for answers, message in (
            (ANSWERS[:3], r"4 question\(s\) but 3 answer\(s\)"),
            ([{"text": "Jesus", "answer_start": 3}] + ANSWERS[1:],
             "answer 0, 'Jesus', is not at character 3 of its context"),
            ([{"span": "Jesus"}] + ANSWERS[1:], "an answer is a dict with 'text' and "
                                                 "'answer_start'"),
            ({"start_positions": np.ones(4), "end_positions": np.ones(4)},
             "the labels of raw questions and contexts are SQuAD answers")):
        with pytest.raises(ValueError, match=message):
            model.fit((QUESTIONS, CONTEXTS), answers, verbose=0)
    with pytest.raises(ValueError, match="questions and contexts go as a pair"):
        model.fit(CONTEXTS, ANSWERS, verbose=0)
