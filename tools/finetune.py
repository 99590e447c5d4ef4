r"""Fine-tunes a BERT checkpoint on a classification, regression, tagging or span-QA task.

Data: files (`--train_file`, `--eval_file`, `--test_file`; globs; gzip ok; format from the
extension or `--format`) or a TFDS task (`--tfds_name=glue/mrpc`, `squad/v1.1`,
`conll2003`). The encoder and tokenizer come from `--init_checkpoint`: our pretraining
output (runs/pretrain/encoder), a Hugging Face directory or a Google TF1 directory.

Each epoch trains on length-bucketed batches (padded to the longest row of each batch),
then evaluates on the eval data; the best epoch by `--main_metric` is kept.

OUTPUT_DIR/
  flags.json               the resolved flags
  metrics.json             per-epoch eval metrics, the best epoch's, test metrics, baselines
  eval_predictions.jsonl   the best epoch's predictions on the eval data (JSON lines)
  test_predictions.jsonl   the best model's predictions on --test_file
  best/                    task_io.save_task: model.keras, vocab.txt, task.json (labels) -> export

Example (2 minutes on 2 CPU cores):
  python tools/finetune.py --flagfile=flags/finetune_bible_paraphrase.flags \
      --init_checkpoint=runs/pretrain/encoder --output_dir=runs/paraphrase \
      --max_train_examples=2000 --num_train_epochs=1 --dtype=mixed_bfloat16
"""

import json
import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from absl import app, flags, logging  # noqa: E402

TASKS = ("classification", "multi_label", "regression", "tagging", "span_qa")
FORMATS = ("auto", "tsv", "csv", "jsonl", "squad_json", "squad_jsonl", "conll")
MAIN_METRICS = {"classification": "accuracy", "multi_label": "micro_f1", "regression": "pearson",
                "tagging": "f1", "span_qa": "f1"}
GLUE_MAIN_METRICS = {"cola": "mcc", "mrpc": "f1", "qqp": "f1", "stsb": "pearson"}

FLAGS = flags.FLAGS
_FLAGS_BEFORE = set(FLAGS)
flags.DEFINE_enum("task", None, TASKS, "The kind of task (picks head, loss and metrics).")
flags.DEFINE_string("train_file", None, "Training data: a file or glob (comma-separated list ok).")
flags.DEFINE_string("eval_file", None, "Evaluation data, scored after every epoch.")
flags.DEFINE_string("test_file", None, "Data to predict with the best model (scored if labeled).")
flags.DEFINE_enum("format", "auto", FORMATS, "File format; auto: from the extension (.gz stripped).")
flags.DEFINE_bool("header", False, "TSV/CSV: the first row of each file names the columns.")
flags.DEFINE_string("text_a_column", "1", "TSV/CSV column (index or header name) of the text.")
flags.DEFINE_string("text_b_column", None, "TSV/CSV column of the second text of a pair.")
flags.DEFINE_string("label_column", "0", "TSV/CSV column of the label.")
flags.DEFINE_string("text_a_field", "text", "JSONL field of the text.")
flags.DEFINE_string("text_b_field", None, "JSONL field of the second text of a pair.")
flags.DEFINE_string("label_field", "label", "JSONL field of the label.")
flags.DEFINE_string("label_delimiter", ",", "multi_label: separator of the labels of a row.")
flags.DEFINE_bool("test_unlabeled", False, "--test_file has no labels (classification, tagging).")
flags.DEFINE_string("tfds_name", None, "A TFDS task instead of files: glue/mrpc, squad/v1.1, conll2003...")
flags.DEFINE_string("tfds_data_dir", None, "TFDS data dir (default: ~/tensorflow_datasets).")
flags.DEFINE_string("tfds_train_split", "train", "TFDS training split.")
flags.DEFINE_string("tfds_eval_split", None, "TFDS eval split (default: validation, "
                    "validation_matched for mnli).")
flags.DEFINE_string("tfds_test_split", None, "TFDS split to predict with the best model.")
flags.DEFINE_string("init_checkpoint", None, "Encoder checkpoint dir: ours, Hugging Face or Google TF1.")
flags.DEFINE_string("output_dir", None, "Where metrics, predictions and best/ go.")
flags.DEFINE_integer("max_seq_length", 128, "Maximum tokens per sequence (batches pad to their longest).")
flags.DEFINE_integer("doc_stride", 128, "span_qa: tokens between the starts of two context windows.")
flags.DEFINE_integer("max_query_length", 64, "span_qa: question tokens kept.")
flags.DEFINE_integer("max_answer_length", 30, "span_qa: longest answer in tokens.")
flags.DEFINE_integer("n_best_size", 20, "span_qa: candidate answers kept per question.")
flags.DEFINE_bool("version_2_with_negative", None, "span_qa: questions may be unanswerable "
                  "(SQuAD 2.0); default: whether the training data has such questions.")
flags.DEFINE_float("null_score_diff_threshold", 0.0, "span_qa v2: predict '' when null score - "
                   "best span score exceeds this.")
flags.DEFINE_float("multi_label_threshold", 0.5, "multi_label: probability to predict a label.")
flags.DEFINE_integer("train_batch_size", 32, "Training batch size.")
flags.DEFINE_integer("eval_batch_size", 64, "Evaluation / prediction batch size.")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate (after warmup).")
flags.DEFINE_integer("num_train_epochs", 3, "Training epochs.")
flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of the steps with linear warmup.")
flags.DEFINE_float("weight_decay", 0.01, "AdamW weight decay (not on LayerNorm and biases).")
flags.DEFINE_float("layerwise_lr_decay", None, "Layer-wise learning-rate decay (e.g. 0.9).")
flags.DEFINE_float("dropout", 0.1, "Dropout of the task head.")
flags.DEFINE_integer("max_train_examples", None, "Use only the first N training examples.")
flags.DEFINE_integer("max_eval_examples", None, "Use only the first N eval (and test) examples.")
flags.DEFINE_string("main_metric", None, "Eval metric that picks the best epoch (higher is better); "
                    "default: accuracy / micro_f1 / pearson / entity f1 / squad f1 by task, GLUE's for glue/*.")
flags.DEFINE_enum("dtype", "float32", ["float32", "mixed_bfloat16", "mixed_float16"],
                  "Compute dtype policy; mixed_bfloat16 is faster on CPUs with AMX.")
flags.DEFINE_enum("distribution_strategy", "one_device", ["one_device", "mirrored"],
                  "tf.distribute strategy (bert_keras.strategy).")
flags.DEFINE_bool("jit_compile", False, "XLA-compile the train step (slower in bf16 on CPU).")
flags.DEFINE_integer("seed", 42, "Random seed (weights of the head, dropout, shuffling).")
flags.DEFINE_integer("verbose", 2, "Keras fit verbosity: 0 silent, 1 progress bar, 2 one line per epoch.")
_OUR_FLAGS = sorted(set(FLAGS) - _FLAGS_BEFORE)


def _split_files(value):
    return [p for p in value.split(",") if p] if value else None


def infer_format(path, task):
    """File format from the extension (".gz" stripped) and the task."""
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
    raise app.UsageError(f"cannot infer the format of {path!r} (extension {ext!r}); pass --format.")


_TASK_FORMATS = {"tagging": ("conll",), "span_qa": ("squad_json", "squad_jsonl")}


def check_flags():
    """app.UsageError for bad flag combinations, before any work."""
    if FLAGS.task is None:
        raise app.UsageError(f"--task is required: one of {TASKS}.")
    if not FLAGS.init_checkpoint:
        raise app.UsageError("--init_checkpoint is required (a checkpoint directory).")
    if not os.path.isdir(FLAGS.init_checkpoint):
        raise app.UsageError(f"--init_checkpoint={FLAGS.init_checkpoint!r} is not a directory.")
    if not FLAGS.output_dir:
        raise app.UsageError("--output_dir is required.")
    files = [FLAGS.train_file, FLAGS.eval_file, FLAGS.test_file]
    if FLAGS.tfds_name and any(files):
        raise app.UsageError("give either --tfds_name or --train_file/--eval_file/--test_file, not both.")
    if not FLAGS.tfds_name:
        if not FLAGS.train_file:
            raise app.UsageError("--train_file (or --tfds_name) is required.")
        from bert_keras.finetuning_data import expand_pattern

        for name, value in (("train_file", FLAGS.train_file), ("eval_file", FLAGS.eval_file),
                            ("test_file", FLAGS.test_file)):
            if not value:
                continue
            try:
                paths = expand_pattern(_split_files(value))
            except FileNotFoundError as e:
                raise app.UsageError(f"--{name}={value!r}: {e}") from None
            for path in paths:
                fmt = FLAGS.format if FLAGS.format != "auto" else infer_format(path, FLAGS.task)
                allowed = _TASK_FORMATS.get(FLAGS.task, ("tsv", "csv", "jsonl"))
                if fmt not in allowed:
                    raise app.UsageError(f"--task={FLAGS.task} reads {allowed}, but {path} is {fmt!r}.")
    else:
        from bert_keras.tfds_tasks import _task_kind

        try:
            kind = _task_kind(FLAGS.tfds_name)
        except ValueError as e:
            raise app.UsageError(str(e)) from None
        expected = {"squad": ("span_qa",), "conll": ("tagging",),
                    "glue": ("regression",) if "stsb" in FLAGS.tfds_name else ("classification",)}[kind]
        if FLAGS.task not in expected:
            raise app.UsageError(f"--tfds_name={FLAGS.tfds_name} is a {expected[0]} task, not "
                                 f"--task={FLAGS.task}.")
    for name in ("max_seq_length", "train_batch_size", "eval_batch_size", "num_train_epochs",
                 "doc_stride", "max_query_length"):
        if getattr(FLAGS, name) < 1:
            raise app.UsageError(f"--{name} must be >= 1, got {getattr(FLAGS, name)}.")
    if FLAGS.task == "span_qa" and FLAGS.max_seq_length <= FLAGS.max_query_length + 3:
        raise app.UsageError(f"--max_seq_length={FLAGS.max_seq_length} leaves no room for the context "
                             f"after --max_query_length={FLAGS.max_query_length}.")
    if not 0.0 <= FLAGS.warmup_proportion <= 1.0:
        raise app.UsageError(f"--warmup_proportion must be in [0, 1], got {FLAGS.warmup_proportion}.")


# --- data ------------------------------------------------------------------------------


def _column(value):
    if value is None:
        return None
    return int(value) if value.lstrip("+-").isdigit() else value


def read_file_examples(pattern, task, labeled=True):
    """Examples of --train_file / --eval_file / --test_file by the format and column flags."""
    from bert_keras import finetuning_data as fd

    paths = fd.expand_pattern(_split_files(pattern))
    fmt = FLAGS.format if FLAGS.format != "auto" else infer_format(paths[0], task)
    label_type = {"multi_label": "multi", "regression": "regression"}.get(task, "single")
    if fmt in ("tsv", "csv"):
        reader = fd.read_tsv if fmt == "tsv" else fd.read_csv
        return reader(paths, header=FLAGS.header, text_a_column=_column(FLAGS.text_a_column),
                      text_b_column=_column(FLAGS.text_b_column),
                      label_column=_column(FLAGS.label_column) if labeled else None,
                      label_type=label_type, label_delimiter=FLAGS.label_delimiter)
    if fmt == "jsonl":
        return fd.read_jsonl(paths, text_a_field=FLAGS.text_a_field, text_b_field=FLAGS.text_b_field,
                             label_field=FLAGS.label_field if labeled else None,
                             label_type=label_type, label_delimiter=FLAGS.label_delimiter)
    if fmt == "squad_json":
        return fd.read_squad_json(paths)
    if fmt == "squad_jsonl":
        return fd.read_squad_jsonl(paths)
    return fd.read_conll(paths, tag_column=-1 if labeled else None)


def load_data(task):
    """(train, eval or None, test or None, label_map or None) from the data flags."""
    from bert_keras import finetuning_data as fd
    from bert_keras import tfds_tasks as tt

    if FLAGS.tfds_name:
        name = FLAGS.tfds_name
        eval_split = FLAGS.tfds_eval_split or (
            "validation_matched" if name.startswith("glue/mnli") else "validation")
        load = lambda split: tt.load_tfds_task(name, split, data_dir=FLAGS.tfds_data_dir)  # noqa: E731
        train, evaluation = load(FLAGS.tfds_train_split), load(eval_split)
        test = load(FLAGS.tfds_test_split) if FLAGS.tfds_test_split else None
        label_map = tt.tfds_label_map(name, data_dir=FLAGS.tfds_data_dir)
    else:
        train = read_file_examples(FLAGS.train_file, task)
        evaluation = read_file_examples(FLAGS.eval_file, task) if FLAGS.eval_file else None
        test = (read_file_examples(FLAGS.test_file, task, labeled=not FLAGS.test_unlabeled)
                if FLAGS.test_file else None)
        label_map = None
        if task in ("classification", "multi_label", "tagging"):
            label_map = fd.LabelMap.from_examples(train)
    if FLAGS.max_train_examples:
        train = train[:FLAGS.max_train_examples]
    if FLAGS.max_eval_examples:
        evaluation = evaluation[:FLAGS.max_eval_examples] if evaluation else evaluation
        test = test[:FLAGS.max_eval_examples] if test else test
    return train, evaluation, test, label_map


def featurize(task, examples, tokenizer, label_map):
    from bert_keras import task_features as tfe

    if task == "tagging":
        return tfe.tagging_features(examples, tokenizer, FLAGS.max_seq_length, label_map)
    if task == "span_qa":
        return tfe.span_features(examples, tokenizer, FLAGS.max_seq_length, FLAGS.doc_stride,
                                 FLAGS.max_query_length)
    return tfe.classification_features(examples, tokenizer, FLAGS.max_seq_length, label_map, task)


def label_keys(task):
    return ("start_positions", "end_positions") if task == "span_qa" else "labels"


def is_labeled(task, examples):
    if task == "span_qa":
        return True
    if task == "tagging":
        return all(ex.tags is not None for ex in examples)
    return all(ex.label is not None for ex in examples)


# --- model -----------------------------------------------------------------------------


def build_model(task, encoder, label_map):
    from bert_keras import models

    if task == "tagging":
        return models.BertTokenClassifier(encoder, len(label_map), dropout=FLAGS.dropout)
    if task == "span_qa":
        return models.BertSpanQA(encoder)
    problem = {"classification": "single_label"}.get(task, task)
    num_classes = 1 if task == "regression" else len(label_map)
    return models.BertClassifier(encoder, num_classes, problem_type=problem, dropout=FLAGS.dropout)


# --- evaluation and predictions ----------------------------------------------------------


def _softmax(x, axis=-1):
    import numpy as np

    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def predict_task(task, model, examples, features, label_map, allow_no_answer):
    """(predictions: one JSON-able dict per example, raw predicted values for metrics)."""
    import numpy as np

    from bert_keras import span_decoding
    from bert_keras import task_features as tfe

    batch = FLAGS.eval_batch_size
    if task == "span_qa":
        out = tfe.predict(model, features, batch, token_outputs=("start_logits", "end_logits"))
        n = tfe.num_features(features)
        t = max(len(r) for r in features["input_word_ids"])
        start = np.full((n, t), -1e9, np.float32)
        end = np.full((n, t), -1e9, np.float32)
        offsets = np.full((n, t, 2), -1, np.int32)
        max_context = np.zeros((n, t), bool)
        for i in range(n):
            k = len(features["input_word_ids"][i])
            start[i, :k], end[i, :k] = out["start_logits"][i], out["end_logits"][i]
            offsets[i, :k] = features["token_offsets"][i]
            max_context[i, :k] = features["token_is_max_context"][i]
        answers = span_decoding.decode_answers(
            start, end, features["example_index"], offsets[..., 0], offsets[..., 1],
            [ex.context for ex in examples], n_best_size=FLAGS.n_best_size,
            max_answer_length=FLAGS.max_answer_length, allow_no_answer=allow_no_answer,
            null_score_diff_threshold=FLAGS.null_score_diff_threshold,
            token_is_max_context=max_context)
        rows = [dict(id=ex.qid, question=ex.question, prediction=a["text"],
                     answers=[text for text, _ in ex.answers],
                     n_best=[dict(text=c["text"], probability=round(c["probability"], 5))
                             for c in a["n_best"][:5]])
                for ex, a in zip(examples, answers)]
        return rows, [a["text"] for a in answers]
    if task == "tagging":
        logits = tfe.predict(model, features, batch, token_outputs=True)
        default = label_map.labels.index("O") if "O" in label_map else 0
        ids = tfe.word_predictions([l.argmax(-1) for l in logits], features["word_index"],
                                   features["num_words"], default=default)
        tags = [label_map.decode(row) for row in ids]
        rows = [dict(words=ex.words, tags=ex.tags, predictions=p) for ex, p in zip(examples, tags)]
        return rows, tags
    logits = np.stack(tfe.predict(model, features, batch))  # (N, C)
    rows = [dict(text_a=ex.text_a, text_b=ex.text_b, label=ex.label) for ex in examples]
    if task == "regression":
        values = logits[:, 0].astype(float)
        for row, v in zip(rows, values):
            row["prediction"] = float(v)
        return rows, values
    if task == "multi_label":
        probs = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
        predicted = label_map.decode_multi_hot(probs, FLAGS.multi_label_threshold)
        for row, p, pr in zip(rows, predicted, probs):
            row["prediction"] = p
            row["probabilities"] = {l: round(float(x), 5) for l, x in zip(label_map.labels, pr)}
        return rows, (probs >= FLAGS.multi_label_threshold).astype(np.float32)
    probs = _softmax(logits)
    ids = probs.argmax(-1)
    for row, i, pr in zip(rows, ids, probs):
        row["prediction"] = label_map.labels[i]
        row["probabilities"] = {l: round(float(x), 5) for l, x in zip(label_map.labels, pr)}
    return rows, ids


def score(task, examples, predicted, label_map):
    """Metrics of predicted values against the examples' labels (metrics.py)."""
    import numpy as np

    from bert_keras import metrics

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
        return {"pearson": metrics.pearson(y, predicted), "spearman": metrics.spearman(y, predicted),
                "mse": float(np.mean((y - predicted) ** 2))}
    y = label_map.encode(examples)
    if task == "multi_label":
        tp = float((y * predicted).sum())
        p = tp / predicted.sum() if predicted.sum() else 0.0
        r = tp / y.sum() if y.sum() else 0.0
        return {"micro_f1": 2 * p * r / (p + r) if p + r else 0.0, "micro_precision": p,
                "micro_recall": r, "subset_accuracy": float((y == predicted).all(1).mean())}
    result = {"accuracy": metrics.accuracy(y, predicted), "macro_f1": metrics.macro_f1(y, predicted),
              "mcc": metrics.matthews_corrcoef(y, predicted)}
    if len(label_map) == 2:
        result["f1"] = metrics.binary_f1(y, predicted)
    return result


def glue_scores(y_true, y_pred):
    from bert_keras import metrics

    if FLAGS.tfds_name and FLAGS.tfds_name.startswith("glue/"):
        return metrics.glue_metrics(FLAGS.tfds_name.split(":")[0], y_true, y_pred)
    return {}


def baselines(task, train, examples, label_map):
    """Scores of trivial predictors on the eval data: the floor the model must clear."""
    import collections

    import numpy as np

    from bert_keras import metrics

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


# --- main --------------------------------------------------------------------------------


def run():
    import keras
    import numpy as np

    from bert_keras import strategy as strategy_lib
    from bert_keras import task_features as tfe
    from bert_keras import task_io, training
    from bert_keras.encoder import BertEncoder
    from bert_keras.optimization import create_optimizer
    from bert_keras.tokenization import BertTokenizer

    task = FLAGS.task
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    write_json(os.path.join(FLAGS.output_dir, "flags.json"),
               {name: FLAGS[name].value for name in _OUR_FLAGS})
    keras.utils.set_random_seed(FLAGS.seed)
    started = time.time()

    # Data, label map and features first: bad data fails before the model is built.
    train, evaluation, test, label_map = load_data(task)
    tokenizer = BertTokenizer.from_pretrained(FLAGS.init_checkpoint)
    train_features = featurize(task, train, tokenizer, label_map)
    eval_features = featurize(task, evaluation, tokenizer, label_map) if evaluation else None
    test_features = featurize(task, test, tokenizer, label_map) if test else None
    if task == "span_qa" and FLAGS.version_2_with_negative is None:
        allow_no_answer = any(ex.is_impossible for ex in train)
    else:
        allow_no_answer = bool(FLAGS.version_2_with_negative)
    logging.info("%d train examples -> %d features; %s eval; %s test", len(train),
                 tfe.num_features(train_features), len(evaluation or []), len(test or []))

    strategy = strategy_lib.create_strategy(FLAGS.distribution_strategy)
    keys = label_keys(task)
    train_ds = tfe.make_dataset(train_features, FLAGS.train_batch_size, keys, shuffle=True,
                                seed=FLAGS.seed, pad_id=tokenizer.pad_id)
    lengths = [len(r) for r in train_features["input_word_ids"]]
    steps_per_epoch = len(tfe.batch_indices(lengths, FLAGS.train_batch_size, shuffle=True))
    total_steps = steps_per_epoch * FLAGS.num_train_epochs
    with training.dtype_policy(FLAGS.dtype), strategy.scope():
        encoder = BertEncoder.from_pretrained(FLAGS.init_checkpoint)
        model = build_model(task, encoder, label_map)
        optimizer = create_optimizer(
            "adamw", learning_rate=FLAGS.learning_rate, num_train_steps=total_steps,
            num_warmup_steps=int(FLAGS.warmup_proportion * total_steps),
            weight_decay=FLAGS.weight_decay, layerwise_lr_decay=FLAGS.layerwise_lr_decay,
            num_layers=encoder.num_layers if FLAGS.layerwise_lr_decay else None)
        model.compile(optimizer=optimizer, jit_compile=FLAGS.jit_compile)

    main_metric = FLAGS.main_metric or MAIN_METRICS[task]
    if not FLAGS.main_metric and FLAGS.tfds_name and FLAGS.tfds_name.startswith("glue/"):
        main_metric = GLUE_MAIN_METRICS.get(FLAGS.tfds_name.split(":")[0][5:], main_metric)
    text_fields = (["question", "context"] if task == "span_qa" else ["text"] if task == "tagging"
                   else ["text_a", "text_b"] if train[0].text_b is not None else ["text"])
    labels = None if label_map is None else label_map.labels
    best_dir = os.path.join(FLAGS.output_dir, "best")
    record = {"task": task, "main_metric": main_metric, "epochs": [], "best_epoch": None,
              "train_examples": len(train), "train_features": tfe.num_features(train_features),
              "steps_per_epoch": steps_per_epoch, "dtype": FLAGS.dtype}
    if evaluation:
        record["eval_examples"] = len(evaluation)
        record["baselines"] = baselines(task, train, evaluation, label_map)
    state = {"best": None, "weights": None, "rows": None}

    def evaluate(examples, features):
        rows, predicted = predict_task(task, model, examples, features, label_map, allow_no_answer)
        result = score(task, examples, predicted, label_map)
        if task == "classification" or task == "regression":
            y = (label_map.encode(examples) if label_map is not None
                 else np.array([ex.label for ex in examples]))
            result.update({f"glue_{k}": v for k, v in glue_scores(y, predicted).items()})
        return rows, result

    class EpochEnd(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            entry = {"epoch": epoch + 1, "train_loss": float((logs or {}).get("loss", float("nan"))),
                     "seconds": round(time.time() - started, 1)}
            better = True
            if evaluation:
                rows, result = evaluate(evaluation, eval_features)
                if main_metric not in result:
                    raise ValueError(f"--main_metric={main_metric!r} is not among the eval metrics "
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
                task_io.save_task(best_dir, model, tokenizer, task, FLAGS.max_seq_length,
                                  labels=labels, text_fields=text_fields,
                                  metrics=entry.get("eval", {}))
            write_json(os.path.join(FLAGS.output_dir, "metrics.json"), record)

    model.fit(train_ds, epochs=FLAGS.num_train_epochs, callbacks=[EpochEnd()], verbose=FLAGS.verbose,
              shuffle=False)  # the dataset reshuffles itself every epoch

    if state["weights"] is not None and record["best_epoch"] != FLAGS.num_train_epochs:
        model.set_weights(state["weights"])
    if evaluation:
        record["eval"] = record["epochs"][record["best_epoch"] - 1]["eval"]
        write_jsonl(os.path.join(FLAGS.output_dir, "eval_predictions.jsonl"), state["rows"])
    if test:
        rows, predicted = predict_task(task, model, test, test_features, label_map, allow_no_answer)
        write_jsonl(os.path.join(FLAGS.output_dir, "test_predictions.jsonl"), rows)
        if is_labeled(task, test):
            record["test"] = score(task, test, predicted, label_map)
    record["seconds"] = round(time.time() - started, 1)
    write_json(os.path.join(FLAGS.output_dir, "metrics.json"), record)
    summary = {k: record[k] for k in ("best_epoch", "eval", "test", "baselines") if k in record}
    print(json.dumps(summary, indent=1, default=float), flush=True)
    return record


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    check_flags()
    run()


if __name__ == "__main__":
    app.run(main)
