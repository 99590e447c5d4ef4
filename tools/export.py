r"""Exports a trained model as a TF Serving SavedModel: saved_models/NAME/VERSION/.

Any trained task directory (written by tools/finetune.py or tools/pretrain.py with
`bert_keras.task_io.save_task`: classifier, token classifier, span QA, pretrainer, encoder),
or a bare encoder checkpoint directory (HF, Google TF1 or bert_keras) with --encoder_dir.
The export takes raw text (tokenization in the graph), also serves the TF Hub `encode`
signature, ships warmup requests, and is audited for ops that TF Serving lacks (the export
fails and names them). See docs/serving.md.

Examples:
  python tools/export.py --task_dir=runs/paraphrase/best --model_name=paraphrase
  python tools/export.py --encoder_dir=checkpoints/minilm --model_name=minilm --seq_length=256
"""

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from absl import app, flags  # noqa: E402

flags.DEFINE_string("task_dir", None, "Trained task directory (task.json, model.keras, vocab.txt).")
flags.DEFINE_string("encoder_dir", None, "Or: an encoder checkpoint directory (bare encoder export).")
flags.DEFINE_string("model_name", None, "Served model name; default: the task directory's name "
                    "(its parent's for .../best, .../final, .../encoder).")
flags.DEFINE_string("export_dir_base", "saved_models", "Where NAME/VERSION/ is written.")
flags.DEFINE_integer("version", None, "Version number; default: the next free integer.")
flags.DEFINE_enum("dtype", "float32", ["float32", "bfloat16"],
                  "Dtype of the export (bfloat16: encoder weights and compute in bfloat16, "
                  "heads and outputs float32).")
flags.DEFINE_integer("seq_length", None, "Maximum tokens per request row; default: task.json's "
                     "seq_length (128 for --encoder_dir).")
flags.DEFINE_integer("top_k", 5, "Fill-mask predictions per [MASK] (pretraining models).")
flags.DEFINE_integer("max_answer_tokens", 30, "Longest answer span in tokens (span QA).")
flags.DEFINE_list("allow_ops", [], "Extra op names the audit accepts (only if your model server "
                  "links them).")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    if bool(FLAGS.task_dir) == bool(FLAGS.encoder_dir):
        raise app.UsageError("Give exactly one of --task_dir or --encoder_dir.")
    if FLAGS.version is not None and FLAGS.version < 1:
        raise app.UsageError(f"--version must be a positive integer, got {FLAGS.version}.")
    if FLAGS.seq_length is not None and FLAGS.seq_length < 3:
        raise app.UsageError(f"--seq_length must be at least 3, got {FLAGS.seq_length}.")
    if FLAGS.top_k < 1 or FLAGS.max_answer_tokens < 1:
        raise app.UsageError("--top_k and --max_answer_tokens must be positive.")
    import bert_keras as bk
    from bert_keras.serving import export
    from bert_keras.text.tokenizer import BertTokenizer

    source = FLAGS.task_dir or FLAGS.encoder_dir
    if FLAGS.task_dir:
        from bert_keras.tasks.task_io import load_task

        model, tokenizer, info = load_task(FLAGS.task_dir)
    else:
        model = bk.BertEncoder.from_pretrained(FLAGS.encoder_dir)
        tokenizer = BertTokenizer.from_pretrained(FLAGS.encoder_dir)
        info = dict(task="encoder", labels=None, seq_length=128,
                    lower_case=tokenizer.lower_case, text_fields=["text"])
    if FLAGS.seq_length:
        info = dict(info, seq_length=FLAGS.seq_length)
    path = export.export_model(
        model, tokenizer, info, FLAGS.export_dir_base,
        FLAGS.model_name or export.default_model_name(source), version=FLAGS.version,
        dtype=FLAGS.dtype, top_k=FLAGS.top_k, max_answer_tokens=FLAGS.max_answer_tokens,
        extra_allowed_ops=FLAGS.allow_ops)
    meta = export.read_metadata(path)
    print(path)
    print(json.dumps({name: {"inputs": sorted(sig["inputs"]), "outputs": sorted(sig["outputs"])}
                      for name, sig in meta["signatures"].items()}, indent=2))


if __name__ == "__main__":
    app.run(main)
