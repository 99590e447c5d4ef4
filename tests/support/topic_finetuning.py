"""The training tests' small fine-tuning run: topic classification on the bundled WordNet
definitions (tools/finetune.py's argv), each test choosing its sizes.

Example:
    args = topic_classification_args(checkpoint, out, max_train_examples=64,
                                     num_train_epochs=1)
    proc = tool_runner.run(args, cwd=REPO, capture_output=True, text=True)
"""

import sys

from tool_runner import REPO

DATA = REPO / "bert_keras" / "assets"


def topic_classification_args(checkpoint, output_dir, **flags):
    """`[python, tools/finetune.py, --flag=value, ...]`: the topic (column 0) of a definition
    (column 1) from `checkpoint` into `output_dir`, 64 tokens, batches of 16, learning rate
    1e-3, quiet; `flags` add to or replace these."""
    args = {"task": "classification", "train_file": DATA / "wordnet_topics.train.tsv.gz",
            "eval_file": DATA / "wordnet_topics.dev.tsv.gz", "label_column": 0,
            "text_a_column": 1, "init_checkpoint": checkpoint, "output_dir": output_dir,
            "max_seq_length": 64, "train_batch_size": 16, "learning_rate": 1e-3, "verbose": 0,
            **flags}
    return [sys.executable, str(REPO / "tools" / "finetune.py")] + [
        f"--{k}={v}" for k, v in args.items()]
