"""Extractive span QA (SQuAD v1.1 / v2.0): the answer is a span of the context.

Shape legend: B batch, T tokens, N features (context windows).
"""

import tensorflow as tf
from absl import logging

from bert_keras import metrics
from bert_keras.data.finetuning import batching, readers, spans
from bert_keras.data.finetuning.span_decoding import decode_feature_answers
from bert_keras.models import head_checkpoints
from bert_keras.models.task_models import BertSpanQA
from bert_keras.tasks.base import Task
from bert_keras.tasks.graph_ops import byte_to_char
from bert_keras.text.packing import keep_first, segment_starts


class SpanQA(Task):
    """SQuAD JSON or SQuAD-style JSON lines (`--task=span_qa`); SQuAD EM / F1."""

    name = "span_qa"
    file_formats = ("squad_json", "squad_jsonl")
    main_metric = "f1"
    label_keys = ("start_positions", "end_positions")
    needs_label_map = False
    token_outputs = ("start_logits", "end_logits")
    transformers_head = "ForQuestionAnswering"

    def read_files(self, paths, file_format, labeled=True, **options):
        if file_format == "squad_json":
            return readers.read_squad_json(paths)
        return readers.read_squad_jsonl(paths)

    def is_labeled(self, examples):
        return True

    def text_fields(self, examples):
        return ["question", "context"]

    def featurize(self, examples, tokenizer, label_map, *, max_seq_length, doc_stride=128,
                  max_query_length=64):
        return spans.span_features(examples, tokenizer, max_seq_length, doc_stride,
                                   max_query_length)

    def builds(self, model):
        return isinstance(model, BertSpanQA)

    def build_model(self, encoder, label_map, dropout=0.1, checkpoint=None):
        """BertSpanQA, with the head of a fine-tuned `*ForQuestionAnswering` checkpoint."""
        model = BertSpanQA(encoder)
        if checkpoint and head_checkpoints.try_load_head(self.load_transformers_head, model,
                                                         checkpoint):
            logging.info("Loaded the span head of %s", checkpoint)
        return model

    def load_transformers_head(self, model, path):
        head_checkpoints.load_span_head(model, path)

    def predict(self, model, examples, features, label_map, options):
        out = batching.predict(model, features, options.eval_batch_size,
                               token_outputs=self.token_outputs)
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

    def export_metadata(self, fns):
        return {"max_answer_tokens": fns.max_answer_tokens}

    def serve(self, fns, texts):
        question, context = texts
        q_ids = fns.tokenizer.tokenize(question)
        c_ids, c_starts, c_ends = fns.tokenizer.tokenize_with_offsets(context)
        inputs, (q_kept, c_kept) = fns.pack([q_ids, c_ids])
        out = fns.run(inputs)
        start_logits = tf.cast(out["start_logits"], tf.float32)  # (B, T)
        end_logits = tf.cast(out["end_logits"], tf.float32)
        width = tf.shape(start_logits)[1]
        first = segment_starts([q_kept, c_kept], fns.tokenizer.separators_between)[1]
        pos = tf.range(width)[None, :]  # (1, T)
        in_context = (pos >= first[:, None]) & (pos < (first + c_kept)[:, None])  # (B, T)
        length = pos[:, None, :] - pos[:, :, None]  # (1, T, T): [., s, e] = e - s
        ok = (in_context[:, :, None] & in_context[:, None, :]
              & (length >= 0) & (length < fns.max_answer_tokens))  # (B, T, T)
        scores = start_logits[:, :, None] + end_logits[:, None, :]  # (B, T, T)
        scores = tf.where(ok, scores, -3.0e38)
        flat = tf.reshape(scores, [tf.shape(scores)[0], -1])
        best = tf.argmax(flat, axis=-1, output_type=tf.int32)  # (B,)
        found = tf.reduce_any(ok, axis=[1, 2])
        start_tok, end_tok = best // width, best % width
        no_answer = start_logits[:, 0] + end_logits[:, 0]
        score = tf.where(found, tf.reduce_max(flat, axis=-1), no_answer)
        pad = tf.zeros_like(start_logits[:, :1], tf.int32)  # one column: a context may be empty
        c_starts = tf.concat([keep_first(c_starts, c_kept).to_tensor(0), pad], 1)  # (B, pieces+1)
        c_ends = tf.concat([keep_first(c_ends, c_kept).to_tensor(0), pad], 1)
        piece_s = tf.where(found, start_tok - first, 0)
        piece_e = tf.where(found, end_tok - first, 0)
        byte_s = tf.gather(c_starts, piece_s[:, None], batch_dims=1)[:, 0]
        byte_e = tf.gather(c_ends, piece_e[:, None], batch_dims=1)[:, 0]
        byte_s = tf.where(found, byte_s, 0)
        byte_e = tf.where(found, byte_e, 0)
        answer = tf.strings.substr(context, byte_s, byte_e - byte_s)
        answer = tf.strings.unicode_transcode(answer, "UTF-8", "UTF-8", errors="replace")
        chars = byte_to_char(context, tf.stack([byte_s, byte_e], axis=1))  # (B, 2)
        return {
            "answer": tf.where(found, answer, ""),
            "answer_start": tf.where(found, chars[:, 0], -1),
            "answer_end": tf.where(found, chars[:, 1], -1),
            "score": score,
            "no_answer_score": no_answer,
        }


def _references(examples):
    return {ex.qid: [text for text, _ in ex.answers] for ex in examples}
