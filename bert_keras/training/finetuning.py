"""Fine-tuning: examples -> features -> task model -> epochs with eval -> best model on disk.

`run_finetuning(task=..., init_checkpoint=..., output_dir=..., ...)` trains a classification,
multi-label, regression, tagging or span-QA head on an encoder checkpoint. The data are
Python examples (`finetuning_data`), files read with `read_task_files`, or a TFDS task
(`tfds_tasks`). Each epoch trains on length-bucketed batches, then evaluates; the best epoch
by `main_metric` is kept. tools/finetune.py is the command line over it.

OUTPUT_DIR/ flags.json (the config), metrics.json (per-epoch eval metrics, the best epoch's,
test metrics, baselines), eval_predictions.jsonl, test_predictions.jsonl, and best/
(task_io.save_task: model.keras, vocab.txt, task.json).

Example:
    >>> import bert_keras as bk
    >>> from bert_keras import finetuning_data as fd
    >>> record = bk.run_finetuning(  # doctest: +SKIP
    ...     task="classification", init_checkpoint="runs/pretrain/encoder", output_dir="/tmp/para",
    ...     train_examples=fd.load_bundled_task("bible_paraphrase", "train")[:256],
    ...     eval_examples=fd.load_bundled_task("bible_paraphrase", "dev")[:64], num_train_epochs=1)
    >>> record["best_epoch"], sorted(record["eval"])  # doctest: +SKIP
    (1, ['accuracy', 'f1', 'macro_f1', 'mcc'])
"""

import collections
import json
import os
import time

import numpy as np
from absl import logging

from bert_keras.data.finetuning import readers as fd
from bert_keras.metrics import official as metrics
from bert_keras.data.finetuning import features as tfe
from bert_keras.data.finetuning.label_map import LabelMap

TASKS = ("classification", "multi_label", "regression", "tagging", "span_qa")
FORMATS = ("auto", "tsv", "csv", "jsonl", "squad_json", "squad_jsonl", "conll")
TASK_FORMATS = {"tagging": ("conll",), "span_qa": ("squad_json", "squad_jsonl")}  # others: tsv/csv/jsonl
MAIN_METRICS = {"classification": "accuracy", "multi_label": "micro_f1", "regression": "pearson",
                "tagging": "f1", "span_qa": "f1"}
GLUE_MAIN_METRICS = {"cola": "mcc", "mrpc": "f1", "qqp": "f1", "stsb": "pearson"}


# --- data ------------------------------------------------------------------------------


def infer_format(path, task):
    """File format from the extension (".gz" stripped) and the task; ValueError if unknown."""
    name = path.lower().removesuffix(".gz")
    ext = os.path.splitext(name)[1]
    if ext == ".tsv":
        return "tsv"
    if ext == ".csv":
        return "csv"
    if ext == ".jsonl":
        return "squad_jsonl" if task == "span_qa" else "jsonl"
    if ext == ".json":
        return "squad_json"
    if ext in (".conll", ".iob", ".bio", ".txt") and task == "tagging":
        return "conll"
    raise ValueError(f"cannot infer the format of {path!r} (extension {ext!r})")


def read_task_files(pattern, task, *, file_format="auto", labeled=True, header=False,
                    text_a_column=1, text_b_column=None, label_column=0, text_a_field="text",
                    text_b_field=None, label_field="label", label_delimiter=","):
    """Examples of the task from files (a glob or list of globs) in `file_format` (auto: by
    the extension of the first file). Columns / fields as in finetuning_data's readers."""
    paths = fd.expand_pattern(pattern)
    fmt = file_format if file_format != "auto" else infer_format(paths[0], task)
    label_type = {"multi_label": "multi", "regression": "regression"}.get(task, "single")
    if fmt in ("tsv", "csv"):
        reader = fd.read_tsv if fmt == "tsv" else fd.read_csv
        return reader(paths, header=header, text_a_column=text_a_column, text_b_column=text_b_column,
                      label_column=label_column if labeled else None, label_type=label_type,
                      label_delimiter=label_delimiter)
    if fmt == "jsonl":
        return fd.read_jsonl(paths, text_a_field=text_a_field, text_b_field=text_b_field,
                             label_field=label_field if labeled else None, label_type=label_type,
                             label_delimiter=label_delimiter)
    if fmt == "squad_json":
        return fd.read_squad_json(paths)
    if fmt == "squad_jsonl":
        return fd.read_squad_jsonl(paths)
    return fd.read_conll(paths, tag_column=-1 if labeled else None)


def load_tfds_data(name, *, data_dir=None, train_split="train", eval_split=None, test_split=None):
    """(train, eval, test or None, label_map or None) of a TFDS task; eval_split defaults to
    validation (validation_matched for glue/mnli)."""
    from bert_keras.data.finetuning import tfds as tfds_tasks

    eval_split = eval_split or ("validation_matched" if name.startswith("glue/mnli") else "validation")
    load = lambda split: tfds_tasks.load_tfds_task(name, split, data_dir=data_dir)  # noqa: E731
    train, evaluation = load(train_split), load(eval_split)
    test = load(test_split) if test_split else None
    return train, evaluation, test, tfds_tasks.tfds_label_map(name, data_dir=data_dir)


def featurize(task, examples, tokenizer, label_map, *, max_seq_length, doc_stride=128,
              max_query_length=64):
    """task_features of the examples for the task's model."""
    if task == "tagging":
        return tfe.tagging_features(examples, tokenizer, max_seq_length, label_map)
    if task == "span_qa":
        return tfe.span_features(examples, tokenizer, max_seq_length, doc_stride, max_query_length)
    return tfe.classification_features(examples, tokenizer, max_seq_length, label_map, task)


def is_labeled(task, examples):
    if task == "span_qa":
        return True
    if task == "tagging":
        return all(ex.tags is not None for ex in examples)
    return all(ex.label is not None for ex in examples)


def build_model(task, encoder, label_map, dropout=0.1):
    """The task model (models.py) over the encoder."""
    from bert_keras.models import task_models as models

    if task == "tagging":
        return models.BertTokenClassifier(encoder, len(label_map), dropout=dropout)
    if task == "span_qa":
        return models.BertSpanQA(encoder)
    problem = {"classification": "single_label"}.get(task, task)
    num_classes = 1 if task == "regression" else len(label_map)
    return models.BertClassifier(encoder, num_classes, problem_type=problem, dropout=dropout)


# --- predictions and scores --------------------------------------------------------------


def _softmax(x, axis=-1):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _probabilities(labels, probs):
    return {l: round(float(x), 5) for l, x in zip(labels, probs)}


def predict(task, model, examples, features, label_map, *, batch_size=64, allow_no_answer=False,
            n_best_size=20, max_answer_length=30, null_score_diff_threshold=0.0,
            multi_label_threshold=0.5):
    """(one JSON-able dict per example, the predicted values that `score` takes)."""
    from bert_keras.data.finetuning import span_decoding

    if task == "span_qa":
        out = tfe.predict(model, features, batch_size, token_outputs=("start_logits", "end_logits"))
        n = tfe.num_features(features)
        t = max(len(r) for r in features["input_word_ids"])
        start = np.full((n, t), -1e9, np.float32)  # (N, T)
        end = np.full((n, t), -1e9, np.float32)
        offsets = np.full((n, t, 2), -1, np.int32)  # (N, T, 2)
        max_context = np.zeros((n, t), bool)
        for i in range(n):
            k = len(features["input_word_ids"][i])
            start[i, :k], end[i, :k] = out["start_logits"][i], out["end_logits"][i]
            offsets[i, :k] = features["token_offsets"][i]
            max_context[i, :k] = features["token_is_max_context"][i]
        answers = span_decoding.decode_answers(
            start, end, features["example_index"], offsets[..., 0], offsets[..., 1],
            [ex.context for ex in examples], n_best_size=n_best_size,
            max_answer_length=max_answer_length, allow_no_answer=allow_no_answer,
            null_score_diff_threshold=null_score_diff_threshold, token_is_max_context=max_context)
        rows = [dict(id=ex.qid, question=ex.question, prediction=a["text"],
                     answers=[text for text, _ in ex.answers],
                     n_best=[dict(text=c["text"], probability=round(c["probability"], 5))
                             for c in a["n_best"][:5]])
                for ex, a in zip(examples, answers)]
        return rows, [a["text"] for a in answers]
    if task == "tagging":
        logits = tfe.predict(model, features, batch_size, token_outputs=True)
        default = label_map.labels.index("O") if "O" in label_map else 0
        ids = tfe.word_predictions([l.argmax(-1) for l in logits], features["word_index"],
                                   features["num_words"], default=default)
        tags = [label_map.decode(row) for row in ids]
        rows = [dict(words=ex.words, tags=ex.tags, predictions=p) for ex, p in zip(examples, tags)]
        return rows, tags
    logits = np.stack(tfe.predict(model, features, batch_size))  # (N, C)
    rows = [dict(text_a=ex.text_a, text_b=ex.text_b, label=ex.label) for ex in examples]
    if task == "regression":
        values = logits[:, 0].astype(float)
        for row, v in zip(rows, values):
            row["prediction"] = float(v)
        return rows, values
    if task == "multi_label":
        probs = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
        predicted = label_map.decode_multi_hot(probs, multi_label_threshold)
        for row, p, pr in zip(rows, predicted, probs):
            row["prediction"], row["probabilities"] = p, _probabilities(label_map.labels, pr)
        return rows, (probs >= multi_label_threshold).astype(np.float32)
    probs = _softmax(logits)
    ids = probs.argmax(-1)
    for row, i, pr in zip(rows, ids, probs):
        row["prediction"], row["probabilities"] = label_map.labels[i], _probabilities(label_map.labels, pr)
    return rows, ids


def score(task, examples, predicted, label_map, glue_task=None):
    """Metrics of predicted values against the examples' labels (metrics.py); with glue_task
    (e.g. "glue/mrpc") also GLUE's metrics of that task, as glue_*."""
    if task == "span_qa":
        preds = {ex.qid: p for ex, p in zip(examples, predicted)}
        refs = {ex.qid: [text for text, _ in ex.answers] for ex in examples}
        return metrics.squad_evaluate(preds, refs)
    if task == "tagging":
        gold = [ex.tags for ex in examples]
        result = metrics.entity_scores(gold, predicted)
        flat_gold = [t for s in gold for t in s]
        flat_pred = [t for s in predicted for t in s]
        result["word_accuracy"] = metrics.accuracy(flat_gold, flat_pred)
        return result
    if task == "regression":
        y = np.array([ex.label for ex in examples], np.float64)
        result = {"pearson": metrics.pearson(y, predicted), "spearman": metrics.spearman(y, predicted),
                  "mse": float(np.mean((y - predicted) ** 2))}
    elif task == "multi_label":
        y = label_map.encode(examples)
        tp = float((y * predicted).sum())
        p = tp / predicted.sum() if predicted.sum() else 0.0
        r = tp / y.sum() if y.sum() else 0.0
        return {"micro_f1": 2 * p * r / (p + r) if p + r else 0.0, "micro_precision": p,
                "micro_recall": r, "subset_accuracy": float((y == predicted).all(1).mean())}
    else:
        y = label_map.encode(examples)
        result = {"accuracy": metrics.accuracy(y, predicted), "macro_f1": metrics.macro_f1(y, predicted),
                  "mcc": metrics.matthews_corrcoef(y, predicted)}
        if len(label_map) == 2:
            result["f1"] = metrics.binary_f1(y, predicted)
    if glue_task:
        result.update({f"glue_{k}": v for k, v in metrics.glue_metrics(glue_task, y, predicted).items()})
    return result


def baselines(task, train, examples, label_map):
    """Scores of trivial predictors on the eval data: the floor the model must clear."""
    if task == "classification":
        majority = collections.Counter(ex.label for ex in train).most_common(1)[0][0]
        y = label_map.encode(examples)
        pred = np.full_like(y, label_map.labels.index(majority))
        return {"majority_label": majority, "majority_accuracy": metrics.accuracy(y, pred),
                "majority_macro_f1": metrics.macro_f1(y, pred)}
    if task == "tagging":
        majority = collections.Counter(t for ex in train for t in ex.tags).most_common(1)[0][0]
        gold = [ex.tags for ex in examples]
        pred = [[majority] * len(s) for s in gold]
        return {"majority_tag": majority,
                "majority_word_accuracy": metrics.accuracy(sum(gold, []), sum(pred, [])),
                "majority_entity_f1": metrics.entity_f1(gold, pred)}
    if task == "span_qa":
        first = {ex.qid: (ex.context.split() or [""])[0] for ex in examples}
        refs = {ex.qid: [text for text, _ in ex.answers] for ex in examples}
        return {"first_word_" + k: v for k, v in metrics.squad_evaluate(first, refs).items()
                if k in ("exact_match", "f1")}
    if task == "regression":
        y = np.array([ex.label for ex in examples])
        mean = float(np.mean([ex.label for ex in train]))
        return {"train_mean_mse": float(np.mean((y - mean) ** 2))}
    return {}


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, default=float) + "\n")


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2, default=float)
    os.replace(tmp, path)


# --- the run -----------------------------------------------------------------------------


def run_finetuning(*, task, init_checkpoint, output_dir, train_examples=None, eval_examples=None,
                   test_examples=None, label_map=None, train_file=None, eval_file=None,
                   test_file=None, test_unlabeled=False, file_options=None, tfds_name=None,
                   tfds_data_dir=None, tfds_train_split="train", tfds_eval_split=None,
                   tfds_test_split=None, max_train_examples=None, max_eval_examples=None,
                   max_seq_length=128, doc_stride=128, max_query_length=64, max_answer_length=30,
                   n_best_size=20, version_2_with_negative=None, null_score_diff_threshold=0.0,
                   multi_label_threshold=0.5, train_batch_size=32, eval_batch_size=64,
                   learning_rate=5e-5, num_train_epochs=3, warmup_proportion=0.1,
                   weight_decay=0.01, layerwise_lr_decay=None, dropout=0.1, main_metric=None,
                   dtype="float32", distribution_strategy="one_device", jit_compile=False, seed=42,
                   verbose=2, config=None):
    """Fine-tunes the encoder and tokenizer of `init_checkpoint` on a task; returns the record
    written to OUTPUT_DIR/metrics.json.

    Data, exactly one of: `train_examples` (and `eval_examples`, `test_examples`, optional
    `label_map`; default from the training examples); `train_file` (and `eval_file`,
    `test_file`: globs, read by `read_task_files(**file_options)`; `test_unlabeled`: the test
    file has no labels); `tfds_name` (e.g. "glue/mrpc", with the `tfds_*` splits). The other
    arguments are the flags of tools/finetune.py; `config` (default: the plain keyword
    arguments) is written to OUTPUT_DIR/flags.json.
    """
    args = dict(locals())  # the keyword arguments, before anything else is bound
    import keras

    from bert_keras.training import strategy as strategy_lib
    from bert_keras.tasks import task_io
    from bert_keras.training import loop as training
    from bert_keras.models.encoder import BertEncoder
    from bert_keras.training.optimization import create_optimizer
    from bert_keras.text.tokenizer import BertTokenizer

    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    sources = {"train_examples": train_examples, "train_file": train_file, "tfds_name": tfds_name}
    if sum(v is not None for v in sources.values()) != 1:
        raise ValueError(f"give exactly one of train_examples, train_file and tfds_name, got {sources}")
    glue_task = tfds_name.split(":")[0] if tfds_name and tfds_name.startswith("glue/") else None
    os.makedirs(output_dir, exist_ok=True)
    if config is None:
        config = {k: v for k, v in args.items() if isinstance(v, (str, int, float, bool, type(None)))}
    write_json(os.path.join(output_dir, "flags.json"), config)
    keras.utils.set_random_seed(seed)
    started = time.time()

    # Data, label map and features first: bad data fails before the model is built.
    train, evaluation, test = train_examples, eval_examples, test_examples
    if tfds_name:
        train, evaluation, test, label_map = load_tfds_data(
            tfds_name, data_dir=tfds_data_dir, train_split=tfds_train_split,
            eval_split=tfds_eval_split, test_split=tfds_test_split)
    elif train_file:
        read = lambda pattern, labeled=True: (  # noqa: E731
            read_task_files(pattern, task, labeled=labeled, **(file_options or {})) if pattern else None)
        train, evaluation, test = read(train_file), read(eval_file), read(test_file, not test_unlabeled)
    if label_map is None and not tfds_name and task in ("classification", "multi_label", "tagging"):
        label_map = LabelMap.from_examples(train)
    if max_train_examples:
        train = train[:max_train_examples]
    if max_eval_examples:
        evaluation = evaluation[:max_eval_examples] if evaluation else evaluation
        test = test[:max_eval_examples] if test else test
    tokenizer = BertTokenizer.from_pretrained(init_checkpoint)
    lengths = dict(max_seq_length=max_seq_length, doc_stride=doc_stride, max_query_length=max_query_length)
    train_features = featurize(task, train, tokenizer, label_map, **lengths)
    eval_features = featurize(task, evaluation, tokenizer, label_map, **lengths) if evaluation else None
    test_features = featurize(task, test, tokenizer, label_map, **lengths) if test else None
    if task == "span_qa" and version_2_with_negative is None:
        allow_no_answer = any(ex.is_impossible for ex in train)
    else:
        allow_no_answer = bool(version_2_with_negative)
    logging.info("%d train examples -> %d features; %s eval; %s test", len(train),
                 tfe.num_features(train_features), len(evaluation or []), len(test or []))

    strategy = strategy_lib.create_strategy(distribution_strategy)
    keys = ("start_positions", "end_positions") if task == "span_qa" else "labels"
    train_ds = tfe.make_dataset(train_features, train_batch_size, keys, shuffle=True, seed=seed,
                                pad_id=tokenizer.pad_id)
    steps_per_epoch = len(tfe.batch_indices([len(r) for r in train_features["input_word_ids"]],
                                            train_batch_size, shuffle=True))
    total_steps = steps_per_epoch * num_train_epochs
    with training.dtype_policy(dtype), strategy.scope():
        encoder = BertEncoder.from_pretrained(init_checkpoint)
        model = build_model(task, encoder, label_map, dropout)
        optimizer = create_optimizer(
            "adamw", learning_rate=learning_rate, num_train_steps=total_steps,
            num_warmup_steps=int(warmup_proportion * total_steps), weight_decay=weight_decay,
            layerwise_lr_decay=layerwise_lr_decay,
            num_layers=encoder.num_layers if layerwise_lr_decay else None)
        model.compile(optimizer=optimizer, jit_compile=jit_compile)

    main_metric = main_metric or GLUE_MAIN_METRICS.get((glue_task or "")[5:], MAIN_METRICS[task])
    text_fields = (["question", "context"] if task == "span_qa" else ["text"] if task == "tagging"
                   else ["text_a", "text_b"] if train[0].text_b is not None else ["text"])
    labels = None if label_map is None else label_map.labels
    best_dir = os.path.join(output_dir, "best")
    record = {"task": task, "main_metric": main_metric, "epochs": [], "best_epoch": None,
              "train_examples": len(train), "train_features": tfe.num_features(train_features),
              "steps_per_epoch": steps_per_epoch, "dtype": dtype}
    if evaluation:
        record["eval_examples"] = len(evaluation)
        record["baselines"] = baselines(task, train, evaluation, label_map)
    state = {"best": None, "weights": None, "rows": None}
    options = dict(batch_size=eval_batch_size, allow_no_answer=allow_no_answer,
                   n_best_size=n_best_size, max_answer_length=max_answer_length,
                   null_score_diff_threshold=null_score_diff_threshold,
                   multi_label_threshold=multi_label_threshold)

    class EpochEnd(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            entry = {"epoch": epoch + 1, "train_loss": float((logs or {}).get("loss", float("nan"))),
                     "seconds": round(time.time() - started, 1)}
            better = True
            if evaluation:
                rows, predicted = predict(task, model, evaluation, eval_features, label_map, **options)
                result = score(task, evaluation, predicted, label_map, glue_task)
                if main_metric not in result:
                    raise ValueError(f"main_metric={main_metric!r} is not among the eval metrics "
                                     f"{sorted(result)}")
                entry["eval"] = result
                better = state["best"] is None or result[main_metric] > state["best"]
                print(f"epoch {epoch + 1}: eval {main_metric} = {result[main_metric]:.4f} "
                      f"(train loss {entry['train_loss']:.4f})", flush=True)
                if better:
                    state["best"], state["rows"] = result[main_metric], rows
            record["epochs"].append(entry)
            if better:
                record["best_epoch"] = epoch + 1
                state["weights"] = model.get_weights()
                task_io.save_task(best_dir, model, tokenizer, task, max_seq_length, labels=labels,
                                  text_fields=text_fields, metrics=entry.get("eval", {}))
            write_json(os.path.join(output_dir, "metrics.json"), record)

    model.fit(train_ds, epochs=num_train_epochs, callbacks=[EpochEnd()], verbose=verbose,
              shuffle=False)  # the dataset reshuffles itself every epoch

    if state["weights"] is not None and record["best_epoch"] != num_train_epochs:
        model.set_weights(state["weights"])
    if evaluation:
        record["eval"] = record["epochs"][record["best_epoch"] - 1]["eval"]
        write_jsonl(os.path.join(output_dir, "eval_predictions.jsonl"), state["rows"])
    if test:
        rows, predicted = predict(task, model, test, test_features, label_map, **options)
        write_jsonl(os.path.join(output_dir, "test_predictions.jsonl"), rows)
        if is_labeled(task, test):
            record["test"] = score(task, test, predicted, label_map)
    record["seconds"] = round(time.time() - started, 1)
    write_json(os.path.join(output_dir, "metrics.json"), record)
    return record
