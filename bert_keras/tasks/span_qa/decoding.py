"""Span decoding for extractive QA (SQuAD 1.1 / 2.0): logits of windows -> answer text. Numpy only.

A long context is cut into overlapping windows (`doc_stride`) by the featurization code; each
window is one row of the model's input. This module needs, per window (row `n` of N windows,
T tokens each, aligned with the model input):

* `start_logits`, `end_logits` float (N, T): `BertSpanQA` outputs (padding already -1e9).
* `example_index` int (N,): index of the window's example in `contexts` (several windows
  may share one example).
* `token_to_char_start`, `token_to_char_end` int (N, T): the offsets in that example's
  context string of the text each token covers: `context[start:end]` (end exclusive). -1
  for every token that is not context: [CLS], question tokens, [SEP], padding. Offsets are
  characters by default; pass `offsets="byte"` for UTF-8 byte offsets (as
  `WordPieceTokenizer.tokenize_with_offsets` returns).
* optional `token_is_max_context` bool (N, T): True where this window gives the token its
  most context among the windows that hold it (Google's `_check_is_max_context`). A span
  may only *start* at such a token, so an answer is not scored twice from a poor window.
  Omitted: all True.

Rules (Google's `run_squad.py`, with an exhaustive search instead of its top-20 x top-20
pre-selection): a candidate span (s, e) of a window needs s <= e, e - s + 1 <=
`max_answer_length`, every token from s to e a context token (so spans that touch the
question, [SEP] or padding are rejected), and `token_is_max_context[s]`. Its score is
start_logits[s] + end_logits[e]. The null ("no answer") score of an example is the minimum
over its windows of start_logits[cls_index] + end_logits[cls_index]. With
`allow_no_answer` (SQuAD 2.0) the answer is "" when null_score - best_span_score >
`null_score_diff_threshold`; tune the threshold on dev data.

Example:
>>> import numpy as np
>>> context = "The cat sat."
>>> # Window: [CLS] what [SEP] the cat sat . [SEP]
>>> starts = np.array([[-1, -1, -1, 0, 4, 8, 10, -1]])
>>> ends = np.array([[-1, -1, -1, 3, 7, 11, 11, -1]])
>>> start_logits = np.array([[0., 0, 0, 0, 5, 0, 0, 0]])
>>> end_logits = np.array([[0., 0, 0, 0, 1, 4, 0, 0]])
>>> answers = decode_answers(start_logits, end_logits, [0], starts, ends, [context])
>>> answers[0]["text"], answers[0]["start_char"]
('cat sat', 4)
"""

import numpy as np


def window_candidates(start_logits, end_logits, token_to_char_start, token_to_char_end,
                      max_answer_length=30, n_best_size=20, token_is_max_context=None):
    """The `n_best_size` best valid spans of one window: list of (score, start, end), best first.

    All arrays are (T,). See the module docstring for the validity rules.
    """
    start_logits = np.asarray(start_logits, np.float64)
    end_logits = np.asarray(end_logits, np.float64)
    is_context = (np.asarray(token_to_char_start) >= 0) & (np.asarray(token_to_char_end) >= 0)
    length = len(start_logits)
    if max_answer_length < 1:
        raise ValueError(f"max_answer_length must be >= 1, got {max_answer_length!r}.")
    can_start = is_context.copy()
    if token_is_max_context is not None:
        can_start &= np.asarray(token_is_max_context, bool)
    # Non-context tokens before each position: a span is all context iff the count is
    # unchanged from s to e and s itself is context.
    non_context_before = np.concatenate([[0], np.cumsum(~is_context)])  # (T + 1,)
    offsets = np.arange(max_answer_length)  # span length - 1
    starts = np.arange(length)[:, None]  # (T, 1)
    ends = starts + offsets[None, :]  # (T, L)
    in_range = ends < length
    ends_clipped = np.minimum(ends, length - 1)
    all_context = (non_context_before[ends_clipped + 1] - non_context_before[starts]) == 0
    valid = in_range & all_context & can_start[:, None]
    scores = np.where(valid, start_logits[:, None] + end_logits[ends_clipped], -np.inf)  # (T, L)
    flat = scores.ravel()
    count = int(valid.sum())
    if count == 0:
        return []
    k = min(n_best_size, count)
    best = np.argpartition(-flat, k - 1)[:k]
    best = best[np.argsort(-flat[best], kind="stable")]
    return [(float(flat[i]), int(i // max_answer_length),
             int(i // max_answer_length + i % max_answer_length))
            for i in best]


def _slice(context, start, end, offsets):
    if offsets == "char":
        return context[start:end]
    return context.encode("utf-8")[start:end].decode("utf-8", errors="replace")


def decode_answers(start_logits, end_logits, example_index, token_to_char_start, token_to_char_end,
                   contexts, n_best_size=20, max_answer_length=30, allow_no_answer=False,
                   null_score_diff_threshold=0.0, token_is_max_context=None, cls_index=0,
                   offsets="char"):
    """Best answer of every example, from the logits of its windows.

    Returns a list with one dict per entry of `contexts` (examples without windows get
    text ""): `text`, `start_char` and `end_char` (offsets of the text in the context,
    -1 for no answer), `score` (best span's start + end logit, -inf if none), `null_score`,
    and `n_best`, up to `n_best_size` distinct answers (dicts with text, start_char,
    end_char, score, probability; with `allow_no_answer` the "" answer competes by its
    null score), best first.
    """
    if offsets not in ("char", "byte"):
        raise ValueError(f"offsets must be 'char' or 'byte', got {offsets!r}.")
    start_logits = np.asarray(start_logits)
    end_logits = np.asarray(end_logits)
    example_index = np.asarray(example_index).reshape(-1)
    token_to_char_start = np.asarray(token_to_char_start)
    token_to_char_end = np.asarray(token_to_char_end)
    shape = start_logits.shape
    for name, array in (("end_logits", end_logits), ("token_to_char_start", token_to_char_start),
                        ("token_to_char_end", token_to_char_end)):
        if array.shape != shape:
            raise ValueError(f"{name} has shape {array.shape}, expected {shape} like start_logits.")
    if example_index.shape != shape[:1]:
        raise ValueError(f"example_index has shape {example_index.shape}, expected ({shape[0]},).")
    if len(example_index) and (example_index.min() < 0 or example_index.max() >= len(contexts)):
        raise ValueError(f"example_index values must be in [0, {len(contexts)}), got "
                         f"{example_index.min()}..{example_index.max()}.")

    candidates = [[] for _ in contexts]  # per example: (score, start_char, end_char)
    null_scores = [np.inf] * len(contexts)
    for n in range(shape[0]):
        e = int(example_index[n])
        null_scores[e] = min(null_scores[e],
                             float(start_logits[n, cls_index]) + float(end_logits[n, cls_index]))
        max_context = None if token_is_max_context is None else token_is_max_context[n]
        for score, s, t in window_candidates(start_logits[n], end_logits[n], token_to_char_start[n],
                                             token_to_char_end[n], max_answer_length, n_best_size,
                                             max_context):
            candidates[e].append(
                (score, int(token_to_char_start[n, s]), int(token_to_char_end[n, t])))

    answers = []
    for e, context in enumerate(contexts):
        n_best, seen = [], set()
        for score, start, end in sorted(candidates[e], key=lambda c: -c[0]):
            text = _slice(context, start, end, offsets)
            if text in seen:
                continue
            seen.add(text)
            n_best.append(dict(text=text, start_char=start, end_char=end, score=score))
            if len(n_best) == n_best_size:
                break
        best = n_best[0] if n_best else dict(text="", start_char=-1, end_char=-1, score=-np.inf)
        null_score = null_scores[e]
        if allow_no_answer and np.isfinite(null_score):
            if "" not in seen:
                n_best.append(dict(text="", start_char=-1, end_char=-1, score=null_score))
                n_best.sort(key=lambda c: -c["score"])
                n_best = n_best[:n_best_size]
            if null_score - best["score"] > null_score_diff_threshold:
                best = dict(text="", start_char=-1, end_char=-1, score=best["score"])
        if n_best:
            scores = np.array([c["score"] for c in n_best])
            probs = np.exp(scores - scores.max())
            for c, p in zip(n_best, probs / probs.sum()):
                c["probability"] = float(p)
        answers.append(dict(text=best["text"], start_char=best["start_char"],
                            end_char=best["end_char"], score=best["score"],
                            null_score=null_score, n_best=n_best))
    return answers


def decode_feature_answers(logits, features, contexts, **options):
    """`decode_answers` for the windows of `featurizer.span_features`: `logits` holds one
    (unpadded) row per window under "start_logits" and "end_logits" (as
    `batching.predict(..., token_outputs=...)` returns them); `options` go to
    `decode_answers`."""
    rows = features["input_word_ids"]
    n, t = len(rows), max(len(r) for r in rows)
    start = np.full((n, t), -1e9, np.float32)  # (N, T)
    end = np.full((n, t), -1e9, np.float32)
    offsets = np.full((n, t, 2), -1, np.int32)  # (N, T, 2)
    max_context = np.zeros((n, t), bool)
    for i, row in enumerate(rows):
        k = len(row)
        start[i, :k], end[i, :k] = logits["start_logits"][i], logits["end_logits"][i]
        offsets[i, :k] = features["token_offsets"][i]
        max_context[i, :k] = features["token_is_max_context"][i]
    return decode_answers(start, end, features["example_index"], offsets[..., 0],
                          offsets[..., 1], contexts, token_is_max_context=max_context,
                          **options)
