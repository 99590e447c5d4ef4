"""Metrics against hand-computed values and the official definitions."""

import math

import numpy as np
import pytest

from bert_keras import metrics as M

# ---------------------------------------------------------------- classification

# TP=2 (0, 2), FP=1 (3), FN=2 (1, 6), TN=3 (4, 5, 7).
BIN_TRUE = [1, 1, 1, 0, 0, 0, 1, 0]
BIN_PRED = [1, 0, 1, 1, 0, 0, 0, 0]


def test_accuracy():
    assert M.accuracy([1, 0, 1, 1], [1, 1, 1, 0]) == 0.5
    assert M.accuracy(["a", "b"], ["a", "b"]) == 1.0
    with pytest.raises(ValueError, match="equal length"):
        M.accuracy([1, 0], [1])
    with pytest.raises(ValueError, match="empty"):
        M.accuracy([], [])


def test_binary_f1_closed_form():
    tp, fp, fn = 2, 1, 2
    assert M.f1(BIN_TRUE, BIN_PRED) == pytest.approx(2 * tp / (2 * tp + fp + fn))  # 4/7
    assert M.binary_f1(BIN_TRUE, BIN_PRED) == pytest.approx(4 / 7)
    # pos_label picks the class: F1 of class 0 has TP=3, FP=2, FN=1.
    assert M.f1(BIN_TRUE, BIN_PRED, pos_label=0) == pytest.approx(6 / 9)
    assert M.f1(["y", "n", "y"], ["y", "y", "y"], pos_label="y") == pytest.approx(0.8)
    # No positive anywhere: 0.0 (scikit-learn's zero_division default).
    assert M.f1([0, 0], [0, 0]) == 0.0


def test_macro_and_micro_f1():
    y_true = [0, 0, 1, 1, 2, 2]
    y_pred = [0, 1, 1, 1, 2, 0]
    per_class = [2 * 1 / (2 * 1 + 1 + 1), 2 * 2 / (2 * 2 + 1 + 0), 2 * 1 / (2 * 1 + 0 + 1)]
    assert M.f1(y_true, y_pred, average="macro") == pytest.approx(np.mean(per_class))
    assert M.macro_f1(y_true, y_pred) == pytest.approx((0.5 + 0.8 + 2 / 3) / 3)
    assert M.f1(y_true, y_pred, average="micro") == pytest.approx(M.accuracy(y_true, y_pred))
    # A label seen only in the predictions counts in the macro mean (as sklearn).
    assert M.macro_f1([0, 0], [0, 1]) == pytest.approx((2 / 3 + 0.0) / 2)
    with pytest.raises(ValueError, match="'weighted'"):
        M.f1(y_true, y_pred, average="weighted")


def test_mcc_binary_closed_form():
    tp, tn, fp, fn = 2, 3, 1, 2
    expected = (tp * tn - fp * fn) / math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    assert M.matthews_corrcoef(BIN_TRUE, BIN_PRED) == pytest.approx(expected)
    # scikit-learn's documented example.
    assert M.matthews_corrcoef([1, 1, 1, -1], [1, -1, 1, 1]) == pytest.approx(-1 / 3)
    assert M.matthews_corrcoef([0, 1, 0, 1], [0, 1, 0, 1]) == pytest.approx(1.0)
    assert M.matthews_corrcoef([0, 1, 0, 1], [1, 0, 1, 0]) == pytest.approx(-1.0)
    assert M.matthews_corrcoef([0, 1, 0, 1], [1, 1, 1, 1]) == 0.0  # constant prediction


def test_mcc_multiclass_equals_one_hot_correlation():
    # Gorodkin's R_K is the correlation of the one-hot indicator matrices.
    rng = np.random.default_rng(0)
    y_true = rng.integers(0, 4, size=50)
    y_pred = np.where(rng.random(50) < 0.6, y_true, rng.integers(0, 4, size=50))
    x = np.eye(4)[y_true]
    y = np.eye(4)[y_pred]
    x -= x.mean(axis=0)
    y -= y.mean(axis=0)
    expected = np.sum(x * y) / np.sqrt(np.sum(x * x) * np.sum(y * y))
    assert M.matthews_corrcoef(y_true, y_pred) == pytest.approx(expected)
    assert M.matthews_corrcoef(list("abcab"), list("abcab")) == pytest.approx(1.0)


# ---------------------------------------------------------------- regression


def test_pearson_by_hand():
    # dx = [-2,-1,0,1,2], dy = [-2,0,1,0,1]: sum dxdy = 6, sum dx^2 = 10, sum dy^2 = 6.
    assert M.pearson([1, 2, 3, 4, 5], [2, 4, 5, 4, 5]) == pytest.approx(6 / math.sqrt(60))
    assert M.pearson([1, 2, 3], [-2, -4, -6]) == pytest.approx(-1.0)
    assert math.isnan(M.pearson([1, 1, 1], [1, 2, 3]))


def test_rankdata_average_ties():
    np.testing.assert_allclose(M.rankdata([0, 2, 3, 2]), [1, 2.5, 4, 2.5])  # scipy docs
    np.testing.assert_allclose(M.rankdata([10, 20, 20, 20, 5]), [2, 4, 4, 4, 1])


def test_spearman_with_ties():
    # ranks x = [1, 2.5, 2.5, 4], y = [1, 3, 2, 4]: sum dxdy = 4.5, 4.5, 5.
    assert M.spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / math.sqrt(4.5 * 5))
    assert M.spearman([1, 2, 3, 4], [1, 8, 27, 1000]) == pytest.approx(1.0)  # monotone
    assert M.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)


def test_glue_metrics_names_per_task():
    assert set(M.glue_metrics("cola", [0, 1, 1], [0, 1, 0])) == {"mcc"}
    assert set(M.glue_metrics("glue/stsb", [0.1, 2.0, 3.5], [0.0, 2.5, 3.0])) == {"pearson",
                                                                                  "spearman"}
    for task in ("mrpc", "qqp"):
        out = M.glue_metrics(task, BIN_TRUE, BIN_PRED)
        assert out == {"accuracy": pytest.approx(5 / 8), "f1": pytest.approx(4 / 7)}
    for task in ("sst2", "mnli", "qnli", "rte", "wnli", "mnli_mismatched"):
        assert set(M.glue_metrics(task, [0, 1], [0, 1])) == {"accuracy"}
    assert M.glue_metrics("cola", BIN_TRUE, BIN_PRED)["mcc"] == pytest.approx(
        M.matthews_corrcoef(BIN_TRUE, BIN_PRED))
    with pytest.raises(ValueError, match="'squad'"):
        M.glue_metrics("squad", [0], [0])


# ---------------------------------------------------------------- SQuAD


@pytest.mark.parametrize(
    "text,normalized",
    [
        ("The  Quick, brown fox!", "quick brown fox"),
        ("an apple", "apple"),
        ("A cat and THE dog", "cat and dog"),
        ("Theater anthem", "theater anthem"),  # articles only as whole words
        ("(a) answer", "answer"),  # punctuation removed before articles
        ("U.S.A.", "usa"),
        ("the-end", "theend"),
        ("\tNew\n York  ", "new york"),
        ("the", ""),
        ("", ""),
    ],
)
def test_squad_normalize(text, normalized):
    assert M.squad_normalize_answer(text) == normalized


def test_squad_exact_match():
    assert M.squad_exact_match("Denver Broncos", ["Broncos", "denver broncos."]) == 1.0
    assert M.squad_exact_match("the Denver Broncos", "Denver Broncos") == 1.0
    assert M.squad_exact_match("Denver", ["Denver Broncos"]) == 0.0
    # No-answer (SQuAD v2.0): empty gold list / only empty strings; "" matches.
    assert M.squad_exact_match("", []) == 1.0
    assert M.squad_exact_match("", [""]) == 1.0
    assert M.squad_exact_match("the", []) == 1.0  # normalizes to ""
    assert M.squad_exact_match("Denver", []) == 0.0
    assert M.squad_exact_match("", ["Denver"]) == 0.0
    # Empty gold strings are dropped first (official v2): an answerable question stays answerable.
    assert M.squad_exact_match("", ["", "Denver"]) == 0.0
    assert M.squad_f1("", ["", "Denver"]) == 0.0


def test_squad_f1():
    # "big red dog" vs "red dog barks": 2 common tokens of 3 and 3.
    assert M.squad_f1("the big red dog", ["a red dog barks"]) == pytest.approx(2 / 3)
    assert M.squad_f1("the big red dog", ["a red dog barks", "big red dog"]) == 1.0  # max over gold
    # Repeated tokens count once per gold occurrence: p = 1/3, r = 1.
    assert M.squad_f1("red red red", ["red"]) == pytest.approx(0.5)
    assert M.squad_f1("blue", ["red"]) == 0.0
    assert M.squad_f1("", []) == 1.0
    assert M.squad_f1("something", []) == 0.0
    assert M.squad_f1("", ["something"]) == 0.0


def test_squad_evaluate_v2_breakdown():
    refs = {"q1": ["Denver Broncos"], "q2": ["a red dog barks"], "q3": [], "q4": ["Paris"]}
    preds = {"q1": "denver broncos", "q2": "the big red dog", "q3": ""}  # q4 missing: 0
    out = M.squad_evaluate(preds, refs)
    assert out["exact_match"] == pytest.approx(100 * 2 / 4)
    assert out["f1"] == pytest.approx(100 * (1 + 2 / 3 + 1 + 0) / 4)
    assert out["total"] == 4
    assert out["HasAns_total"] == 3 and out["NoAns_total"] == 1
    assert out["HasAns_exact_match"] == pytest.approx(100 / 3)
    assert out["NoAns_f1"] == 100.0
    with pytest.raises(ValueError, match="q9"):
        M.squad_evaluate({"q9": "x"}, refs)


# ---------------------------------------------------------------- entities


@pytest.mark.parametrize(
    "tags,entities",
    [
        (["B-PER", "I-PER", "O", "B-LOC"], [("PER", 0, 1), ("LOC", 3, 3)]),  # seqeval docs
        (["O", "I-PER", "I-PER", "O"], [("PER", 1, 2)]),  # I- without B- starts an entity
        (["I-PER"], [("PER", 0, 0)]),
        (["B-PER", "I-LOC", "I-LOC"], [("PER", 0, 0), ("LOC", 1, 2)]),  # type switch on I-
        (["B-PER", "B-LOC"], [("PER", 0, 0), ("LOC", 1, 1)]),
        (["B-PER", "B-PER", "I-PER"], [("PER", 0, 0), ("PER", 1, 2)]),
        (["I-PER", "I-PER", "B-PER", "I-PER"], [("PER", 0, 1), ("PER", 2, 3)]),  # IOB1
        (["I-LOC", "I-PER", "O", "I-PER"], [("LOC", 0, 0), ("PER", 1, 1), ("PER", 3, 3)]),
        # IOBES
        (["S-PER", "B-LOC", "E-LOC", "I-LOC"], [("PER", 0, 0), ("LOC", 1, 2), ("LOC", 3, 3)]),
        (["O", "O"], []),
        ([["B-PER"], ["I-PER"]], [("PER", 0, 0), ("PER", 2, 2)]),  # sentences do not merge
    ],
)
def test_get_entities_conlleval_rules(tags, entities):
    assert M.get_entities(tags) == entities


def test_entity_scores_seqeval_readme_example():
    y_true = [["O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    y_pred = [["O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    out = M.entity_scores(y_true, y_pred)
    assert (out["precision"], out["recall"], out["f1"]) == (0.5, 0.5, 0.5)
    assert out["per_type"]["MISC"]["f1"] == 0.0
    assert out["per_type"]["PER"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1}


def test_entity_scores_partial_matches_count_as_wrong():
    # true: PER(0,1), LOC(3,3), LOC(5,5); pred: PER(0,0) partial, LOC(3,3), LOC(5,5), PER(6,6).
    y_true = [["B-PER", "I-PER", "O", "B-LOC", "O", "B-LOC", "O"]]
    y_pred = [["B-PER", "O", "O", "I-LOC", "O", "B-LOC", "B-PER"]]
    out = M.entity_scores(y_true, y_pred)
    assert (out["num_true"], out["num_pred"], out["num_correct"]) == (3, 4, 2)
    assert out["precision"] == pytest.approx(0.5)
    assert out["recall"] == pytest.approx(2 / 3)
    assert out["f1"] == pytest.approx(4 / 7)
    assert M.entity_f1(y_true, y_pred) == pytest.approx(4 / 7)
    # A type switch inside a span splits it: LOC(0,1) vs PER(0,0)+LOC(1,1).
    assert M.entity_f1([["B-LOC", "I-LOC"]], [["B-PER", "I-LOC"]]) == 0.0


def test_entity_scores_no_predictions_and_errors():
    out = M.entity_scores([["B-PER", "O"]], [["O", "O"]])
    assert (out["precision"], out["recall"], out["f1"]) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="sentence 0: 2 true tags but 1 predicted"):
        M.entity_scores([["B-PER", "O"]], [["O"]])
    with pytest.raises(ValueError, match="1 sentences but y_pred has 2"):
        M.entity_scores([["O"]], [["O"], ["O"]])
