"""A DeBERTa-v3 directory whose tokenizer is only tokenizer.json (transformers 5 saves no
spm.model): `load_tokenizer` rebuilds spm.model from it (tokenizer_json.convert) and tokenizes
in the graph as transformers' `DebertaV2Tokenizer` reading that directory does: ids and offsets
(tests/fixtures/make_deberta_tokenizer_json.py), eagerly, in tf.data and served by an export;
what cannot be carried over is refused in one line naming the file."""

import base64
import json
import pathlib
import shutil

import numpy as np
import pytest
from tokenizer_reference import assert_tokenizes_as_reference

import bert_keras as bk
from bert_keras.errors import InputError
from bert_keras.serving import export
from bert_keras.text.deberta_tokenizer import DebertaV3Tokenizer
from bert_keras.text.tokenizers import load_tokenizer

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
SOURCE = FIXTURES / "families" / "deberta_v3"  # the same tokenizer as spm.model
FIXTURE = FIXTURES / "deberta_v3_tokenizer_json"
REFERENCE = json.loads((FIXTURE / "reference.json").read_text(encoding="utf-8"))
TEXTS, ROWS = REFERENCE["texts"], REFERENCE["rows"]


pytestmark = pytest.mark.usefixtures("own_tokenizer_cache")  # tests/text/conftest.py


def _fields(data):
    """(field number, payload) of the length-delimited fields of a protobuf message."""
    position = 0

    def varint():
        nonlocal position
        value, shift = 0, 0
        while True:
            byte = data[position]
            value, shift, position = value | (byte & 0x7F) << shift, shift + 7, position + 1
            if byte < 0x80:
                return value

    while position < len(data):
        tag = varint()
        if tag & 7 == 2:
            size = varint()
            yield tag >> 3, data[position:position + size]
            position += size
        elif tag & 7 == 0:
            varint()
        else:
            position += 4 if tag & 7 == 5 else 8


def tokenizer_spec():
    """The fixture's tokenizer.json with the charsmap of spm.model's normalizer spec (field 3,
    its charsmap field 2) put back (the generator checked they are the same bytes)."""
    spec = json.loads((FIXTURE / "tokenizer_without_charsmap.json").read_text(encoding="utf-8"))
    (normalizer,) = [v for n, v in _fields((SOURCE / "spm.model").read_bytes()) if n == 3]
    (charsmap,) = [v for n, v in _fields(normalizer) if n == 2]
    for entry in spec["normalizer"]["normalizers"]:
        if entry["type"] == "Precompiled":
            entry["precompiled_charsmap"] = base64.b64encode(charsmap).decode()
    return spec


def json_only(tmp_path, spec=None, config=None, model=True):
    """The fixture checkpoint (config.json + weights when `model`) with tokenizer.json (`spec`)
    and transformers' tokenizer_config.json (updated with `config`), no spm.model."""
    directory = tmp_path / "deberta_json_only"
    directory.mkdir()
    if model:
        for name in ("config.json", "model.safetensors"):
            shutil.copy(SOURCE / name, directory)
    (directory / "tokenizer.json").write_text(json.dumps(spec or tokenizer_spec()),
                                              encoding="utf-8")
    settings = json.loads((FIXTURE / "tokenizer_config.json").read_text(encoding="utf-8"))
    (directory / "tokenizer_config.json").write_text(json.dumps(dict(settings, **(config or {}))),
                                                     encoding="utf-8")
    return directory


@pytest.mark.parametrize("with_config_json", [True, False])
def test_ids_and_offsets_equal_transformers(tmp_path, with_config_json):
    tokenizer = load_tokenizer(str(json_only(tmp_path, model=with_config_json)))
    assert type(tokenizer) is DebertaV3Tokenizer
    assert list(tokenizer.asset_files) == ["spm.model"]
    assert tokenizer.vocab == load_tokenizer(str(SOURCE)).vocab
    assert (tokenizer.pad_id, tokenizer.cls_id, tokenizer.sep_id, tokenizer.unk_id,
            tokenizer.mask_id) == (0, 1, 2, 3, 500)
    assert_tokenizes_as_reference(tokenizer, TEXTS, ROWS)


def _mask_in_vocab(spec):
    spec["model"]["vocab"].append(["[MASK]", 0.0])


def _transformers_4_normalizer(spec):
    (precompiled,) = [n for n in spec["normalizer"]["normalizers"] if n["type"] == "Precompiled"]
    spec["normalizer"]["normalizers"] = [
        dict(type="Strip", strip_left=True, strip_right=True), precompiled,
        dict(type="Replace", pattern=dict(Regex=" {2,}"), content=" ")]


@pytest.mark.parametrize("change", [_mask_in_vocab, _transformers_4_normalizer])
def test_variants_that_transformers_5_reads_alike(tmp_path, change):
    """[MASK] as the last piece of model.vocab, and the normalizer as transformers 4 wrote it
    (transformers 5 takes only its charsmap): the same tokenizer."""
    spec = tokenizer_spec()
    change(spec)
    tokenizer = load_tokenizer(str(json_only(tmp_path, spec)))
    assert tokenizer.vocab == load_tokenizer(str(SOURCE)).vocab and tokenizer.mask_id == 500
    assert tokenizer.tokenize(TEXTS).to_list() == [row["ids"] for row in ROWS]


@pytest.mark.parametrize("change, problem", [
    (lambda spec, config: spec["normalizer"]["normalizers"].pop(0),
     "tokenizer.json: its normalizer (Sequence of Strip, Replace) has no Precompiled charsmap"),
    (lambda spec, config: config.update(do_lower_case=True),
     "tokenizer_config.json: do_lower_case is true"),
    (lambda spec, config: spec["added_tokens"].append(dict(id=501, content="<new>")),
     "tokenizer.json: added_tokens has '<new>' (id 501)"),
], ids=["no charsmap", "lower-casing", "an added token"])
def test_what_cannot_be_carried_over_is_one_line_naming_the_file(tmp_path, change, problem):
    spec, config = tokenizer_spec(), {}
    change(spec, config)
    directory = json_only(tmp_path, spec, config)
    with pytest.raises(InputError) as error:
        load_tokenizer(str(directory))
    message = str(error.value)
    assert problem in message and str(directory) in message and "\n" not in message, message


def test_the_export_serves_transformers_ids(tmp_path):
    """A bare encoder export of the json-only directory ships the rebuilt spm.model and its
    `preprocess` signature, served without this project, packs transformers' ids."""
    from export_harness import _enc, _outputs, run_client  # tests/support

    seq_length = 32
    path = export.run_export(bk.ExportConfig(
        encoder_dir=str(json_only(tmp_path)), export_dir_base=str(tmp_path / "saved"),
        seq_length=seq_length, dtype="float32"))
    assert (pathlib.Path(path) / "assets" / "spm.model").is_file()
    texts = np.array(TEXTS, object)
    report = run_client(tmp_path, [path], {path: [["preprocess", {"text": _enc(texts)}]]})
    (result,) = [r for r in report["exports"][path] if not r["warmup"]]
    out = _outputs(result)
    for i, row in enumerate(ROWS):
        served = out["input_word_ids"][i][out["input_mask"][i] == 1].tolist()
        assert served == [1] + row["ids"][:seq_length - 2] + [2], repr(TEXTS[i])
