"""The in-graph serving functions of an export: raw text in, named dense outputs out.

Shape legend: B batch, T sequence length (the longest packed row of the batch, at most the
model's seq_length), H hidden size, C classes / tags, W words of a text, P [MASK] tokens of
a text, K top-k predictions, V vocabulary size.

Everything here is TF ops only (core TF plus the tf-text ops of `op_audit.TF_SERVING_TEXT_OPS`),
so the SavedModel needs no Python from this project. Packing is done with core ops on purpose:
`tensorflow_text.RoundRobinTrimmer` (used by `BertPreprocessor`) emits 'TFText>RoundRobinTrim',
which TF Serving's tf-text lacks. `pack_segments` gives the same ids as `BertPreprocessor`
(round-robin truncation, [CLS] A [SEP] (B [SEP])) and is tested against it.

Signatures (all batch sizes, including 0; all string inputs are tf.string [B]):

==================  =====================  ==================================================
task                serving_default in     serving_default out
==================  =====================  ==================================================
classification      text | text_a, text_b  probabilities float32 [B, C], label_ids int32 [B],
                                           labels string [B]
multi_label         text | text_a, text_b  probabilities float32 [B, C] (sigmoid), label_ids
                                           int32 [B, C] (1 where p >= 0.5), labels string [B]
                                           (the chosen labels joined with ",")
regression          text | text_a, text_b  scores float32 [B, C]
tagging             text                   tokens string [B, W], tags string [B, W],
                                           tag_ids int32 [B, W], tag_scores float32 [B, W],
                                           token_starts / token_ends int32 [B, W] (character
                                           offsets into text); padding: "", -1, 0, -1
span_qa             question, context      answer string [B], answer_start / answer_end int32
                                           [B] (character offsets into context, end
                                           exclusive; -1 if no span), score float32 [B]
                                           (start + end logit), no_answer_score float32 [B]
pretraining         text (with [MASK])     mask_positions int32 [B, P] (-1 padding),
                                           top_k_ids int32 [B, P, K], top_k_tokens string
                                           [B, P, K], top_k_scores float32 [B, P, K]
                                           (probabilities; padding "", 0)
encoder             text                   pooled_output float32 [B, H], sequence_output
                                           float32 [B, T, H], input_mask int32 [B, T]
==================  =====================  ==================================================

Every export also has `encode` (the TF Hub BERT interface: input_word_ids, input_mask,
input_type_ids int32 [B, T] -> sequence_output float32 [B, T, H], pooled_output float32
[B, H]) and `preprocess` (the serving_default text inputs -> the three int32 [B, T] tensors).
"""

import tensorflow as tf

TEXT_FIELDS = {
    "span_qa": ("question", "context"),
    "tagging": ("text",),
    "pretraining": ("text",),
    "encoder": ("text",),
}
CLASSIFICATION_TASKS = ("classification", "multi_label", "regression")
MASK_LITERAL = "[MASK]"


def text_fields_of(info):
    """The serving_default input names of a task (task.json `text_fields` for classifiers)."""
    task = info["task"]
    if task in CLASSIFICATION_TASKS:
        fields = tuple(info.get("text_fields") or ("text",))
        if fields not in (("text",), ("text_a", "text_b")):
            raise ValueError(f"Classification text_fields must be ['text'] or ['text_a', "
                             f"'text_b'], got {list(fields)}.")
        return fields
    if task not in TEXT_FIELDS:
        raise ValueError(f"Unknown task {task!r}; expected one of "
                         f"{CLASSIFICATION_TASKS + tuple(TEXT_FIELDS)}.")
    return TEXT_FIELDS[task]


def _keep_first(ragged, counts):
    """The first counts[b] items of each row b of `ragged` [B, (n)]."""
    index = tf.ragged.range(tf.cast(ragged.row_lengths(), counts.dtype))
    return tf.ragged.boolean_mask(ragged, index < counts[:, None])


def truncation_lengths(lengths, budget):
    """Round-robin truncation (A, B, A, B, ...): kept lengths of 1 or 2 segments.

    For two segments of lengths a, b and a budget n: a' = min(a, max(n - b, ceil(n / 2))),
    b' = min(b, n - a'), i.e. a short segment is kept whole and two long ones share n with A
    getting the odd token (= Google BERT's _truncate_seq_pair, = tf-text RoundRobinTrimmer).
    """
    if len(lengths) == 1:
        return [tf.minimum(lengths[0], budget)]
    a, b = lengths
    keep_a = tf.minimum(a, tf.maximum(budget - b, (budget + 1) // 2))
    return [keep_a, tf.minimum(b, budget - keep_a)]


def pack_segments(segments, seq_length, cls_id, sep_id, pad_id):
    """Token ids of 1 or 2 segments (int32 ragged [B, (n)]) -> (inputs dict of int32 [B, T],
    kept lengths). T is the longest packed row (at least 2), at most seq_length."""
    budget = seq_length - 1 - len(segments)
    if len(segments) == 2:
        check = tf.debugging.assert_equal(
            segments[0].nrows(), segments[1].nrows(),
            message="The two text inputs must have the same batch size")
        with tf.control_dependencies([check]):
            segments = [tf.identity(s) for s in segments]
    lengths = [tf.cast(s.row_lengths(), tf.int32) for s in segments]
    kept = truncation_lengths(lengths, budget)
    batch = segments[0].nrows(out_type=tf.int32)
    cls = tf.RaggedTensor.from_tensor(tf.fill([batch, 1], cls_id))
    sep = tf.RaggedTensor.from_tensor(tf.fill([batch, 1], sep_id))
    ids, types = [cls], [tf.zeros_like(cls)]
    for i, (segment, keep) in enumerate(zip(segments, kept)):
        part = _keep_first(tf.cast(segment, tf.int32), keep)
        ids += [part, sep]
        types += [tf.zeros_like(part) + i, tf.zeros_like(sep) + i]
    ids = tf.concat(ids, axis=1)  # (B, (T))
    types = tf.concat(types, axis=1)
    width = tf.maximum(tf.reduce_max(tf.concat([tf.cast(ids.row_lengths(), tf.int32), [2]], 0)), 2)
    shape = tf.stack([batch, width])
    inputs = {
        "input_word_ids": ids.to_tensor(pad_id, shape=shape),  # (B, T)
        "input_mask": tf.ones_like(ids).to_tensor(0, shape=shape),  # (B, T)
        "input_type_ids": types.to_tensor(0, shape=shape),  # (B, T)
    }
    return inputs, kept


def _byte_to_char(texts, byte_offsets):
    """Byte offsets [B, K] into texts [B] -> character offsets (invalid bytes count as one
    character each, as the tokenizer's U+FFFD replacement does)."""
    _, starts = tf.strings.unicode_decode_with_offsets(
        texts, "UTF-8", errors="replace", replacement_char=0xFFFD)
    starts = tf.cast(starts, tf.int32).to_tensor(tf.int32.max)  # (B, chars)
    return tf.searchsorted(starts, byte_offsets, side="left")


class ServingFunctions:
    """The functions of an export, bound to a Keras task model and its tokenizer.

    Args:
      model: the Keras task model (or a bare BertEncoder).
      tokenizer: its `BertTokenizer`.
      info: the task.json dict (task, labels, seq_length, text_fields).
      top_k: fill-mask predictions per [MASK] (pretraining models).
      max_answer_tokens: longest answer span in tokens (span QA).
    """

    def __init__(self, model, tokenizer, info, top_k=5, max_answer_tokens=30):
        self.model = model  # not tracked here: export.py tracks its variables (as Keras' export does)
        self.encoder = getattr(model, "encoder", model)
        self.tokenizer = tokenizer
        self.task = info["task"]
        self.text_fields = text_fields_of(info)
        max_positions = getattr(self.encoder, "max_positions", None) or info["seq_length"]
        self.seq_length = int(min(info["seq_length"], max_positions))
        if self.seq_length < len(self.text_fields) + 1:
            raise ValueError(f"seq_length {self.seq_length} is too short for "
                             f"{len(self.text_fields)} segment(s).")
        self.top_k = int(top_k)
        self.max_answer_tokens = int(max_answer_tokens)
        labels = info.get("labels")
        if self.task in ("classification", "multi_label", "tagging"):
            num = int(getattr(model, "num_classes"))
            labels = list(labels) if labels else [str(i) for i in range(num)]
            if len(labels) != num:
                raise ValueError(f"task.json has {len(labels)} labels {labels} for a model with "
                                 f"{num} classes.")
        self.labels = labels
        self._labels = tf.constant(labels or [""])
        vocab = tokenizer.vocab
        self._tokens = tf.constant(vocab)
        self._is_suffix = tf.constant([t.startswith("##") and len(t) > 2 for t in vocab])

    # -- signatures --------------------------------------------------------------------------

    def text_signature(self):
        return [tf.TensorSpec([None], tf.string, name=name) for name in self.text_fields]

    def encode(self, input_word_ids, input_mask, input_type_ids):
        out = self.encoder(dict(input_word_ids=input_word_ids, input_mask=input_mask,
                                input_type_ids=input_type_ids), training=False)
        return {"sequence_output": tf.cast(out["sequence_output"], tf.float32),  # (B, T, H)
                "pooled_output": tf.cast(out["pooled_output"], tf.float32)}  # (B, H)

    def preprocess(self, *texts):
        return self._preprocess(texts)[0]

    def serve(self, *texts):
        return getattr(self, "_serve_" + self.task.replace("multi_label", "classification")
                       .replace("regression", "classification"))(texts)

    # -- shared ------------------------------------------------------------------------------

    def _pack(self, segments):
        return pack_segments(segments, self.seq_length, self.tokenizer.cls_id,
                             self.tokenizer.sep_id, self.tokenizer.pad_id)

    def _preprocess(self, texts):
        if self.task == "pretraining":
            return self._pack([self._tokenize_with_masks(texts[0])])
        return self._pack([self.tokenizer.tokenize(t) for t in texts])

    def _run(self, inputs, **extra):
        return self.model(dict(inputs, **extra), training=False)

    # -- tasks -------------------------------------------------------------------------------

    def _serve_classification(self, texts):
        inputs, _ = self._preprocess(texts)
        logits = tf.cast(self._run(inputs), tf.float32)  # (B, C)
        if self.task == "regression":
            return {"scores": logits}
        if self.task == "multi_label":
            probs = tf.sigmoid(logits)
            chosen = probs >= 0.5  # (B, C)
            names = tf.where(chosen, tf.broadcast_to(self._labels, tf.shape(chosen)), "")
            joined = tf.strings.reduce_join(
                tf.ragged.boolean_mask(names, chosen), axis=-1, separator=",")
            return {"probabilities": probs, "label_ids": tf.cast(chosen, tf.int32),
                    "labels": joined}
        probs = tf.nn.softmax(logits, axis=-1)
        ids = tf.argmax(logits, axis=-1, output_type=tf.int32)  # (B,)
        return {"probabilities": probs, "label_ids": ids, "labels": tf.gather(self._labels, ids)}

    def _serve_encoder(self, texts):
        inputs, _ = self._preprocess(texts)
        out = self.encode(**inputs)
        out["input_mask"] = inputs["input_mask"]
        return out

    def _serve_tagging(self, texts):
        text = texts[0]
        ids, starts, ends = self.tokenizer.tokenize_with_offsets(text)  # (B, (pieces))
        inputs, (kept,) = self._pack([ids])
        logits = tf.cast(self._run(inputs), tf.float32)  # (B, T, C)
        ids, starts, ends = (_keep_first(x, kept) for x in (ids, starts, ends))
        # Words: a piece starts a word unless it is a "##" suffix; the tag of a word is the
        # prediction at its first piece (how tagging models are trained).
        flat = ids.flat_values
        is_start = tf.logical_not(tf.gather(self._is_suffix, flat))
        word_of_piece = tf.maximum(tf.cumsum(tf.cast(is_start, tf.int32)) - 1, 0)
        num_words = tf.reduce_sum(tf.cast(is_start, tf.int32))
        row_of_piece = tf.cast(ids.value_rowids(), tf.int32)
        first = tf.cast(tf.where(is_start)[:, 0], tf.int32)  # flat index of each word's start
        word_row = tf.gather(row_of_piece, first)
        word_pos = first - tf.gather(tf.cast(ids.row_starts(), tf.int32), word_row) + 1  # +[CLS]
        word_start = tf.gather(starts.flat_values, first)
        word_end = tf.math.unsorted_segment_max(ends.flat_values, word_of_piece, num_words)
        word_logits = tf.gather_nd(logits, tf.stack([word_row, word_pos], -1))  # (words, C)
        probs = tf.nn.softmax(word_logits, axis=-1)
        tag_ids = tf.argmax(word_logits, axis=-1, output_type=tf.int32)
        scores = tf.reduce_max(probs, axis=-1)
        word_text = tf.strings.substr(tf.gather(text, word_row), word_start, word_end - word_start)
        word_text = tf.strings.unicode_transcode(word_text, "UTF-8", "UTF-8", errors="replace")
        batch = tf.shape(text, out_type=tf.int32)[0]
        char_start = _byte_to_char(text, _rows(word_start, word_row, batch).to_tensor(0))
        char_end = _byte_to_char(text, _rows(word_end, word_row, batch).to_tensor(0))

        def dense(values, pad):
            return _rows(values, word_row, batch).to_tensor(pad)

        valid = dense(tf.ones_like(word_row, tf.bool), False)
        return {
            "tokens": dense(word_text, ""),  # (B, W)
            "tags": dense(tf.gather(self._labels, tag_ids), ""),
            "tag_ids": dense(tag_ids, -1),
            "tag_scores": dense(scores, 0.0),
            "token_starts": tf.where(valid, char_start, -1),
            "token_ends": tf.where(valid, char_end, -1),
        }

    def _serve_span_qa(self, texts):
        question, context = texts
        q_ids = self.tokenizer.tokenize(question)
        c_ids, c_starts, c_ends = self.tokenizer.tokenize_with_offsets(context)
        inputs, (q_kept, c_kept) = self._pack([q_ids, c_ids])
        out = self._run(inputs)
        start_logits = tf.cast(out["start_logits"], tf.float32)  # (B, T)
        end_logits = tf.cast(out["end_logits"], tf.float32)
        width = tf.shape(start_logits)[1]
        first = q_kept + 2  # [CLS] question [SEP]
        pos = tf.range(width)[None, :]  # (1, T)
        in_context = (pos >= first[:, None]) & (pos < (first + c_kept)[:, None])  # (B, T)
        length = pos[:, None, :] - pos[:, :, None]  # (1, T, T): [., s, e] = e - s
        ok = (in_context[:, :, None] & in_context[:, None, :]
              & (length >= 0) & (length < self.max_answer_tokens))  # (B, T, T)
        scores = start_logits[:, :, None] + end_logits[:, None, :]  # (B, T, T)
        scores = tf.where(ok, scores, -3.0e38)
        flat = tf.reshape(scores, [tf.shape(scores)[0], -1])
        best = tf.argmax(flat, axis=-1, output_type=tf.int32)  # (B,)
        found = tf.reduce_any(ok, axis=[1, 2])
        start_tok, end_tok = best // width, best % width
        no_answer = start_logits[:, 0] + end_logits[:, 0]
        score = tf.where(found, tf.reduce_max(flat, axis=-1), no_answer)
        pad = tf.zeros_like(start_logits[:, :1], tf.int32)  # one column: a context may be empty
        c_starts = tf.concat([_keep_first(c_starts, c_kept).to_tensor(0), pad], 1)  # (B, pieces+1)
        c_ends = tf.concat([_keep_first(c_ends, c_kept).to_tensor(0), pad], 1)
        piece_s = tf.where(found, start_tok - first, 0)
        piece_e = tf.where(found, end_tok - first, 0)
        byte_s = tf.gather(c_starts, piece_s[:, None], batch_dims=1)[:, 0]
        byte_e = tf.gather(c_ends, piece_e[:, None], batch_dims=1)[:, 0]
        byte_s = tf.where(found, byte_s, 0)
        byte_e = tf.where(found, byte_e, 0)
        answer = tf.strings.substr(context, byte_s, byte_e - byte_s)
        answer = tf.strings.unicode_transcode(answer, "UTF-8", "UTF-8", errors="replace")
        chars = _byte_to_char(context, tf.stack([byte_s, byte_e], axis=1))  # (B, 2)
        return {
            "answer": tf.where(found, answer, ""),
            "answer_start": tf.where(found, chars[:, 0], -1),
            "answer_end": tf.where(found, chars[:, 1], -1),
            "score": score,
            "no_answer_score": no_answer,
        }

    def _tokenize_with_masks(self, text):
        """Texts with literal "[MASK]" -> ids [B, (pieces)] with mask_id at each [MASK]."""
        parts = tf.strings.split(text, sep=MASK_LITERAL)  # (B, (parts)), at least one part
        ids = self.tokenizer.tokenize(parts.flat_values)  # (parts, (pieces))
        mask = tf.RaggedTensor.from_tensor(
            tf.fill([ids.nrows(out_type=tf.int32), 1], self.tokenizer.mask_id))
        ids = tf.concat([ids, mask], axis=1)  # each part + [MASK]
        rows = tf.RaggedTensor.from_row_splits(ids, parts.row_splits).merge_dims(1, 2)
        return rows[:, :-1]  # drop the [MASK] after each text's last part

    def _serve_pretraining(self, texts):
        inputs, _ = self._preprocess(texts)
        ids = inputs["input_word_ids"]
        batch = tf.shape(ids)[0]
        where = tf.cast(tf.where(ids == self.tokenizer.mask_id), tf.int32)  # (M, 2)
        positions = tf.RaggedTensor.from_value_rowids(where[:, 1], where[:, 0], nrows=batch)
        width = tf.maximum(tf.reduce_max(tf.concat(
            [tf.cast(positions.row_lengths(), tf.int32), [1]], 0)), 1)
        shape = tf.stack([batch, width])
        valid = tf.ones_like(positions, tf.bool).to_tensor(False, shape=shape)  # (B, P)
        dense_positions = positions.to_tensor(0, shape=shape)
        logits = self._run(inputs, masked_lm_positions=dense_positions)["masked_lm"]
        probs = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)  # (B, P, V)
        k = min(self.top_k, len(self.tokenizer.vocab))
        top_scores, top_ids = tf.math.top_k(probs, k=k)  # (B, P, K)
        valid_k = tf.broadcast_to(valid[:, :, None], tf.shape(top_ids))
        return {
            "mask_positions": tf.where(valid, dense_positions, -1),
            "top_k_ids": tf.where(valid_k, top_ids, -1),
            "top_k_tokens": tf.where(valid_k, tf.gather(self._tokens, top_ids), ""),
            "top_k_scores": tf.where(valid_k, top_scores, 0.0),
        }


def _rows(values, rows, nrows):
    return tf.RaggedTensor.from_value_rowids(values, tf.cast(rows, tf.int64),
                                             nrows=tf.cast(nrows, tf.int64))
