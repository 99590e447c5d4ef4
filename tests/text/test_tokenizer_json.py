"""Checkpoint directories with only tokenizer.json (+ tokenizer_config.json), as transformers 5
may save them: `load_tokenizer` converts them to the classic files (cached) and tokenizes as
the full directory's tokenizer does."""

import json
import os
import pathlib
import shutil

import pytest

from bert_keras.errors import InputError
from bert_keras.text import tokenizer_json
from bert_keras.text.tokenizer_json_files import classic_files
from bert_keras.text.tokenizers import load_tokenizer

FAMILIES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "families"
TEXTS = json.loads((FAMILIES / "texts.json").read_text(encoding="utf-8"))["texts"]
CLASSIC = {"vocab.txt", "vocab.json", "merges.txt", "spiece.model"}


pytestmark = pytest.mark.usefixtures("own_tokenizer_cache")  # tests/text/conftest.py


def json_only(name, tmp_path, drop=CLASSIC):
    """A copy of fixture `name` without its classic tokenizer files."""
    target = tmp_path / f"{name}_json_only"
    shutil.copytree(FAMILIES / name, target,
                    ignore=lambda _, names: [n for n in names if n in drop])
    return target


@pytest.mark.parametrize("name, kind", [("distilbert", "WordPieceTokenizer"),
                                        ("roberta", "ByteBpeTokenizer")])
def test_tokenizer_json_gives_the_same_ids(name, kind, tmp_path):
    full = load_tokenizer(str(FAMILIES / name))
    directory = json_only(name, tmp_path)
    tokenizer = load_tokenizer(str(directory))
    assert type(tokenizer).__name__ == kind
    assert tokenizer.tokenize(TEXTS).to_list() == full.tokenize(TEXTS).to_list()
    assert tokenizer.lower_case == full.lower_case
    assert tokenizer.vocab == full.vocab
    assert (tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id, tokenizer.mask_id) == (
        full.cls_id, full.sep_id, full.pad_id, full.mask_id)
    cache = tokenizer_json.cache_root()
    for asset_name, path in tokenizer.asset_files.items():
        assert os.path.isfile(path) and os.path.basename(path) == asset_name
        assert os.path.commonpath([path, cache]) == cache
    # save() writes the classic files: the saved directory loads without tokenizer.json.
    (tmp_path / "saved").mkdir()
    tokenizer.save(str(tmp_path / "saved"))
    again = load_tokenizer(str(tmp_path / "saved"))
    assert again.tokenize(TEXTS).to_list() == full.tokenize(TEXTS).to_list()


def test_conversion_is_cached_and_leaves_no_temporaries(tmp_path):
    directory = json_only("roberta", tmp_path)
    first = load_tokenizer(str(directory))
    second = load_tokenizer(str(directory))
    assert first.vocab_file == second.vocab_file
    assert [n for n in os.listdir(tokenizer_json.cache_root()) if n.startswith(".")] == []
    assert len(os.listdir(tokenizer_json.cache_root())) == 1
    # A cache directory a temp cleaner emptied is rebuilt.
    os.remove(first.merges_file)
    third = load_tokenizer(str(directory))
    assert third.merges_file == first.merges_file and os.path.isfile(third.merges_file)
    assert os.listdir(tokenizer_json.cache_root()) == [os.path.basename(
        os.path.dirname(first.vocab_file))]


def test_merges_as_strings_and_as_pairs_agree(tmp_path):
    directory = json_only("roberta", tmp_path)
    spec = json.loads((directory / "tokenizer.json").read_text(encoding="utf-8"))
    files = classic_files(json.dumps(spec).encode())
    assert files["merges.txt"] == (FAMILIES / "roberta" / "merges.txt").read_text("utf-8")
    spec["model"]["merges"] = [" ".join(pair) if isinstance(pair, list) else pair
                               for pair in spec["model"]["merges"]]
    assert classic_files(json.dumps(spec).encode()) == files


def test_lower_case_override_and_config_casing(tmp_path):
    directory = json_only("distilbert", tmp_path)
    assert load_tokenizer(str(directory), lower_case=False).lower_case is False
    assert load_tokenizer(str(directory)).lower_case is True
    # tokenizer_config.json's do_lower_case wins over the normalizer's lowercase.
    config = json.loads((directory / "tokenizer_config.json").read_text(encoding="utf-8"))
    (directory / "tokenizer_config.json").write_text(json.dumps(dict(config,
                                                                     do_lower_case=False)))
    assert load_tokenizer(str(directory)).lower_case is False


def test_cased_wordpiece(tmp_path):
    directory = json_only("distilbert", tmp_path, drop=CLASSIC | {"tokenizer_config.json"})
    spec = json.loads((directory / "tokenizer.json").read_text(encoding="utf-8"))
    assert spec["normalizer"]["type"] == "BertNormalizer"
    spec["normalizer"]["lowercase"] = False
    (directory / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    tokenizer = load_tokenizer(str(directory))
    assert tokenizer.lower_case is False
    assert tokenizer.tokenize(["Hello"]).to_list() != load_tokenizer(
        str(FAMILIES / "distilbert")).tokenize(["Hello"]).to_list()


def test_albert_without_spiece_model(tmp_path):
    directory = json_only("albert", tmp_path)
    with pytest.raises(InputError) as error:
        load_tokenizer(str(directory))
    message = str(error.value)
    assert "spiece.model" in message and str(directory) in message and "\n" not in message


@pytest.mark.parametrize("text, problem", [
    ('{"model": {"type": "WordPiece", "vocab": {"a": 0}', "not valid JSON"),
    ("[1, 2]", "has no model"),
    ('{"model": {"type": "WordLevel", "vocab": {"a": 0}}}', "WordLevel"),
    ('{"model": {"type": "WordPiece"}}', "model.vocab"),
    ('{"model": {"type": "WordPiece", "vocab": {"[PAD]": 0, "[UNK]": 2}}}', "ids"),
    ('{"model": {"type": "WordPiece", "continuing_subword_prefix": "@@", "vocab": {"a": 0}}}',
     "continuing_subword_prefix"),
    ('{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, '
     '"pre_tokenizer": {"type": "Metaspace"}}', "ByteLevel"),
    ('{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a"]]}, '
     '"pre_tokenizer": {"type": "ByteLevel"}}', "merges"),
])
def test_bad_tokenizer_json(text, problem, tmp_path):
    directory = tmp_path / "bad"
    directory.mkdir()
    (directory / "tokenizer.json").write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as error:
        load_tokenizer(str(directory))
    message = str(error.value)
    assert str(directory / "tokenizer.json") in message and problem in message, message
    assert "\n" not in message


def test_corrupt_fixture_tokenizer_json(tmp_path):
    directory = json_only("distilbert", tmp_path)
    data = (directory / "tokenizer.json").read_bytes()
    (directory / "tokenizer.json").write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="tokenizer.json: not valid JSON"):
        load_tokenizer(str(directory))
    assert not os.path.exists(tokenizer_json.cache_root()) or not os.listdir(
        tokenizer_json.cache_root())


def test_missing_special_tokens_name_the_tokenizer_json(tmp_path):
    directory = tmp_path / "nospecials"
    directory.mkdir()
    (directory / "tokenizer.json").write_text(json.dumps({"model": {
        "type": "WordPiece", "vocab": {"[PAD]": 0, "[UNK]": 1, "a": 2}}}), encoding="utf-8")
    with pytest.raises(InputError) as error:
        load_tokenizer(str(directory))
    assert str(directory / "tokenizer.json") in str(error.value)
    assert "[CLS]" in str(error.value)
