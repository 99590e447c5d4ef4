"""Task readers: the bundled files, hand-written files, error cases."""

import gzip
import json

import numpy as np
import pytest

from bert_keras import finetuning_data as fd
from bert_keras.data.finetuning.label_map import LabelMap


def _gz_lines(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return f.read().split("\n")[:-1]  # like `zcat | wc -l`: the file ends with "\n"


def _write(path, text, compress=False):
    data = text.encode("utf-8") if isinstance(text, str) else text
    if compress:
        data = gzip.compress(data)
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


# ---------------------------------------------------------------- bundled files


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_bundled_bible_paraphrase(split):
    path = fd.bundled_task_path("bible_paraphrase", split)
    lines = _gz_lines(path)
    examples = fd.load_bundled_task("bible_paraphrase", split)
    assert len(examples) == len(lines)
    assert {e.label for e in examples} == {"0", "1"}
    label, a, b = lines[0].split("\t")
    assert examples[0] == fd.ClassificationExample(a, b, label)
    assert examples[0].source == f"{path}:1"


def test_bundled_wordnet_topics():
    for split in ("train", "dev", "test"):
        path = fd.bundled_task_path("wordnet_topics", split)
        examples = fd.read_tsv(path)  # defaults: label_column=0, text_a_column=1
        assert len(examples) == len(_gz_lines(path))
        assert examples[-1].text_b is None
    train = fd.load_bundled_task("wordnet_topics", "train")
    label_map = LabelMap.from_examples(train)
    assert len(label_map) == 45 and label_map.labels == sorted(label_map.labels)
    assert "noun.food" in label_map


def test_bundled_wordnet_qa_offsets():
    for split in ("train", "dev", "test"):
        path = fd.bundled_task_path("wordnet_qa", split)
        examples = fd.load_bundled_task("wordnet_qa", split)
        assert len(examples) == len(_gz_lines(path))
        assert len({e.qid for e in examples}) == len(examples)
        for e in examples:
            assert e.answers and not e.is_impossible
            for text, start in e.answers:
                assert e.context[start:start + len(text)] == text
    first = json.loads(_gz_lines(path)[0])
    assert examples[0].question == first["question"]


def test_bundled_bible_ner():
    for split in ("train", "dev", "test"):
        path = fd.bundled_task_path("bible_ner", split)
        lines = _gz_lines(path)
        sentences = sum(1 for i, line in enumerate(lines)
                        if line and (i + 1 == len(lines) or not lines[i + 1]))
        examples = fd.load_bundled_task("bible_ner", split)
        assert len(examples) == sentences
        assert sum(len(e.words) for e in examples) == sum(1 for line in lines if line)
        assert all(len(e.words) == len(e.tags) for e in examples)
    assert LabelMap.from_examples(examples).labels == ["B-LOC", "B-PER", "O"]
    assert (examples[0].words[0], examples[0].tags[0]) == tuple(lines[0].split())
    assert (examples[-1].words[-1], examples[-1].tags[-1]) == tuple(
        [line for line in lines if line][-1].split()
    )


# ---------------------------------------------------------------- hand-written files


def test_tsv_header_columns_by_name_and_gzip(tmp_path):
    text = "id\tsentence1\tsentence2\tquality\n7\tA b.\tC \"d\".\t1\n8\tE\tF\t0\n"
    path = _write(tmp_path / "pairs.tsv.gz", text, compress=True)
    ex = fd.read_tsv(path, header=True, text_a_column="sentence1", text_b_column="sentence2",
                     label_column="quality")
    assert ex == [fd.ClassificationExample("A b.", 'C "d".', "1"),
                  fd.ClassificationExample("E", "F", "0")]
    assert ex[1].source.endswith("pairs.tsv.gz:3")
    # Indices (negative too) and unlabeled data.
    ex = fd.read_tsv(path, header=True, text_a_column=-3, label_column=None)
    assert [e.text_a for e in ex] == ["A b.", "E"] and ex[0].label is None


def test_csv_quoting_and_glob(tmp_path):
    _write(tmp_path / "a.csv", 'label,text\npos,"Hello, world"\nneg,"two\nlines"\n')
    _write(tmp_path / "b.csv", "label,text\npos,last\n")
    ex = fd.read_csv(str(tmp_path / "*.csv"), header=True, text_a_column="text",
                     label_column="label")
    assert [(e.text_a, e.label) for e in ex] == [("Hello, world", "pos"), ("two\nlines", "neg"),
                                                 ("last", "pos")]
    assert ex[2].source.endswith("b.csv:2")
    # No header: columns by index.
    path = _write(tmp_path / "c.csv", "x,1\ny,0\n")
    assert [e.label for e in fd.read_csv(path, text_a_column=0, label_column=1)] == ["1", "0"]


def test_multi_label_and_regression(tmp_path):
    path = _write(tmp_path / "multi.tsv", "a,b\tfirst\nc\tsecond\n b , c \tthird\n")
    ex = fd.read_tsv(path, label_type="multi")
    assert [e.label for e in ex] == [["a", "b"], ["c"], ["b", "c"]]
    label_map = LabelMap.from_examples(ex)
    assert label_map.multi_label and label_map.labels == ["a", "b", "c"]
    np.testing.assert_array_equal(label_map.encode(ex), [[1, 1, 0], [0, 0, 1], [0, 1, 1]])
    assert label_map.decode_multi_hot([[0.9, 0.1, 0.7]]) == [["a", "c"]]

    path = _write(tmp_path / "reg.tsv", "3.5\tx\t y\n-1e-2\tz\tw\n")
    ex = fd.read_tsv(path, text_b_column=2, label_type="regression")
    assert [e.label for e in ex] == [3.5, -0.01]
    with pytest.raises(ValueError, match="regression examples need no LabelMap"):
        LabelMap.from_examples(ex)
    questions = [fd.SpanExample("q1", "Who?", "Moses.", [])]  # no labels to map
    with pytest.raises(ValueError, match="examples that name their labels .* got SpanExample"):
        LabelMap.from_examples(questions)
    bad = _write(tmp_path / "bad_reg.tsv", "3.5\tx\nhigh\ty\n")
    with pytest.raises(ValueError, match=r"bad_reg.tsv:2: regression label 'high'"):
        fd.read_tsv(bad, label_type="regression")


def test_jsonl_fields(tmp_path):
    rows = [{"premise": "p1", "hyp": "h1", "gold": 2}, {"premise": "p2", "hyp": "h2", "gold": 0}]
    path = _write(tmp_path / "nli.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    ex = fd.read_jsonl(path, text_a_field="premise", text_b_field="hyp", label_field="gold")
    assert ex == [fd.ClassificationExample("p1", "h1", "2"),
                  fd.ClassificationExample("p2", "h2", "0")]
    with pytest.raises(ValueError, match=r"nli.jsonl:1: missing field 'label'"):
        fd.read_jsonl(path)
    bad = _write(tmp_path / "bad.jsonl", '{"text": "a", "label": "x"}\n{"text": oops}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: invalid JSON .*oops"):
        fd.read_jsonl(bad)


SQUAD_V2 = {
    "version": "v2.0",
    "data": [
        {
            "title": "Denver",
            "paragraphs": [
                {
                    "context": "Denver won Super Bowl 50.",
                    "qas": [
                        {"id": "q1", "question": "Who won?", "is_impossible": False,
                         "answers": [{"text": "Denver", "answer_start": 0},
                                     {"text": "Denver", "answer_start": 0}]},
                        {"id": "q2", "question": "Who lost?", "is_impossible": True, "answers": [],
                         "plausible_answers": [{"text": "Denver", "answer_start": 0}]},
                    ],
                }
            ],
        }
    ],
}


def test_squad_json_v1_and_v2(tmp_path):
    ex = fd.read_squad_json(_write(tmp_path / "v2.json", json.dumps(SQUAD_V2)))
    assert ex == [
        fd.SpanExample("q1", "Who won?", "Denver won Super Bowl 50.",
                       [("Denver", 0), ("Denver", 0)], False),
        fd.SpanExample("q2", "Who lost?", "Denver won Super Bowl 50.", [], True),
    ]
    v1 = json.loads(json.dumps(SQUAD_V2))
    qas = v1["data"][0]["paragraphs"][0]["qas"]
    del qas[1]
    del qas[0]["is_impossible"]
    qas[0]["answers"] = [{"text": "Super Bowl 50", "answer_start": 11}]
    ex = fd.read_squad_json(_write(tmp_path / "v1.json.gz", json.dumps(v1), compress=True))
    assert ex[0].answers == [("Super Bowl 50", 11)] and not ex[0].is_impossible
    assert ex[0].context[11:24] == "Super Bowl 50"
    with pytest.raises(ValueError, match="not SQuAD JSON"):
        fd.read_squad_json(_write(tmp_path / "x.json", "[1, 2]"))


def test_squad_jsonl_ids_and_no_answer(tmp_path):
    rows = [
        {"id": "a", "question": "q", "context": "ctx here",
         "answers": [{"text": "here", "answer_start": 4}]},
        {"question": "q2", "context": "c2", "answers": []},
    ]
    path = _write(tmp_path / "qa.jsonl", "\n".join(json.dumps(r) for r in rows))  # no final newline
    ex = fd.read_squad_jsonl(path)
    assert ex[0] == fd.SpanExample("a", "q", "ctx here", [("here", 4)], False)
    assert ex[1].qid == "qa.jsonl-2" and ex[1].is_impossible and ex[1].answers == []
    bad = _write(tmp_path / "bad.jsonl",
                 json.dumps({"question": "q", "context": "c", "answers": [{"text": "c"}]}))
    with pytest.raises(ValueError, match=r"bad.jsonl:1: bad answer"):
        fd.read_squad_jsonl(bad)


def test_conll_docstart_columns_and_blank_lines(tmp_path):
    text = (
        "-DOCSTART- -X- -X- O\n\n"
        "EU NNP B-NP B-ORG\nrejects VBZ B-VP O\nGerman JJ B-NP B-MISC\n\n\n"
        "Peter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n\n"
        "-DOCSTART- -X- -X- O\n\n"
        "BRUSSELS NNP B-NP B-LOC"  # last sentence without a trailing blank line
    )
    path = _write(tmp_path / "c.conll", text)
    ex = fd.read_conll(path)
    assert ex == [
        fd.TaggingExample(["EU", "rejects", "German"], ["B-ORG", "O", "B-MISC"]),
        fd.TaggingExample(["Peter", "Blackburn"], ["B-PER", "I-PER"]),
        fd.TaggingExample(["BRUSSELS"], ["B-LOC"]),
    ]
    assert ex[1].source.endswith("c.conll:8")
    assert fd.read_conll(path, tag_column=1)[0].tags == ["NNP", "VBZ", "JJ"]
    assert fd.read_conll(path, tag_column=None)[0].tags is None
    enc = LabelMap.from_examples(ex).encode_tags(ex)
    assert [a.tolist() for a in enc] == [[2, 5, 1], [3, 4], [0]]  # B-LOC B-MISC B-ORG B-PER I-PER O


def test_conll_tab_delimiter_keeps_spaces(tmp_path):
    path = _write(tmp_path / "t.conll", "New York\tB-LOC\nis\tO\n")
    assert fd.read_conll(path, delimiter="\t")[0].words == ["New York", "is"]


# ---------------------------------------------------------------- label maps


def test_missing_files_name_the_pattern(tmp_path):
    missing = str(tmp_path / "nope.tsv")
    with pytest.raises(FileNotFoundError, match="nope.tsv"):
        fd.read_tsv(missing)
    with pytest.raises(FileNotFoundError, match=r"\*.conll"):
        fd.read_conll(str(tmp_path / "*.conll"))
    with pytest.raises(FileNotFoundError, match="nope.json"):
        fd.read_squad_json(str(tmp_path / "nope.json"))
    with pytest.raises(FileNotFoundError, match="nope.tsv"):
        fd.read_tsv([fd.bundled_task_path("wordnet_topics", "dev"), missing])


def test_wrong_column_count_names_file_line_row(tmp_path):
    path = _write(tmp_path / "bad.tsv", "1\ta\tb\n0\tc\td\n1\tonly two\n")
    with pytest.raises(ValueError,
                       match=r"bad.tsv:3: expected 3 columns, got 2: \['1', 'only two'\]"):
        fd.read_tsv(path, text_b_column=2)
    path = _write(tmp_path / "bad.csv", "label,text\n1,a\n0,b,extra\n")
    with pytest.raises(ValueError, match=r"bad.csv:3: expected 2 columns, got 3"):
        fd.read_csv(path, header=True, text_a_column="text", label_column="label")
    path = _write(tmp_path / "bad.conll", "a O\nb\n")
    with pytest.raises(ValueError, match=r"bad.conll:2: expected 2 columns, got 1: 'b'"):
        fd.read_conll(path)
    with pytest.raises(ValueError, match=r"'sentence' is not in the header"):
        fd.read_csv(str(tmp_path / "bad.csv"), header=True, text_a_column="sentence")
    with pytest.raises(ValueError, match="without a header"):
        fd.read_tsv(str(tmp_path / "bad.tsv"), text_a_column="text")


def test_empty_labels_are_refused_except_multi_label(tmp_path):
    from bert_keras.errors import InputError

    path = _write(tmp_path / "e.tsv", "1\ta\n \tb\n0\tc\n")
    with pytest.raises(InputError, match=r"e.tsv:2: empty label \(column 0\)"):
        fd.read_tsv(path)
    with pytest.raises(InputError, match=r"e.tsv:2: empty label"):
        fd.read_tsv(path, label_type="regression")
    assert [ex.label for ex in fd.read_tsv(path, label_type="multi")] == [["1"], [], ["0"]]
    assert [ex.label for ex in fd.read_tsv(path, label_column=None)] == [None] * 3  # unlabeled
    path = _write(tmp_path / "e.jsonl", '{"text": "a", "label": "x"}\n{"text": "b", "label": ""}\n')
    with pytest.raises(InputError, match=r"e.jsonl:2: empty label \(field 'label'\)"):
        fd.read_jsonl(path)
    path = _write(tmp_path / "n.jsonl",
                  '{"text": "a", "label": "x"}\n{"text": "b", "label": null}\n')
    with pytest.raises(InputError, match=r"n.jsonl:2: label field 'label' is null"):
        fd.read_jsonl(path, label_type="multi")
    path = _write(tmp_path / "e.conll", "a\tO\nb\t\n", compress=False)
    with pytest.raises(InputError, match=r"e.conll:2: empty tag"):
        fd.read_conll(path, delimiter="\t")


@pytest.mark.parametrize("content,label_type,value", [
    ("label\ttext\npos\ta\nneg\tb\npos\tc\n", "single", "label"),  # a label column's name
    ("Quality\ta\tb\n1\tx\ty\n0\tz\tw\n", "single", "Quality"),  # GLUE MRPC
    ("is_same\ta\n1\tx\n0\ty\n", "single", "is_same"),  # the only non-number over 0/1
    ("score\ta\n0.5\tx\n4\ty\n", "regression", "score"),  # GLUE STS-B
    ("labels\ttext\na,b\tx\nb\ty\n", "multi", "labels"),
])
def test_a_header_row_read_as_data_is_refused(tmp_path, content, label_type, value):
    from bert_keras.errors import InputError

    path = _write(tmp_path / "h.tsv", content)
    with pytest.raises(InputError,
                       match=rf"h.tsv:1: label '{value}' looks like a column name.*--header"):
        fd.read_tsv(path, label_type=label_type)
    examples = fd.read_tsv(path, header=True, label_column=0, label_type=label_type)
    assert len(examples) == content.count("\n") - 1 and examples[0].source.endswith("h.tsv:2")


def test_a_first_row_label_like_the_others_is_data(tmp_path):
    # A class seen once, first, is data unless it names a column or breaks integer labels.
    for content in ("rare\ta\npos\tb\nneg\tc\npos\td\n", "7\ta\n1\tb\n0\tc\n",
                    "pos\ta\nneg\tb\npos\tc\n", "label\ta\nlabel\tb\n"):
        assert len(fd.read_tsv(_write(tmp_path / "d.tsv", content))) == content.count("\n")
    regression = fd.read_tsv(_write(tmp_path / "r.tsv", "3.5\ta\n1\tb\n"),
                             label_type="regression")
    assert regression[0].label == 3.5


def test_invalid_utf8_names_file_and_line(tmp_path):
    path = _write(tmp_path / "latin1.tsv", "1\tok\n0\tcaf\xe9\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1.tsv:2: invalid UTF-8"):
        fd.read_tsv(path)
    path = _write(tmp_path / "latin1.conll.gz", "a O\n\nb O\nc\xe9 O\n".encode("latin-1"),
                  compress=True)
    with pytest.raises(ValueError, match=r"latin1.conll.gz:4: invalid UTF-8"):
        fd.read_conll(path)


def test_empty_files(tmp_path):
    for name, reader in [("e.tsv", fd.read_tsv), ("e.jsonl", fd.read_jsonl),
                         ("e.conll", fd.read_conll), ("e.json", fd.read_squad_json),
                         ("e.qa.jsonl", fd.read_squad_jsonl)]:
        with pytest.raises(ValueError, match=f"{name} is empty"):
            reader(_write(tmp_path / name, ""))
    with pytest.raises(ValueError, match="e.tsv.gz is empty"):
        fd.read_tsv(_write(tmp_path / "e.tsv.gz", "\n\n", compress=True))
    with pytest.raises(ValueError, match="header.csv has no data rows"):
        fd.read_csv(_write(tmp_path / "header.csv", "label,text\n"), header=True)
    with pytest.raises(ValueError, match="doc.conll has no sentences"):
        fd.read_conll(_write(tmp_path / "doc.conll", "-DOCSTART- O\n\n"))
