"""The family registry (bert_keras.families): every family module defines what the layout
readers ask of it; code outside the family modules never switches on a family name; a
transformers directory's model_type decides its tokenizer (another family's tokenizer files
are refused, by name); tools/convert_checkpoint.py carries every file of the tokenizer; a
distillation teacher of another family or vocabulary than the student's is one line."""

import json
import pathlib
import re
import shutil

import pytest

import bert_keras as bk
from bert_keras import families
from bert_keras.errors import InputError
from bert_keras.families.google_names import GoogleLayout
from bert_keras.families.transformers_names import (
    BERT_TASK_HEADS,
    TASK_HEADS,
    MaskedLMHead,
    TaskHead,
)
from bert_keras.text.tokenizers import load_tokenizer

import tool_runner  # tests/support: tools forked without their imports

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "families"
CORPUS = ROOT / "bert_keras" / "assets" / "web_bible_corpus.txt.gz"
WEIGHTS = ("model.safetensors", "reference.npz", "heads.npz", "answers.json")


# -- the registry ----------------------------------------------------------------------------

@pytest.mark.parametrize("model_type", sorted(families.FAMILIES))
def test_every_family_defines_what_the_readers_ask(model_type):
    family = families.FAMILIES[model_type]
    missing = [name for name in families.REQUIRED if not hasattr(family, name)]
    assert not missing, f"{family.__name__} lacks {missing}"
    assert family.MODEL_TYPE == model_type
    assert callable(family.encoder_config) and callable(family.encoder_name_map)
    assert isinstance(family.TOKENIZER, type) and hasattr(family.TOKENIZER, "from_pretrained")
    assert family.TOKENIZER.separators_between in (1, 2)
    assert family.TOKENIZER_FILES and all(isinstance(f, str) for f in family.TOKENIZER_FILES)
    assert isinstance(family.POOLER_TENSORS, tuple)
    assert set(family.HEADS) == set(BERT_TASK_HEADS)  # every task class has its head
    assert all(isinstance(head, TaskHead) for head in family.HEADS.values())
    assert isinstance(family.MASKED_LM_HEAD, MaskedLMHead)
    assert family.REPLACED_TOKEN_HEAD is None or isinstance(family.REPLACED_TOKEN_HEAD, str)
    assert set(TASK_HEADS) <= set(family.HEAD_PREFIXES) <= set(families.head_prefixes())
    # Every head tensor the family names is one that an encoder import skips.
    heads = [*family.MASKED_LM_HEAD[1:], family.REPLACED_TOKEN_HEAD]
    heads += [name for head in family.HEADS.values() for name in head[1:4]]
    for name in filter(None, heads):
        assert name.split(".")[0] in family.HEAD_PREFIXES, name
    assert family.GOOGLE is None or isinstance(family.GOOGLE, GoogleLayout)
    if family.GOOGLE is not None:
        assert bool(family.GOOGLE.config_file) != bool(family.GOOGLE.marker)


def test_an_unknown_model_type_names_the_path_and_the_type():
    with pytest.raises(InputError, match=r"^ckpt/config.json: model_type 'gpt2' is not one of"):
        families.get_family("gpt2", "ckpt/config.json")


@pytest.mark.parametrize("name", ["roberta", "albert", "distilbert", "electra_discriminator",
                                  "bert_tagger", "xlm_roberta", "xlm_roberta_qa"])
def test_a_transformers_directory_gets_its_family_tokenizer(name):
    config = json.loads((FIXTURES / name / "config.json").read_text(encoding="utf-8"))
    family = families.family_of_config(config, name)
    assert type(load_tokenizer(str(FIXTURES / name))) is family.TOKENIZER


# A model_type or family compared with a string or a family module (`model_type == "roberta"`,
# `family in ("bert", "roberta")`, `FAMILIES[model_type] is hf_bert`); other strings that equal
# a family's name ("--objective=electra") are not family switches.
_NAMED = r"\b\w*(model_type|family)\w*\]?"
_FAMILY_MODULE = r"\b(hf_|google_)?(bert|roberta|albert|distilbert|electra)\b"
_SWITCH = re.compile(rf"{_NAMED}\s*(==|!=|\bin\b|\bnot in\b)\s*[(\[{{]?\s*[\"']"
                     rf"|[\"']\s*(==|!=)\s*{_NAMED}|\bis\s+(not\s+)?{_FAMILY_MODULE}")


def test_no_code_outside_the_family_modules_switches_on_a_family_name():
    offenders = []
    for directory in ("bert_keras", "tools"):
        for path in sorted((ROOT / directory).rglob("*.py")):
            if "families" in path.relative_to(ROOT).parts:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if _SWITCH.search(line):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


# -- model_type decides the tokenizer, not file order ----------------------------------------

def family_copy(tmp_path, name, drop=(), add=()):
    """Fixture `name`'s config.json and tokenizer files (no weights) in tmp_path, without the
    files in `drop`, with the files in `add` (paths) beside them."""
    target = tmp_path / name
    shutil.copytree(FIXTURES / name, target,
                    ignore=lambda _, names: [n for n in names if n in WEIGHTS or n in drop])
    for path in add:
        shutil.copy(path, target)
    return target


def test_another_familys_vocab_beside_the_familys_own_files_is_ignored(tmp_path):
    # vocab.txt came first in the file order: a RoBERTa directory became a WordPiece model.
    directory = family_copy(tmp_path, "roberta", add=[FIXTURES / "distilbert" / "vocab.txt"])
    tokenizer = load_tokenizer(str(directory))
    assert type(tokenizer) is families.FAMILIES["roberta"].TOKENIZER
    assert tokenizer.vocab == load_tokenizer(str(FIXTURES / "roberta")).vocab


@pytest.mark.parametrize("name, drop, add, expected, found", [
    ("roberta", ("vocab.json", "merges.txt"), [FIXTURES / "distilbert" / "vocab.txt"],
     "vocab.json + merges.txt", "vocab.txt"),
    ("albert", ("spiece.model",), [FIXTURES / "roberta" / "vocab.json",
                                   FIXTURES / "roberta" / "merges.txt"],
     "spiece.model", "merges.txt + vocab.json"),
    ("xlm_roberta", ("sentencepiece.bpe.model",), [FIXTURES / "albert" / "spiece.model"],
     "sentencepiece.bpe.model", "spiece.model"),
])
def test_only_another_familys_tokenizer_files_are_refused_by_name(tmp_path, name, drop, add,
                                                                    expected, found):
    directory = family_copy(tmp_path, name, drop=drop, add=add)
    with pytest.raises(InputError) as error:
        load_tokenizer(str(directory))
    message = str(error.value)
    model_type = json.loads((directory / "config.json").read_text())["model_type"]
    for needle in (str(directory), f"model_type {model_type!r}", f"reads {expected}",
                   f"found are {found}"):
        assert needle in message, message
    assert "\n" not in message


def test_a_directory_without_config_json_keeps_its_files(tmp_path):
    directory = family_copy(tmp_path, "roberta", drop=("config.json",))
    assert type(load_tokenizer(str(directory))).__name__ == "ByteBpeTokenizer"


# -- tools/convert_checkpoint.py carries every tokenizer file ---------------------------------

@pytest.mark.parametrize("drop", [(), ("vocab.json", "merges.txt")], ids=["classic", "json_only"])
def test_convert_checkpoint_carries_the_byte_level_bpe_files(tmp_path, drop):
    source = tmp_path / "roberta"
    shutil.copytree(FIXTURES / "roberta", source, ignore=lambda _, names: list(drop))
    out = tmp_path / "out"
    proc = tool_runner.run_tool("convert_checkpoint", f"--input_dir={source}",
                                f"--output_dir={out}", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {"vocab.json", "merges.txt"} <= {p.name for p in out.iterdir()}
    assert "tokenizer files merges.txt, vocab.json" in proc.stdout
    converted = load_tokenizer(str(out))
    assert type(converted).__name__ == "ByteBpeTokenizer"
    assert converted.vocab == load_tokenizer(str(FIXTURES / "roberta")).vocab


# -- distillation: the teacher reads the student's ids ----------------------------------------

def pretraining_config(tmp_path, teacher, tokenizer_dir=None):
    from bert_keras.training.pretraining_config import PretrainConfig

    return PretrainConfig.from_options(
        model_dir=str(tmp_path / "run"), objective="distill", pair_mode="none",
        train_text=str(CORPUS), teacher_checkpoint=str(FIXTURES / teacher),
        tokenizer_dir=tokenizer_dir and str(FIXTURES / tokenizer_dir))


@pytest.mark.parametrize("teacher, tokenizer_dir, needles", [
    ("distilbert", "roberta", ["a WordPieceTokenizer", "against a ByteBpeTokenizer"]),
    ("distilbert", "electra_discriminator", ["differ in", "first id"]),
    ("albert", None, ["--teacher_checkpoint=", "shares its layers"]),
])
def test_a_pretraining_teacher_of_another_family_is_one_line(tmp_path, teacher, tokenizer_dir,
                                                             needles):
    from bert_keras.training import pretraining_models

    config = pretraining_config(tmp_path, teacher, tokenizer_dir)
    tokenizer = load_tokenizer(str(FIXTURES / (tokenizer_dir or teacher)))
    with pytest.raises(InputError) as error:
        pretraining_models.build_model(config, tokenizer)
    assert type(error.value) is InputError  # not a ValueError traceback
    assert all(needle in str(error.value) for needle in needles), str(error.value)
    assert "\n" not in str(error.value)


def test_a_pretraining_teacher_with_its_own_tokenizer_dir_builds(tmp_path):
    from bert_keras.training import pretraining_models

    config = pretraining_config(tmp_path, "distilbert", "distilbert")
    model = pretraining_models.build_model(config, load_tokenizer(str(FIXTURES / "distilbert")))
    assert model.encoder.num_layers == 1


def test_a_task_teacher_of_another_family_is_refused(tmp_path):
    from bert_keras.tasks.task_io import save_task
    from bert_keras.training.finetuning_config import FinetuneConfig
    from bert_keras.training.finetuning_teacher import Teacher

    def encoder(vocab_size):
        return bk.BertEncoder(vocab_size=vocab_size, num_layers=1, hidden_size=16, num_heads=2,
                              intermediate_size=32, max_positions=64)

    student = load_tokenizer(str(FIXTURES / "distilbert"))
    encoder(student.vocab_size).save_pretrained(str(tmp_path / "student"), tokenizer=student)
    roberta = load_tokenizer(str(FIXTURES / "roberta"))
    save_task(str(tmp_path / "teacher"), bk.BertClassifier(encoder(roberta.vocab_size), 2),
              roberta, "classification", 64, labels=["0", "1"])
    config = FinetuneConfig.from_options(
        task="classification", init_checkpoint=str(tmp_path / "student"),
        output_dir=str(tmp_path / "out"), teacher_dir=str(tmp_path / "teacher"))
    with pytest.raises(InputError, match="the teacher's tokenizer and the student's .* differ: "
                                         "a ByteBpeTokenizer .* against a WordPieceTokenizer"):
        Teacher(config)
