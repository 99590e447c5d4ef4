"""The transformers writer (`bk.save_transformers`, tools/convert_checkpoint.py
--output_format=transformers), without torch:

- every family fixture (encoders with their pretraining heads, fine-tuned heads) read into
  bert_keras and written again gives back every tensor bit for bit, and config.json's fields;
- the written tokenizer files give the fixtures' ids: tokenizer.json as transformers wrote it,
  through the `tokenizers` library, and through our own loader;
- transformers' AutoModelFor* on the written directories (tests/fixtures/writer_references.*,
  made by tests/fixtures/make_writer_references.py) computes the project's outputs within
  1e-4, from the tensors and files the writer still writes (their sha256), and the
  text-classification pipeline on a classifier that tools/finetune.py trained answers the
  tool's test predictions;
- what no transformers class computes is refused in one line, and nothing is written.
"""

import hashlib
import importlib.util
import json
import os
import pathlib

import numpy as np
import pytest

import bert_keras as bk
from bert_keras.checkpoints.safetensors import read_safetensors
from bert_keras.checkpoints.transformers_writer import transformers_contents
from bert_keras.errors import InputError
from bert_keras.families import FAMILIES
from bert_keras.text.tokenizers import load_tokenizer

import tool_runner  # tests/support: tools forked without their imports

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "families"
TEXTS = json.loads((FIXTURES / "texts.json").read_text())
TOLERANCE = 1e-4

_spec = importlib.util.spec_from_file_location(
    "make_writer_references", ROOT / "tests" / "fixtures" / "make_writer_references.py")
generator = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generator)
REFERENCES = json.loads((ROOT / "tests" / "fixtures" / "writer_references.json").read_text())
ARRAYS = np.load(ROOT / "tests" / "fixtures" / "writer_references.npz")

# config.json keys that transformers reads for the model's shape and math, compared where the
# fixture's config names them.
NOT_COMPARED = {"position_embedding_type", "problem_type"}  # absent from the fixtures: defaults


def read_json(path):
    return json.loads(pathlib.Path(path).read_text())


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """{case: (model, tokenizer, directory)}: each case written once, lazily."""
    root = tmp_path_factory.mktemp("written")
    cache = {}

    def get(name):
        if name not in cache:
            model, tokenizer, labels, model_type = generator.load(name)
            bk.save_transformers(model, root / name, tokenizer=tokenizer,
                                 model_type=model_type, labels=labels)
            cache[name] = (model, tokenizer, root / name)
        return cache[name]

    return get


# -- round trip: transformers -> bert_keras -> transformers ---------------------------------

# XLM-RoBERTa's fixtures too (its references are not in the generator's cases yet).
XLM_ROBERTA = ["xlm_roberta", "xlm_roberta_classifier", "xlm_roberta_tagger", "xlm_roberta_qa"]


@pytest.mark.parametrize("name", generator.FIXTURES + XLM_ROBERTA)
def test_round_trip_gives_every_tensor_back(name, written):
    _, _, directory = written(name)
    theirs = read_safetensors(FIXTURES / name / "model.safetensors")
    ours = read_safetensors(directory / "model.safetensors")
    assert sorted(ours) == sorted(theirs)
    for tensor, value in theirs.items():
        assert ours[tensor].dtype == value.dtype and ours[tensor].shape == value.shape, tensor
        assert ours[tensor].tobytes() == value.tobytes(), tensor
    original = read_json(FIXTURES / name / "config.json")
    config = read_json(directory / "config.json")
    differ = {k: (original[k], v) for k, v in config.items()
              if k in original and k not in NOT_COMPARED and original[k] != v}
    assert not differ
    assert config["architectures"] == original["architectures"]
    assert config["model_type"] == original["model_type"]
    family = FAMILIES[config["model_type"]]
    assert family.encoder_config(config, name) == family.encoder_config(original, name)
    for key in ("id2label", "label2id"):
        assert config.get(key) == original.get(key)
    # And it reads back: the same encoder architecture and tokenizer, the same task type.
    assert (bk.BertEncoder.from_pretrained(str(directory)).architecture
            == bk.BertEncoder.from_pretrained(str(FIXTURES / name)).architecture)


# Multiple choice: every family's *ForMultipleChoice fixture (tests/fixtures/multiple_choice,
# made by make_multiple_choice_references.py), its tokenizer files beside it.
CHOICES = ROOT / "tests" / "fixtures" / "multiple_choice"
CHOICE_SOURCES = json.loads((CHOICES / "sources.json").read_text())


@pytest.mark.parametrize("name", sorted(CHOICE_SOURCES))
def test_multiple_choice_round_trip_gives_every_tensor_back_and_reads_back(name, tmp_path):
    """transformers -> BertMultipleChoice -> <Family>ForMultipleChoice: every tensor bit for
    bit, transformers' config, and our reader takes it back to the same weights and logits."""
    import shutil

    source = tmp_path / "source"
    shutil.copytree(FIXTURES / CHOICE_SOURCES[name], source, ignore=shutil.ignore_patterns(
        "config.json", "model.safetensors", "*.npz", "multilingual.json", "answers.json"))
    for file in ("config.json", "model.safetensors"):
        shutil.copyfile(CHOICES / name / file, source / file)
    model = bk.BertMultipleChoice.from_pretrained(source, seq_length=64)
    bk.save_transformers(model, tmp_path / "written")
    theirs = read_safetensors(CHOICES / name / "model.safetensors")
    ours = read_safetensors(tmp_path / "written" / "model.safetensors")
    assert sorted(ours) == sorted(theirs)
    for tensor, value in theirs.items():
        assert ours[tensor].tobytes() == value.tobytes(), tensor
    original = read_json(CHOICES / name / "config.json")
    config = read_json(tmp_path / "written" / "config.json")
    assert config["architectures"] == original["architectures"]
    differ = {k: (original[k], v) for k, v in config.items()
              if k in original and k not in NOT_COMPARED | {"id2label", "label2id"}
              and original[k] != v}
    assert not differ
    again = bk.BertMultipleChoice.from_pretrained(tmp_path / "written", seq_length=64)
    for mine, back in zip(model.weights, again.weights):
        np.testing.assert_array_equal(back.numpy(), mine.numpy(), err_msg=mine.path)
    reference = np.load(CHOICES / name / "reference.npz")
    ids = reference["two_input_ids"]
    inputs = {"input_word_ids": ids, "input_mask": reference["two_attention_mask"],
              "input_type_ids": (reference["two_token_type_ids"]
                                 if "two_token_type_ids" in reference else np.zeros_like(ids))}
    np.testing.assert_allclose(np.asarray(again(inputs, training=False)),
                               reference["two_logits"], atol=TOLERANCE)


def test_a_multiple_choice_head_of_another_family_is_refused(parts, tmp_path):
    model = bk.BertMultipleChoice(parts["bert"], hidden_activation="relu")
    refused(model, parts["wordpiece"], tmp_path, r"multiple-choice head has "
            r"hidden_activation='relu'; transformers' bert head has None", model_type="bert")
    # ModernBertForMultipleChoice normalizes after its dense-gelu; a head without it is refused.
    modern = bk.BertMultipleChoice.from_pretrained(FIXTURES / "modernbert", seq_length=64,
                                                   hidden_norm=False)
    assert modern.hidden_activation == "gelu"
    refused(modern, None, tmp_path, r"multiple-choice head has hidden_norm=False; "
            r"transformers' modernbert head has a layer norm there")


# -- tokenizer files ------------------------------------------------------------------------

# The fixtures of the three tokenizer kinds and the ones of the other WordPiece families.
TOKENIZER_CASES = {"distilbert": "distilbert", "roberta": "roberta", "albert": "albert",
                   "electra_discriminator": "electra_discriminator",
                   "bert_tagger": "distilbert"}


@pytest.mark.parametrize("name", sorted(TOKENIZER_CASES))
def test_written_tokenizer_gives_the_fixtures_ids(name, written):
    _, _, directory = written(name)
    reference = np.load(FIXTURES / TOKENIZER_CASES[name] / "reference.npz")
    expected = [reference[f"text_{i}"].tolist() for i in range(len(TEXTS["texts"]))]
    # transformers' own tokenizer.json, as its AlbertTokenizer / BertTokenizer / ... wrote it.
    if (FIXTURES / TOKENIZER_CASES[name] / "tokenizer.json").exists():
        assert (read_json(directory / "tokenizer.json")
                == read_json(FIXTURES / TOKENIZER_CASES[name] / "tokenizer.json"))
    ours = load_tokenizer(str(directory))
    assert ours.tokenize(TEXTS["texts"]).to_list() == expected
    tokenizers = pytest.importorskip("tokenizers")
    library = tokenizers.Tokenizer.from_file(str(directory / "tokenizer.json"))
    assert [library.encode(t, add_special_tokens=False).ids for t in TEXTS["texts"]] == expected
    pairs = library.encode_batch([tuple(p) for p in TEXTS["pairs"]])
    for i, encoding in enumerate(pairs):
        row, mask = reference["pairs_input_ids"][i], reference["pairs_input_mask"][i] == 1
        assert encoding.ids == row[mask].tolist()


@pytest.mark.parametrize("kind", ["wordpiece", "sentencepiece"])
def test_a_cased_tokenizer_is_written_cased(kind, tmp_path):
    """Casing reaches transformers: WordPiece's lowercase (accents kept), SentencePiece's
    do_lower_case and keep_accents."""
    tokenizers = pytest.importorskip("tokenizers")
    if kind == "wordpiece":
        cased = bk.WordPieceTokenizer(str(FIXTURES / "distilbert" / "vocab.txt"), lower_case=False)
        encoder = bk.BertEncoder.from_pretrained(str(FIXTURES / "bert_qa"))
    else:
        cased = bk.SentencePieceTokenizer(str(FIXTURES / "albert" / "spiece.model"),
                                          lower_case=False, pair_type_ids=False)
        encoder = bk.BertEncoder.from_pretrained(str(FIXTURES / "albert"))
    bk.save_transformers(encoder, tmp_path / "cased", tokenizer=cased)
    config = read_json(tmp_path / "cased" / "tokenizer_config.json")
    assert config["do_lower_case"] is False
    assert config.get("keep_accents", True) is True
    library = tokenizers.Tokenizer.from_file(str(tmp_path / "cased" / "tokenizer.json"))
    texts = TEXTS["texts"] + ["THE LORD'S HOUSE", "Ångström Café"]
    assert ([library.encode(t, add_special_tokens=False).ids for t in texts]
            == cased.tokenize(texts).to_list())
    assert load_tokenizer(str(tmp_path / "cased")).lower_case is False


# -- transformers on the written directories ------------------------------------------------

CASES = sorted(REFERENCES["fixtures"])


def sha256(data):
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("name", CASES)
def test_the_writer_writes_what_transformers_read(name, written):
    reference = REFERENCES["fixtures"][name]
    _, _, directory = written(name)
    tensors = read_safetensors(directory / "model.safetensors")
    hashes = {n: sha256(v.astype("<f4").tobytes()) for n, v in tensors.items()}
    assert hashes == reference["tensors"]
    files = {p.name: sha256(p.read_bytes()) for p in directory.iterdir()
             if p.name != "model.safetensors"}
    assert files == reference["files"]
    assert read_json(directory / "config.json")["architectures"] == [reference["architecture"]]


def our_outputs(model, inputs, positions):
    """The project's outputs on `inputs`, keyed by transformers' names."""
    if isinstance(model, bk.ElectraPretrainer):
        sequence = model.encoder(inputs)["sequence_output"]
        return {"logits": model.discriminator_head(sequence)}
    if isinstance(model, bk.BertEncoder):
        out = model(inputs)
        return {"last_hidden_state": out["sequence_output"], "pooler_output": out["pooled_output"]}
    if isinstance(model, bk.BertPretrainer):
        rows = inputs["input_word_ids"].shape[0]
        out = model({**inputs, "masked_lm_positions": np.tile(np.arange(positions, dtype="int32"),
                                                              (rows, 1))})
        pair = "seq_relationship_logits" if model.next_sentence else None
        mlm = "prediction_logits" if model.next_sentence else "logits"
        return {mlm: out["masked_lm"], **({pair: out["next_sentence"]} if pair else {})}
    out = model(inputs)
    return out if isinstance(out, dict) else {"logits": out}


@pytest.mark.parametrize("name", CASES)
def test_transformers_computes_the_projects_outputs(name, written):
    model, tokenizer, _ = written(name)
    reference = REFERENCES["fixtures"][name]
    preprocessor = bk.BertPreprocessor(tokenizer, seq_length=64, pad_to_longest=True)
    worst = 0.0
    for batch, texts in (("singles", (TEXTS["singles"],)),
                         ("pairs", tuple(zip(*TEXTS["pairs"])))):
        ids = ARRAYS[f"{name}/{batch}/input_ids"]
        mask = ARRAYS[f"{name}/{batch}/attention_mask"]
        types = (ARRAYS[f"{name}/{batch}/token_type_ids"] if "token_type_ids" in reference["inputs"]
                 else np.zeros_like(ids))
        # Our packing of the texts is transformers' (the types it does not send are zeros).
        packed = {k: v.numpy() for k, v in preprocessor(*texts).items()}
        np.testing.assert_array_equal(packed["input_word_ids"], ids)
        np.testing.assert_array_equal(packed["input_mask"], mask)
        if getattr(model, "encoder", model).architecture["type_vocab_size"] >= 2:
            np.testing.assert_array_equal(packed["input_type_ids"], types)  # else not read
        inputs = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}
        theirs = {key.split("/")[-1]: ARRAYS[key] for key in ARRAYS.files
                  if key.startswith(f"{name}/{batch}/") and "_ids" not in key
                  and not key.endswith("attention_mask")}
        positions = generator.MLM_POSITIONS
        ours = {k: np.asarray(v) for k, v in our_outputs(model, inputs, positions).items()}
        if "sop_logits" in theirs:
            ours["sop_logits"] = ours.pop("seq_relationship_logits")
        assert set(theirs) <= set(ours), (sorted(theirs), sorted(ours))
        for key, value in theirs.items():
            mine = ours[key]
            real = mask.astype(bool)
            if mine.ndim >= 2 and mine.shape[:2] == real.shape:  # per token: the real ones
                mine, value = mine[real], value[real]
            elif mine.ndim == 3:  # masked-LM logits at the first positions
                keep = real[:, :positions]
                mine, value = mine[keep], value[keep]
            assert mine.shape == value.shape, key
            worst = max(worst, float(np.abs(mine - value).max()))
            np.testing.assert_allclose(mine, value, atol=TOLERANCE, rtol=0, err_msg=key)
    print(f"{name}: max |ours - transformers| = {worst:.2e}")


def test_the_finetuned_classifier_answers_in_transformers_as_the_tool_predicted():
    """tools/finetune.py (float32, 1 epoch on the tiny checkpoint) then
    tools/convert_checkpoint.py --output_format=transformers: transformers'
    text-classification pipeline gave the tool's test_predictions."""
    record = REFERENCES[generator.FINETUNED]
    assert record["architecture"] == "BertForSequenceClassification"
    assert len(record["test_predictions"]) == len(record["pipeline"]) >= 20
    for row, answer in zip(record["test_predictions"], record["pipeline"]):
        assert answer["label"] == row["prediction"]
        assert set(answer["scores"]) == set(row["probabilities"])
        for label, p in row["probabilities"].items():
            assert abs(answer["scores"][label] - p) <= TOLERANCE


def test_classifiers_write_their_problem_type_and_labels():
    fixtures = REFERENCES["fixtures"]  # as transformers read them
    assert fixtures["bert_multi_label"]["problem_type"] == "multi_label_classification"
    assert fixtures["bert_multi_label"]["labels"] == {"0": "law", "1": "love", "2": "war"}
    assert fixtures["bert_regression"]["problem_type"] == "regression"
    assert fixtures["roberta_tagger"]["labels"]["1"] == "B-PER"


@pytest.mark.parametrize("name", ["bert_multi_label", "bert_regression", "bert_pretraining",
                                  "albert_pretraining"])
def test_written_heads_read_back_into_the_same_model(name, written):
    """Our readers take the written directories back: task type, labels and head weights
    (`bk.load_task`), pretraining heads (NSP / SOP) (`registry.load_model`)."""
    from bert_keras.tasks.registry import load_model

    model, _, directory = written(name)
    again, _, labels, model_type = load_model(str(directory))
    assert type(again) is type(model)
    assert model_type == FAMILIES[read_json(directory / "config.json")["model_type"]].MODEL_TYPE
    ours = {v.path: v.numpy() for v in model.weights}
    theirs = {v.path: v.numpy() for v in again.weights}
    assert sorted(ours) == sorted(theirs)
    for path, value in ours.items():
        np.testing.assert_array_equal(theirs[path], value, err_msg=path)
    if name == "bert_multi_label":
        assert labels == ["law", "love", "war"] and again.problem_type == "multi_label"


def test_a_pretraining_task_directory_is_written_as_its_model(written, tmp_path):
    """tools/pretrain.py's final/ (a task directory holding a BertPretrainer): the tool reads
    it (`registry.load_model`) and writes what the model itself writes."""
    from bert_keras.tasks.registry import load_model

    model, tokenizer, directory = written("bert_pretraining")
    bk.save_task(str(tmp_path / "run" / "final"), model, tokenizer, task="pretraining",
                 seq_length=64)
    again, again_tokenizer, labels, model_type = load_model(str(tmp_path / "run"))
    assert isinstance(again, bk.BertPretrainer) and labels is None and model_type is None
    bk.save_transformers(again, tmp_path / "hf", tokenizer=again_tokenizer)
    for name in ("model.safetensors", "config.json", "tokenizer.json", "vocab.txt"):
        assert (tmp_path / "hf" / name).read_bytes() == (directory / name).read_bytes(), name


def test_an_electra_pretrainer_writes_its_discriminator_or_its_generator(tmp_path):
    """ElectraForPreTraining: the discriminator, its shared embeddings plus the disentangled
    deltas it reads (GDES); ElectraForMaskedLM (generator=True): the generator, reading the
    shared embeddings as they are; each reads back into the same weights."""
    from bert_keras.tasks.registry import load_model

    source = FIXTURES / "electra_discriminator"
    tokenizer = load_tokenizer(str(source))
    electra = bk.ElectraPretrainer(bk.BertEncoder.from_pretrained(str(source)),
                                   disentangled_embeddings=True)
    for delta in electra.embedding_deltas:
        delta.assign(np.full(delta.shape, 0.5, "float32"))
    _, config, tensors = transformers_contents(electra, tokenizer)
    assert config["architectures"] == ["ElectraForPreTraining"]
    table = electra.encoder.token_embedding.embeddings.numpy()
    np.testing.assert_array_equal(tensors["electra.embeddings.word_embeddings.weight"],
                                  table + np.float32(0.5))
    assert "discriminator_predictions.dense_prediction.weight" in tensors

    bk.save_transformers(electra, tmp_path / "generator", tokenizer=tokenizer, generator=True)
    config = read_json(tmp_path / "generator" / "config.json")
    assert config["architectures"] == ["ElectraForMaskedLM"]
    assert (config["hidden_size"], config["embedding_size"]) == (8, 16)
    again, _, _, model_type = load_model(str(tmp_path / "generator"))
    assert model_type == "electra" and isinstance(again, bk.BertPretrainer)
    ours = [v.numpy() for v in electra.generator.weights + electra.generator_head.weights
            if "token_embedding" not in v.path]
    theirs = [v.numpy() for v in again.encoder.weights + again.masked_lm_head.weights
              if "token_embedding" not in v.path]
    assert len(ours) == len(theirs)
    for mine, value in zip(ours, theirs):
        np.testing.assert_array_equal(mine, value)
    np.testing.assert_array_equal(again.encoder.token_embedding.embeddings.numpy(), table)


# -- what transformers cannot hold ----------------------------------------------------------

@pytest.fixture(scope="module")
def parts():
    """Encoders and tokenizers of the fixtures."""
    return dict(
        bert=bk.BertEncoder.from_pretrained(str(FIXTURES / "bert_qa")),
        wordpiece=load_tokenizer(str(FIXTURES / "bert_qa")),
        roberta=bk.BertEncoder.from_pretrained(str(FIXTURES / "roberta")),
        bpe=load_tokenizer(str(FIXTURES / "roberta")),
        spiece=load_tokenizer(str(FIXTURES / "albert")))


def refused(model, tokenizer, tmp_path, match, **kwargs):
    target = tmp_path / "out"
    with pytest.raises(InputError, match=match) as error:
        bk.save_transformers(model, target, tokenizer=tokenizer, **kwargs)
    assert "\n" not in str(error.value)
    assert not target.exists() and not any(tmp_path.iterdir())  # nothing written
    return str(error.value)


def test_a_distilbert_with_token_types_is_refused(parts, tmp_path):
    refused(parts["bert"], parts["wordpiece"], tmp_path,
            r"a transformers DistilBERT model cannot hold type_vocab_size=2",
            model_type="distilbert")


def test_roberta_positions_must_start_after_the_pad_id(parts, tmp_path):
    arch = dict(parts["roberta"].architecture, position_offset=0)
    refused(bk.BertEncoder(**arch), parts["bpe"], tmp_path,
            r"numbers positions from its pad id \+ 1 \(1 \+ 1.*position_offset is 0")


def test_an_encoder_no_family_holds_names_each_familys_reason(parts, tmp_path):
    """A WordPiece encoder with factorized embeddings and a pooler: BERT has no projection,
    DistilBERT no token types, ELECTRA no pooler."""
    encoder = bk.BertEncoder(**dict(parts["bert"].architecture, embedding_size=16,
                                    use_pooler=True))
    message = refused(encoder, parts["wordpiece"], tmp_path,
                      r"no transformers family computes this model: bert: .*embedding_size=16")
    assert "distilbert: " in message and "electra: its encoder has a pooler" in message


def test_an_albert_must_factorize_its_embeddings(parts, tmp_path):
    refused(parts["bert"], parts["spiece"], tmp_path,
            r"ALBERT model always projects its embeddings")


def test_classifier_heads_must_be_the_familys(parts, tmp_path):
    tanh = bk.BertClassifier(parts["bert"], 3, hidden_activation="tanh")
    refused(tanh, parts["wordpiece"], tmp_path, r"hidden_activation='tanh'; transformers' bert "
            r"head has None", model_type="bert")
    assert not parts["bert"].architecture["use_pooler"]  # BertForQuestionAnswering's: none
    refused(bk.BertClassifier(parts["bert"], 3), parts["wordpiece"], tmp_path,
            r"reads the first token without a pooler")
    pooled = bk.BertEncoder(**dict(parts["roberta"].architecture, use_pooler=True))
    refused(bk.BertClassifier(pooled, 3, hidden_activation="tanh"), parts["bpe"], tmp_path,
            r"its classifier reads the pooler; transformers' roberta classifier reads the first")


def test_pretraining_heads_must_be_the_familys(parts, tmp_path):
    refused(bk.BertPretrainer(parts["roberta"], next_sentence=True), parts["bpe"], tmp_path,
            r"pair\) head has no place in transformers' roberta models")
    refused(bk.BertPretrainer(parts["roberta"], next_sentence=False, mlm_activation="relu"),
            parts["bpe"], tmp_path, r"masked-LM head's activation is 'relu'; transformers' "
            r"roberta head uses 'gelu'")


def test_weights_transformers_has_no_place_for_are_refused(parts, tmp_path):
    """A layer beside the head (a CRF's transitions, say) has nowhere to go."""
    import keras

    tagger = bk.BertTokenClassifier(parts["bert"], 5)
    tagger.crf = keras.layers.Dense(5, name="crf")
    tagger.crf.build((None, 5))
    refused(tagger, parts["wordpiece"], tmp_path, r"has weights that transformers' "
            r"BertForTokenClassification has no place for: \['crf/kernel', 'crf/bias'\]")
    refused(keras.Sequential([keras.layers.Dense(2)]), parts["wordpiece"], tmp_path,
            r"has no transformers class")


def test_a_failed_write_leaves_nothing_and_keeps_other_files(parts, tmp_path, monkeypatch):
    from bert_keras.checkpoints import transformers_writer

    def fail(path, tensors):
        pathlib.Path(path).write_bytes(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(transformers_writer, "write_safetensors", fail)
    with pytest.raises(bk.InputError, match="No space left on device"):
        bk.save_transformers(parts["bert"], tmp_path / "out", tokenizer=parts["wordpiece"])
    assert not any(tmp_path.iterdir())
    monkeypatch.undo()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(FileExistsError):
        bk.save_transformers(parts["bert"], tmp_path / "mine", tokenizer=parts["wordpiece"])
    assert os.listdir(tmp_path / "mine") == ["notes.txt"]


def test_contents_without_writing(parts):
    family, config, tensors = transformers_contents(parts["bert"], parts["wordpiece"])
    assert family.MODEL_TYPE == "bert" and config["architectures"] == ["BertModel"]
    assert "embeddings.word_embeddings.weight" in tensors  # a bare model's names: no prefix


# -- the tool -------------------------------------------------------------------------------

def run_tool(*args):
    return tool_runner.run_tool("convert_checkpoint", *args, timeout=300)


def test_the_tool_writes_a_transformers_directory_and_refuses_in_one_line(tmp_path):
    out = tmp_path / "tagger"
    result = run_tool(f"--input_dir={FIXTURES / 'electra_tagger'}", f"--output_dir={out}",
                      "--output_format=transformers")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ElectraForTokenClassification" in result.stdout
    theirs = read_safetensors(FIXTURES / "electra_tagger" / "model.safetensors")
    ours = read_safetensors(out / "model.safetensors")
    assert sorted(ours) == sorted(theirs)
    assert all(ours[n].tobytes() == v.tobytes() for n, v in theirs.items())
    result = run_tool(f"--input_dir={FIXTURES / 'bert_tagger'}", f"--output_dir={tmp_path / 'x'}",
                      "--output_format=transformers", "--model_type=distilbert")
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert "cannot hold type_vocab_size=2" in last and str(FIXTURES / "bert_tagger") in last
    assert "Traceback" not in result.stderr and not (tmp_path / "x").exists()
