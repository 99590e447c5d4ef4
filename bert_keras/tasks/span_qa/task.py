"""Extractive span QA (SQuAD v1.1 / v2.0): the answer is a span of the context.

Shape legend: B batch, T tokens, N features (context windows).
"""

import numpy as np
import tensorflow as tf
from absl import logging

from bert_keras import metrics
from bert_keras.data.finetuning import batching
from bert_keras.errors import InputError
from bert_keras.models import head_checkpoints
from bert_keras.tasks.base import Task
from bert_keras.tasks.graph_ops import byte_to_char
from bert_keras.tasks.raw_examples import RawExamples
from bert_keras.tasks.span_qa import featurizer, reader, tfds_reader
from bert_keras.tasks.span_qa import windows as span_windows
from bert_keras.tasks.span_qa.answer_inputs import DOC_STRIDE, MAX_ANSWER_LENGTH, MAX_QUERY_LENGTH
from bert_keras.tasks.span_qa.decoding import decode_feature_answers
from bert_keras.tasks.span_qa.model import BertSpanQA
from bert_keras.tasks.span_qa.options import SpanQAExportOptions, SpanQAOptions
from bert_keras.tasks.task_serving import WARMUP_WINDOWS, max_windows
from bert_keras.text.packing import segment_starts


class SpanQA(Task):
    """SQuAD JSON or SQuAD-style JSON lines (`--task=span_qa`); SQuAD EM / F1."""

    name = "span_qa"
    output_docs = {
        "answer": "answer text from the context ('' when the context is empty)",
        "answer_start": "character offset of the answer in the context, -1 if none",
        "answer_end": "character offset after the answer (exclusive), -1 if none",
        "score": "start logit + end logit of the answer",
        "no_answer_score": "start + end logit of [CLS] (SQuAD 2.0 no-answer score)",
    }
    file_formats = ("squad_json", "squad_jsonl")
    main_metric = "f1"
    label_keys = ("start_positions", "end_positions")
    needs_label_map = False
    token_outputs = ("start_logits", "end_logits")
    transformers_head = "ForQuestionAnswering"
    options_class = SpanQAOptions
    extension_formats = {".json": "squad_json", ".jsonl": "squad_jsonl"}
    input_line_help = "question<TAB>context"

    def read_files(self, paths, file_format, labeled=True, options=None, **reader_options):
        if file_format == "squad_json":
            return reader.read_squad_json(paths)
        return reader.read_squad_jsonl(paths)

    def tfds_reader(self, dataset, **fields):
        return tfds_reader.SquadReader(dataset, **fields)

    def reads_tfds(self, dataset, label_field=None):
        return tfds_reader.reads_squad_features(dataset)

    def is_labeled(self, examples):
        return True

    def text_fields(self, examples):
        return ["question", "context"]

    def resolve_config(self, config, train):
        """SQuAD 2.0 (answers may be "no answer") when --version_2_with_negative is unset and
        a training example has no answer: the resolved value is what the run records and
        what prediction reads."""
        if config.task_options.version_2_with_negative is None:
            config = config.replace(version_2_with_negative=any(ex.is_impossible for ex in train))
        return config

    def check_config(self, config):
        config.task_options.check_room(config.max_seq_length)

    def featurize(self, examples, tokenizer, label_map, *, max_seq_length, options=None):
        options = options or SpanQAOptions()
        return featurizer.span_features(examples, tokenizer, max_seq_length, options.doc_stride,
                                        options.max_query_length)

    def builds(self, model):
        return isinstance(model, BertSpanQA)

    def raw_examples(self):  # SQuAD's answers: text and character offset; [] for none
        questions = ["Who went home?", "Where did it rain?"]
        contexts = ["He went home.", "It rained all day."]
        answers = [{"text": "He", "answer_start": 0}, {"text": [], "answer_start": []}]
        return RawExamples(BertSpanQA, {}, fit=((questions, contexts), answers),
                           predict=(questions, contexts))

    def build_model(self, encoder, label_map, dropout=0.1, checkpoint=None, options=None):
        """BertSpanQA, with the head of a fine-tuned `*ForQuestionAnswering` checkpoint."""
        model = BertSpanQA(encoder, **(  # the family's head: ModernBERT's dense-gelu-norm
            head_checkpoints.task_head_arguments(checkpoint, "ForQuestionAnswering")
            if checkpoint else {}))
        if checkpoint and head_checkpoints.try_load_head(self.load_transformers_head, model,
                                                         checkpoint):
            logging.info("Loaded the span head of %s", checkpoint)
        return model

    def load_transformers_head(self, model, path):
        BertSpanQA.load_transformers_head(model, path)

    def predict(self, model, examples, features, label_map, config):
        out = batching.predict(model, features, config.eval_batch_size,
                               token_outputs=self.token_outputs)
        options = config.task_options
        answers = decode_feature_answers(
            out, features, [ex.context for ex in examples], n_best_size=options.n_best_size,
            max_answer_length=options.max_answer_length,
            allow_no_answer=bool(options.version_2_with_negative),
            null_score_diff_threshold=options.null_score_diff_threshold)
        rows = [dict(id=ex.qid, question=ex.question, prediction=a["text"],
                     answers=[text for text, _ in ex.answers],
                     n_best=[dict(text=c["text"], probability=round(c["probability"], 5))
                             for c in a["n_best"][:5]])
                for ex, a in zip(examples, answers)]
        return rows, [a["text"] for a in answers]

    def score(self, examples, predicted, label_map, glue_task=None):
        preds = {ex.qid: p for ex, p in zip(examples, predicted)}
        return metrics.squad_evaluate(preds, _references(examples))

    def baselines(self, train, examples, label_map):
        first = {ex.qid: (ex.context.split() or [""])[0] for ex in examples}
        return {"first_word_" + k: v
                for k, v in metrics.squad_evaluate(first, _references(examples)).items()
                if k in ("exact_match", "f1")}

    def serving_text_fields(self, info):
        return ("question", "context")

    def decoding_options(self, config):
        """What task.json keeps of a run's options, so an export cuts and answers contexts as
        the run scored them."""
        options = config.task_options
        return dict(doc_stride=options.doc_stride, max_query_length=options.max_query_length,
                    max_answer_length=options.max_answer_length,
                    allow_no_answer=bool(options.version_2_with_negative),
                    null_score_diff_threshold=options.null_score_diff_threshold)

    export_options_class = SpanQAExportOptions

    def serving_options(self, fns):
        """The export's windows and answers: its options (`SpanQAExportOptions`), else
        task.json's "decoding", else `BertSpanQA.answer()`'s defaults."""
        saved = fns.info.get("decoding") or {}

        def pick(name, default):
            value = getattr(fns.options, name)
            return int(value) if value is not None else int(saved.get(name, default))

        return dict(
            doc_stride=pick("doc_stride", DOC_STRIDE),
            max_query_length=int(saved.get("max_query_length", min(MAX_QUERY_LENGTH,
                                                                   fns.seq_length // 2))),
            max_answer_tokens=pick("max_answer_length", MAX_ANSWER_LENGTH),
            max_windows=max_windows(fns),
            allow_no_answer=bool(saved.get("allow_no_answer", False)),
            null_score_diff_threshold=float(saved.get("null_score_diff_threshold", 0.0)))

    def check_serving(self, fns):
        """InputError naming --seq_length unless a row holds the longest question kept, its
        special tokens and at least one context token."""
        options = self.serving_options(fns)
        specials = 2 + fns.tokenizer.separators_between
        room = fns.seq_length - options["max_query_length"] - specials
        if room < 1:
            raise InputError(
                f"--seq_length={fns.seq_length} leaves no room for the context: span_qa packs a "
                f"question of up to {options['max_query_length']} tokens (max_query_length), "
                f"{specials} special tokens and at least 1 context token, so it needs "
                f"--seq_length >= {options['max_query_length'] + specials + 1}.")
        if options["doc_stride"] < 1:
            raise InputError(f"--doc_stride must be positive, got {options['doc_stride']}.")

    def warmup_longest(self, fns, field, text):
        """The question repeated past max_query_length, and the context repeated over
        WARMUP_WINDOWS windows (at most max_windows) after such a question."""
        if field != "context":
            return super().warmup_longest(fns, field, text)
        options = self.serving_options(fns)
        room = (fns.seq_length - options["max_query_length"] - 2
                - fns.tokenizer.separators_between)
        windows = min(WARMUP_WINDOWS, options["max_windows"])
        budget = room + (windows - 1) * min(room, options["doc_stride"]) - 2  # 2: BPE's slack
        words = (text.split() or ["a"]) * (budget + 1)
        pieces = np.cumsum(fns.tokenizer.tokenize(tf.constant(words)).row_lengths().numpy())
        return " ".join(words[:max(1, int(np.sum(pieces <= budget)))])

    def export_metadata(self, fns):
        options = self.serving_options(fns)
        return {"max_answer_tokens": options["max_answer_tokens"],
                "decoding": {k: v for k, v in options.items() if k != "max_answer_tokens"}}

    def serve(self, fns, texts):
        question, context = texts
        options = self.serving_options(fns)
        q_ids = fns.tokenizer.tokenize(question)[:, :options["max_query_length"]]
        c_ids, c_starts, c_ends = fns.tokenizer.tokenize_with_offsets(context)
        q_len = tf.cast(q_ids.row_lengths(), tf.int32)  # (B,)
        room = fns.seq_length - q_len - 2 - fns.tokenizer.separators_between
        w = span_windows.windows(c_ids.row_lengths(), room, options["doc_stride"])
        too_many = tf.debugging.Assert(
            tf.reduce_all(w.count <= options["max_windows"]),
            [f"A context needs more than max_windows={options['max_windows']} windows of "
             f"{fns.seq_length} tokens (doc_stride {options['doc_stride']}); got",
             tf.reduce_max(tf.concat([w.count, [0]], 0))])
        with tf.control_dependencies([too_many]):
            pieces = span_windows.window_pieces(c_ids, w)
        inputs, kept = fns.pack([tf.gather(q_ids, w.example), pieces])
        out = fns.run(inputs)
        start_logits = tf.cast(out["start_logits"], tf.float32)  # (N, T)
        end_logits = tf.cast(out["end_logits"], tf.float32)
        width = tf.shape(start_logits)[1]
        first = segment_starts(kept, fns.tokenizer.separators_between)[1]  # (N,)
        pos = tf.range(width)[None, :]  # (1, T)
        in_context = (pos >= first[:, None]) & (pos < (first + w.length)[:, None])  # (N, T)
        can_start = span_windows.max_context(w, first, width)  # (N, T)
        # Span (s, s + d) for d < max_answer_tokens: its end must be a context token too.
        ends = tf.range(options["max_answer_tokens"])[None, :] + tf.range(width)[:, None]  # (T, L)
        ends = tf.minimum(ends, width - 1)
        ok = (can_start[:, :, None] & tf.gather(in_context, ends, axis=1)
              & (tf.range(options["max_answer_tokens"])[None, None, :] + pos[:, :, None]
                 < width))  # (N, T, L)
        scores = start_logits[:, :, None] + tf.gather(end_logits, ends, axis=1)  # (N, T, L)
        # float32's lowest, as unsorted_segment_max starts from, stands for "no span".
        flat = tf.reshape(tf.where(ok, scores, tf.float32.min), [tf.shape(scores)[0], -1])
        row_score = tf.reduce_max(flat, axis=-1)  # (N,)
        row_best = tf.argmax(flat, axis=-1, output_type=tf.int32)
        batch = tf.size(w.count)
        best = tf.math.unsorted_segment_max(row_score, w.example, batch)  # (B,)
        found = tf.math.unsorted_segment_max(
            tf.cast(tf.reduce_any(ok, axis=[1, 2]), tf.int32), w.example, batch) > 0
        rows = tf.range(tf.size(w.example))
        best_row = tf.math.unsorted_segment_min(  # the first window with the best span
            tf.where(row_score == tf.gather(best, w.example), rows, tf.int32.max), w.example,
            batch)
        null = tf.math.unsorted_segment_min(start_logits[:, 0] + end_logits[:, 0], w.example,
                                            batch)
        answered = found
        if options["allow_no_answer"]:
            answered &= null - best <= options["null_score_diff_threshold"]
        span = tf.gather(row_best, best_row)
        length = options["max_answer_tokens"]
        start_tok, end_tok = span // length, span // length + span % length
        # The span's pieces, counted in the context.
        base = tf.gather(w.start - first, best_row)
        piece = tf.cast(c_ids.row_starts(), tf.int32)[:, None] + base[:, None] + tf.stack(
            [start_tok, end_tok], 1)  # (B, 2)
        piece = tf.where(found[:, None], piece, 0)
        padded = tf.concat([c_starts.values[:, None], c_ends.values[:, None]], 1)
        padded = tf.concat([padded, tf.zeros([1, 2], padded.dtype)], 0)  # an empty batch too
        byte_s = tf.where(found, tf.gather(padded[:, 0], piece[:, 0]), 0)
        byte_e = tf.where(found, tf.gather(padded[:, 1], piece[:, 1]), 0)
        answer = tf.strings.substr(context, byte_s, byte_e - byte_s)
        answer = tf.strings.unicode_transcode(answer, "UTF-8", "UTF-8", errors="replace")
        chars = byte_to_char(context, tf.stack([byte_s, byte_e], axis=1), inside="containing")
        return {
            "answer": tf.where(answered, answer, ""),
            "answer_start": tf.where(answered, chars[:, 0], -1),
            "answer_end": tf.where(answered, chars[:, 1], -1),
            "score": tf.where(found, best, null),
            "no_answer_score": null,
        }


def _references(examples):
    return {ex.qid: [text for text, _ in ex.answers] for ex in examples}
