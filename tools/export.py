r"""Exports a trained model as a TF Serving SavedModel: saved_models/NAME/VERSION/.

Any trained task directory (written by tools/finetune.py or tools/pretrain.py with
`bert_keras.tasks.task_io.save_task`: classifier, token classifier, span QA, pretrainer,
encoder), or a bare encoder checkpoint directory (HF, Google TF1 or bert_keras) with
--encoder_dir. The export takes raw text (tokenization in the graph), also serves the TF Hub
`encode` signature, ships warmup requests, and is audited for ops that TF Serving lacks (the
export fails and names them). The flags are the fields of
`bert_keras.serving.export_config.ExportConfig`.

Examples:
  python tools/export.py --task_dir=runs/paraphrase/best --model_name=paraphrase
  python tools/export.py --encoder_dir=checkpoints/minilm --model_name=minilm --seq_length=256
  python tools/export.py --encoder_dir=checkpoints/minilm --model_name=minilm_embeddings \
      --pooling=mean --normalize   # serving_default: text -> embeddings [B, H]
  python tools/export.py --encoder_dir=checkpoints/minilm --model_name=minilm_256 \
      --pooling=mean --normalize --truncate_dim=256   # a Matryoshka cut: [B, 256]
"""

from bert_keras_tools import startup  # first: quiets TensorFlow's start-up

# isort: split
import json

from absl import app, flags

from bert_keras import configs
from bert_keras.serving import export, server_environment
from bert_keras.serving.export_config import ExportConfig
from bert_keras.training import precision

FLAGS = flags.FLAGS
configs.define_flags(ExportConfig)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    try:
        config = configs.from_flags(ExportConfig)
    except configs.ConfigError as e:
        raise app.UsageError(str(e)) from None
    startup.say(precision.describe(config.dtype))
    path = export.run_export(config)
    startup.say(f"serve it on x86 CPUs with {server_environment.assignments()} in the model "
                "server's environment: faster matmuls (docs/serving.md)")
    meta = export.read_metadata(path)
    print(path)
    print(json.dumps({name: {"inputs": sorted(sig["inputs"]), "outputs": sorted(sig["outputs"])}
                      for name, sig in meta["signatures"].items()}, indent=2))


def run():
    startup.run(main)


if __name__ == "__main__":
    run()
