"""The classic task-file mistakes are refused before training (bert_keras/data/finetuning/
sanity.py): a header row read as data, a label column of (nearly) distinct values, empty
texts; blank lines and empty texts are counted in the log."""

import logging

import pytest

from bert_keras import finetuning_data as fd
from bert_keras.data.finetuning import sanity
from bert_keras.errors import InputError
from bert_keras.tasks.finetuning_data import ClassificationExample, TaggingExample

WORDS = "good bad movie plot actor great boring long fun awful".split()


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def sentences(n, start=0):
    """n distinct short sentences."""
    return [f"{WORDS[i % 10]} {WORDS[(i // 10) % 10]} {WORDS[(i // 100) % 10]} movie {i}."
            for i in range(start, start + n)]


def sentiment_csv(path, n=300, header="text,sentiment", empty=()):
    rows = [f"{'' if i in empty else text},{'pos' if i % 3 else 'neg'}"
            for i, text in enumerate(sentences(n))]
    return _write(path, "\n".join(([header] if header else []) + rows) + "\n")


# -- 1. a header row read as data ---------------------------------------------------------------

def test_the_reported_text_sentiment_csv_is_refused_at_its_header(tmp_path):
    path = sentiment_csv(tmp_path / "t.csv")
    # Default columns (label 0, text 1): the header's "text" would be the first of 301 classes.
    with pytest.raises(InputError, match=r"t.csv:1: label 'text' looks like a column name.*"
                       r"--header.*--label_column and --text_a_column.*\['text', 'sentiment'\]"):
        fd.read_csv(path)
    with pytest.raises(InputError, match=r"t.csv:1: label 'sentiment' looks like a column"):
        fd.read_csv(path, text_a_column=0, label_column=1)  # the right columns, no --header
    examples = fd.read_csv(path, header=True, text_a_column="text", label_column="sentiment")
    assert len(examples) == 300 and {ex.label for ex in examples} == {"pos", "neg"}


@pytest.mark.parametrize("header, row, columns", [
    ("review,label", "{t},{l}", {}),  # the default label column reads the text's name
    ("verdict,id,sentence", "{l},{i},{t}", dict(text_a_column=2)),  # the other fields name columns
    ("tweet_text,airline_sentiment", "{t},{l}", dict(text_a_column=0, label_column=1)),
    ("Sentence 1,Sentence 2,Gold", "{t},{t},{l}",
     dict(text_a_column=0, text_b_column=1, label_column=2)),
    ("comentario,sentimiento", "{t},{l}", dict(text_a_column=0, label_column=1)),  # unlike the rows
])
def test_header_rows_with_other_names_are_refused(tmp_path, header, row, columns):
    rows = [row.format(t=t, l="pos" if i % 2 else "neg", i=i) for i, t in enumerate(sentences(12))]
    path = _write(tmp_path / "h.csv", "\n".join([header] + rows) + "\n")
    with pytest.raises(InputError, match=r"h.csv:1: label .* looks like a column name.*--header"):
        fd.read_csv(path, **columns)
    assert len(fd.read_csv(path, header=True, **columns)) == 12


@pytest.mark.parametrize("content", [
    # A class seen once, first, with a sentence for its text: data.
    "rare,This is a sentence.\n" + "".join(f"{'pos' if i % 2 else 'neg'},{t}\n"
                                            for i, t in enumerate(sentences(12))),
    # A short first row whose label is seen once, over too few rows to tell: data.
    "rare,short\npos,a\nneg,b\npos,c\nneg,d\n",
    # A class name that merely contains a one-letter column name.
    "y_pos,a b\npos,a\nneg,b\npos,c\n",
])
def test_a_first_row_unlike_a_header_is_data(tmp_path, content):
    path = _write(tmp_path / "d.csv", content)
    assert len(fd.read_csv(path)) == content.count("\n")


# -- 2. a label column of (nearly) distinct values -----------------------------------------------

def classification(labels, texts=None):
    texts = texts or sentences(len(labels))
    return [ClassificationExample(t, None, label, source=f"train.tsv:{i + 1}")
            for i, (t, label) in enumerate(zip(texts, labels))]


def test_a_text_column_read_as_the_label_is_refused(tmp_path):
    path = sentiment_csv(tmp_path / "t.csv")
    examples = fd.read_csv(path, header=True)  # --header, but the default columns
    with pytest.raises(InputError, match=r"t.csv: the training labels \(--label_column=0\) have "
                       r"300 distinct values and 300 of the 300 rows have a label no other row "
                       r"has: .* Pass --label_column and --text_a_column"):
        sanity.check_labels(examples, "csv", "--label_column=0")
    with pytest.raises(InputError, match=r"Pass --label_field and --text_a_field"):
        sanity.check_labels(examples, "jsonl")


def test_the_distinct_label_rule_spares_real_label_columns():
    # 20 distinct labels, all singletons: at the limit (more than 20 are refused).
    sanity.check_labels(classification([f"c{i}" for i in range(20)]), "tsv")
    with pytest.raises(InputError, match="21 distinct values"):
        sanity.check_labels(classification([f"c{i}" for i in range(21)]), "tsv")
    # 100 classes of 2 examples; 60 classes, 30 of them seen once (30 of 90 rows: a third).
    sanity.check_labels(classification([f"c{i // 2}" for i in range(200)]), "tsv")
    sanity.check_labels(classification([f"c{i}" for i in range(30)] +
                                       [f"d{i // 2}" for i in range(60)]), "tsv")
    # Regression, multi-label, unlabeled and tagging examples are not single labels.
    sanity.check_labels(classification([float(i) for i in range(100)]), "tsv")
    sanity.check_labels(classification([[f"c{i}"] for i in range(100)]), "tsv")
    sanity.check_labels(classification([None] * 100), "tsv")
    sanity.check_labels([TaggingExample([f"w{i}"], [f"T{i}"]) for i in range(100)], "conll")


def test_regression_and_multi_label_files_of_distinct_values_are_read(tmp_path):
    scores = "".join(f"{i / 7:.4f}\t{t}\n" for i, t in enumerate(sentences(50)))
    examples = fd.read_tsv(_write(tmp_path / "r.tsv", scores), label_type="regression")
    sanity.check_labels(examples, "tsv")
    tags = "".join(f"t{i},u{i}\t{t}\n" for i, t in enumerate(sentences(50)))
    examples = fd.read_tsv(_write(tmp_path / "m.tsv", tags), label_type="multi")
    sanity.check_labels(examples, "tsv")


# -- 3. empty texts and blank lines ----------------------------------------------------------

def test_a_few_empty_training_texts_are_left_out_and_logged(tmp_path, caplog):
    path = sentiment_csv(tmp_path / "t.csv", n=200, empty=(5,))  # 0.5%
    examples = fd.read_csv(path, header=True, text_a_column="text", label_column="sentiment")
    with caplog.at_level(logging.WARNING):
        kept = sanity.drop_empty_texts(examples, "csv")
    assert len(kept) == 199 and all(ex.text_a for ex in kept)
    assert "t.csv: 1 of the 200 training rows have an empty text and are left out (at " \
           f"{path}:7)" in caplog.text


def test_more_than_one_percent_of_empty_texts_is_refused(tmp_path):
    path = sentiment_csv(tmp_path / "t.csv", n=200, empty=(5, 9, 11))  # 1.5%
    examples = fd.read_csv(path, header=True, text_a_column="text", label_column="sentiment")
    with pytest.raises(InputError, match=r"t.csv: 3 of the 200 training rows \(1.5%\) have an "
                       r"empty text \(at .*t.csv:7, .*t.csv:11, .*t.csv:13\), more than 1% of "
                       r"them are refused: check --text_a_column \(and --text_b_column"):
        sanity.drop_empty_texts(examples, "csv")
    pairs = [ClassificationExample("a", " ", "1", source="p.jsonl:1")] + classification(["0"] * 9)
    with pytest.raises(InputError, match=r"p.jsonl: 1 of the 10 .* check --text_a_field"):
        sanity.drop_empty_texts(pairs, "jsonl")


def test_eval_empty_texts_are_counted_and_kept_and_blank_lines_logged(tmp_path, caplog):
    path = _write(tmp_path / "dev.tsv", "pos\tgood\n\nneg\t \n\n\npos\tfine\n")
    with caplog.at_level(logging.WARNING):
        examples = fd.read_tsv(path)
        assert sanity.count_empty_texts(examples, "eval") == 1
    assert len(examples) == 3
    assert "dev.tsv: skipped 3 blank lines (line 2, 4, 5)" in caplog.text
    assert f"dev.tsv: 1 of the 3 eval rows have an empty text (at {path}:3)" in caplog.text


def test_a_run_reads_its_training_files_through_the_checks(tmp_path, caplog):
    from bert_keras.training import finetuning
    from bert_keras.training.finetuning_config import FinetuneConfig

    train = sentiment_csv(tmp_path / "train.csv", n=200, empty=(5,))
    dev = sentiment_csv(tmp_path / "dev.csv", n=20, empty=(0, 1))
    options = dict(task="classification", init_checkpoint=str(tmp_path), header=True,
                   output_dir=str(tmp_path / "run"), train_file=train, eval_file=dev)
    config = FinetuneConfig.from_options(text_a_column="text", label_column="sentiment", **options)
    with caplog.at_level(logging.WARNING):
        assert len(finetuning.read_files(config, "train_file")) == 199  # the empty one left out
        assert len(finetuning.read_files(config, "eval_file")) == 20  # counted, kept
    assert "train.csv: 1 of the 200 training rows have an empty text" in caplog.text
    assert "dev.csv: 2 of the 20 eval rows have an empty text" in caplog.text
    with pytest.raises(InputError, match=r"train.csv: the training labels \(--label_column=0\)"):
        full = sentiment_csv(tmp_path / "train.csv", n=200)  # the default columns: text as label
        finetuning.read_files(FinetuneConfig.from_options(**dict(options, train_file=full)),
                              "train_file")
    # Regression labels over the same file are never refused as distinct values.
    numbers = _write(tmp_path / "r.tsv", "".join(f"{i / 3:.3f}\t{t}\n"
                                                 for i, t in enumerate(sentences(60))))
    config = FinetuneConfig.from_options(task="regression", init_checkpoint=str(tmp_path),
                            output_dir=str(tmp_path / "run"), train_file=numbers)
    assert len(finetuning.read_files(config, "train_file")) == 60
