"""Span decoding on hand-made logits: best span, length limit, context only, null answer,
offsets."""

import numpy as np
import pytest

from bert_keras.tasks.span_qa.decoding import decode_answers, window_candidates

# Window: [CLS] who sat ? [SEP] the  cat  sat  on   the  mat  .    [SEP] [PAD]
#          0    1   2   3  4    5    6    7    8    9    10   11   12    13
CONTEXT = "The cat sat on the mat."
STARTS = np.array([[-1, -1, -1, -1, -1, 0, 4, 8, 12, 15, 19, 22, -1, -1]])
ENDS = np.array([[-1, -1, -1, -1, -1, 3, 7, 11, 14, 18, 22, 23, -1, -1]])


def logits(start_at, end_at, value=5.0, cls=0.0):
    start = np.zeros((1, 14))
    end = np.zeros((1, 14))
    start[0, 0], end[0, 0] = cls, cls
    for i, v in start_at.items():
        start[0, i] = v
    for i, v in end_at.items():
        end[0, i] = v
    return start, end


def test_best_span_and_character_offsets():
    start, end = logits({6: 5.0}, {7: 5.0})
    answer = decode_answers(start, end, [0], STARTS, ENDS, [CONTEXT])[0]
    assert answer["text"] == "cat sat"
    assert (answer["start_char"], answer["end_char"]) == (4, 11)
    assert CONTEXT[answer["start_char"]:answer["end_char"]] == answer["text"]
    assert answer["score"] == pytest.approx(10.0)
    assert answer["n_best"][0]["text"] == "cat sat"
    assert sum(c["probability"] for c in answer["n_best"]) == pytest.approx(1.0)


def test_max_answer_length():
    # The best pair (5, 10) spans 6 tokens; with max_answer_length=3 the best valid span wins.
    start, end = logits({5: 6.0, 9: 3.0}, {10: 6.0})
    answer = decode_answers(start, end, [0], STARTS, ENDS, [CONTEXT])[0]
    assert answer["text"] == "The cat sat on the mat"
    answer = decode_answers(start, end, [0], STARTS, ENDS, [CONTEXT], max_answer_length=3)[0]
    assert answer["text"] == "the mat"  # (9, 10): start 3 + end 6
    for candidate in answer["n_best"]:
        assert len(candidate["text"].split()) <= 3


def test_spans_touching_the_question_or_separators_are_rejected():
    # Highest logits on question tokens, [SEP] and padding: none of them may be used.
    start, end = logits({2: 50.0, 4: 40.0, 6: 1.0}, {3: 50.0, 12: 40.0, 13: 40.0, 6: 1.0})
    answer = decode_answers(start, end, [0], STARTS, ENDS, [CONTEXT])[0]
    assert answer["text"] == "cat"
    for score, s, e in window_candidates(start[0], end[0], STARTS[0], ENDS[0]):
        assert 5 <= s <= e <= 11
    # A start on a question token with an end in the context is rejected too.
    start, end = logits({3: 50.0, 5: 1.0}, {5: 1.0, 6: 0.5})
    assert decode_answers(start, end, [0], STARTS, ENDS, [CONTEXT])[0]["text"] == "The"


def test_no_answer_threshold():
    start, end = logits({6: 2.0}, {6: 2.0}, cls=3.0)  # null 6.0 vs best span 4.0
    v1 = decode_answers(start, end, [0], STARTS, ENDS, [CONTEXT])[0]
    assert v1["text"] == "cat"  # SQuAD 1.1: always an answer
    v2 = decode_answers(start, end, [0], STARTS, ENDS, [CONTEXT], allow_no_answer=True)[0]
    assert v2["text"] == "" and v2["start_char"] == -1
    assert v2["null_score"] == pytest.approx(6.0)
    assert "" in [c["text"] for c in v2["n_best"]]
    # null - best = 2.0: a threshold above it keeps the span, one below drops it.
    kept = decode_answers(start, end, [0], STARTS, ENDS, [CONTEXT], allow_no_answer=True,
                          null_score_diff_threshold=2.5)[0]
    assert kept["text"] == "cat"
    dropped = decode_answers(start, end, [0], STARTS, ENDS, [CONTEXT], allow_no_answer=True,
                             null_score_diff_threshold=1.5)[0]
    assert dropped["text"] == ""


def test_windows_of_one_example_and_max_context():
    # Two windows of one example; the null score is the minimum over windows; the span in
    # window 1 starts at a token that window 1 does not give max context, so window 0 wins.
    start = np.concatenate([logits({6: 2.0}, {})[0], logits({7: 9.0}, {})[0]])
    end = np.concatenate([logits({}, {6: 2.0})[1], logits({}, {7: 9.0})[1]])
    start[0, 0] = end[0, 0] = 1.0
    start[1, 0] = end[1, 0] = 4.0
    start[1, 5:7] = -20.0  # window 1's only good span is (7, 7): start 9 + end 9
    max_context = np.ones((2, 14), bool)
    max_context[1, 7] = False
    answers = decode_answers(start, end, [1, 1], np.repeat(STARTS, 2, 0), np.repeat(ENDS, 2, 0),
                             ["unused", CONTEXT], token_is_max_context=max_context,
                             allow_no_answer=True)
    assert answers[0]["text"] == "" and answers[0]["n_best"] == []  # no windows
    assert answers[1]["null_score"] == pytest.approx(2.0)
    assert answers[1]["text"] == "cat"


def test_byte_offsets_and_non_ascii_text():
    context = "Zoë lives here"
    # [CLS] q [SEP] zoë lives here [SEP]; byte offsets: "Zoë" is 4 bytes.
    starts_b = np.array([[-1, -1, -1, 0, 5, 11, -1]])
    ends_b = np.array([[-1, -1, -1, 4, 10, 15, -1]])
    start = np.array([[0, 0, 0, 3.0, 0, 0, 0]])
    end = np.array([[0, 0, 0, 0, 3.0, 0, 0]])
    answer = decode_answers(start, end, [0], starts_b, ends_b, [context], offsets="byte")[0]
    assert answer["text"] == "Zoë lives"
    starts_c = np.array([[-1, -1, -1, 0, 4, 10, -1]])
    ends_c = np.array([[-1, -1, -1, 3, 9, 14, -1]])
    assert decode_answers(start, end, [0], starts_c, ends_c, [context])[0]["text"] == "Zoë lives"


def test_bad_shapes_name_the_array():
    start, end = logits({6: 1.0}, {6: 1.0})
    with pytest.raises(ValueError, match="token_to_char_end"):
        decode_answers(start, end, [0], STARTS, ENDS[:, :5], [CONTEXT])
    with pytest.raises(ValueError, match="example_index"):
        decode_answers(start, end, [3], STARTS, ENDS, [CONTEXT])
