"""The tools start and run quietly (tools/startup.py): without TF_CPP_MIN_LOG_LEVEL set, a run
prints none of TensorFlow's chatter that reads as failure (CUDA probes, oneDNN notices such as
"oneDNN supports DT_INT64 only on platforms with AVX-512", absl's pre-init warning, the
checkpoint saver's "Sharding callback duration"), and says which devices it runs on."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOISE = ["oneDNN", "cuInit", "cudart", "cuda drivers", "absl::InitializeLog",
         "Sharding callback duration", "rebuild TensorFlow"]


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    import bert_keras as bk

    tokenizer = bk.BertTokenizer(str(ROOT / "bert_keras" / "assets" / "vocab.txt"))
    encoder = bk.BertEncoder(vocab_size=tokenizer.vocab_size, num_layers=1, hidden_size=16,
                             num_heads=2, intermediate_size=32, max_positions=32)
    path = tmp_path_factory.mktemp("encoder")
    encoder.save_pretrained(str(path), tokenizer=tokenizer)
    return path


def test_a_fine_tuning_run_prints_no_tensorflow_chatter(tmp_path, encoder_dir):
    """Featurizing packs pairs with a ragged concat (an int64 Transpose: oneDNN's once-per-
    process DT_INT64 notice), the epoch trains and writes a checkpoint."""
    rows = "".join(f"{'yes' if i % 2 else 'no'}\tsentence {i}\tits pair {i}\n" for i in range(16))
    (tmp_path / "train.tsv").write_text(rows)
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "finetune.py"), "--task=classification",
         f"--train_file={tmp_path / 'train.tsv'}", f"--eval_file={tmp_path / 'train.tsv'}",
         "--text_b_column=2", f"--init_checkpoint={encoder_dir}",
         f"--output_dir={tmp_path / 'run'}", "--max_seq_length=16", "--num_train_epochs=1",
         "--verbose=0"],
        capture_output=True, text=True, cwd=ROOT, env=dict(env, CUDA_VISIBLE_DEVICES=""),
        timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "finetune.py: running on CPU" in proc.stderr.splitlines()[0], proc.stderr[:500]
    noisy = [line for line in proc.stderr.splitlines() if any(word in line for word in NOISE)]
    assert not noisy, noisy


def test_create_pretraining_data_says_its_devices_once_with_two_workers(tmp_path):
    """Its spawned workers import the tool again: quietly too, without a device line each."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"Sentence {i} of a document.\nAnd its second line {i}.\n\n"
                              for i in range(40)))
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "create_pretraining_data.py"),
         f"--input_file={corpus}", f"--output_file={tmp_path / 'o.tfrecord'}",
         "--num_output_shards=2", "--num_workers=2", "--max_seq_length=32",
         "--max_predictions_per_seq=5", "--dupe_factor=1"],
        capture_output=True, text=True, cwd=ROOT, env=dict(env, CUDA_VISIBLE_DEVICES=""),
        timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.count("running on CPU") == 1, proc.stderr[-3000:]
