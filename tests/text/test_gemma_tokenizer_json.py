"""A ModernBERT directory whose tokenizer.json is Gemma-style (mmBERT's: BPE with byte
fallback, spaces as "▁", the text one word between added tokens): `load_tokenizer` tokenizes
in the graph as transformers does (ids, offsets, words, packing, added tokens in the text;
tests/fixtures/make_gemma_tokenizer_json.py), eagerly, in tf.data and served by an
export; what it does not compute is refused in one line naming the file."""

import json
import pathlib
import shutil

import pytest
import tensorflow as tf
from tokenizer_reference import assert_tokenizes_as_reference

import bert_keras as bk
from bert_keras.errors import InputError
from bert_keras.serving import export
from bert_keras.text.metaspace_bpe_tokenizer import SETTINGS_FILE, MetaspaceBpeTokenizer
from bert_keras.text.tokenizers import load_tokenizer

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
FIXTURE = FIXTURES / "modernbert_gemma_tokenizer_json"
REFERENCE = json.loads((FIXTURE / "reference.json").read_text(encoding="utf-8"))
TEXTS, ROWS = REFERENCE["texts"], REFERENCE["rows"]


pytestmark = pytest.mark.usefixtures("own_tokenizer_cache")  # tests/text/conftest.py


@pytest.mark.parametrize("across_spaces", [False, True], ids=["gemma", "across spaces"])
def test_ids_offsets_and_words_equal_transformers(tmp_path, across_spaces):
    """Gemma's vocabulary (merged in parts cut before "▁") and one whose pieces cross spaces
    (merged whole)."""
    directory, rows = FIXTURE, ROWS
    if across_spaces:
        directory = tmp_path / "across_spaces"
        shutil.copytree(FIXTURE, directory)
        shutil.copy(FIXTURE / "tokenizer_across_spaces.json", directory / "tokenizer.json")
        rows = REFERENCE["rows_across_spaces"]
    tokenizer = load_tokenizer(str(directory))
    assert type(tokenizer) is MetaspaceBpeTokenizer
    assert tokenizer._cut_at_spaces is not across_spaces
    assert (tokenizer.pad_id, tokenizer.sep_id, tokenizer.cls_id, tokenizer.unk_id,
            tokenizer.mask_id) == (0, 1, 2, 3, 4)
    want = [row["ids"] for row in rows]
    assert any(5 <= i < 5 + 256 for row in want for i in row)  # byte-fallback pieces
    assert_tokenizes_as_reference(tokenizer, TEXTS, rows)
    # The template's packing: [CLS] A [SEP] and [CLS] A [SEP] B [SEP] with <bos> and <eos>.
    cls, sep = tokenizer.cls_id, tokenizer.sep_id
    if not across_spaces:
        assert REFERENCE["single"] == [cls] + want[0] + [sep]
        assert REFERENCE["pair"] == [cls] + want[0] + [sep] + want[1] + [sep]
    assert tokenizer.separators_between == 1 and not tokenizer.pair_type_ids
    text = "Héllo  wörld 🦄 東京"
    assert tokenizer.detokenize(tokenizer.tokenize([text])).numpy()[0].decode() == text


def test_the_export_serves_transformers_ids(tmp_path):
    """An encoder export of ModernBERT's fixture weights with this tokenizer.json ships the
    converted files, and its `preprocess` signature, reloaded, packs transformers' ids."""
    directory = tmp_path / "mmbert_like"
    directory.mkdir()
    shutil.copy(FIXTURES / "families" / "modernbert" / "model.safetensors", directory)
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(FIXTURE / name, directory)
    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    weights = json.loads((FIXTURES / "families" / "modernbert" / "config.json").read_text())
    config["vocab_size"] = weights["vocab_size"]  # rows beyond the tokenizer's: never looked up
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    seq_length = 32
    path = export.run_export(bk.ExportConfig(
        encoder_dir=str(directory), export_dir_base=str(tmp_path / "saved"),
        seq_length=seq_length, dtype="float32"))
    assert (pathlib.Path(path) / "assets" / SETTINGS_FILE).is_file()
    out = tf.saved_model.load(path).signatures["preprocess"](text=tf.constant(TEXTS))
    ids, mask = out["input_word_ids"].numpy(), out["input_mask"].numpy()
    for i, row in enumerate(ROWS):
        served = ids[i][mask[i] == 1].tolist()
        assert served == [2] + row["ids"][:seq_length - 2] + [1], repr(TEXTS[i])


def _spec():
    return json.loads((FIXTURE / "tokenizer.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("change, problem", [
    (lambda spec: spec.update(normalizer={"type": "NFKC"}),
     "tokenizer.json: a BPE model with byte_fallback whose normalizer is not Replace"),
    (lambda spec: spec.update(pre_tokenizer={"type": "Whitespace"}),
     "tokenizer.json: a Gemma-style BPE whose pre_tokenizer is 'Whitespace'"),
    (lambda spec: spec["post_processor"]["single"].pop(),
     "tokenizer.json: its post_processor is not a template [CLS] $A [SEP]"),
    (lambda spec: spec["added_tokens"][4].update(lstrip=True),
     "tokenizer.json: added_tokens has {'id': 4, 'content': '<mask>'"),
], ids=["normalizer", "pre-tokenizer", "template", "lstrip"])
def test_what_it_does_not_compute_is_one_line_naming_the_file(tmp_path, change, problem):
    directory = tmp_path / "mmbert_like"
    shutil.copytree(FIXTURE, directory)
    spec = _spec()
    change(spec)
    (directory / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(InputError) as error:
        load_tokenizer(str(directory))
    message = str(error.value)
    assert problem in message and str(directory) in message and "\n" not in message, message
