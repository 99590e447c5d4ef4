"""The run configs made of their components' configs: flags keep their flat names, each
component owns its options and defaults, and run directories of the version before the split
still resume (or are refused naming the option)."""

import json
import pathlib
import re

import pytest
from absl import flags

import bert_keras as bk
from bert_keras import configs, files
from bert_keras.training import finetuning_state, pretraining
from bert_keras.training.finetuning_config import FinetuneConfig
from bert_keras.training.pretraining_config import PretrainConfig

CORPUS = "web_bible_corpus.txt.gz"
TEXT = f"bert_keras/assets/{CORPUS}"

# flags.json of a classification run written by the version before the split: one flat dict
# of every option, span_qa's and multi_label's included.
PREVIOUS_FLAGS_JSON = {
    "task": "classification", "train_file": None, "eval_file": None, "test_file": None,
    "format": "auto", "header": False, "text_a_column": "1", "text_b_column": None,
    "label_column": "0", "text_a_field": "text", "text_b_field": None, "label_field": "label",
    "label_delimiter": ",", "test_unlabeled": False, "tfds_name": None, "tfds_data_dir": None,
    "tfds_download": False, "tfds_train_split": "train", "tfds_eval_split": None,
    "tfds_test_split": None, "init_checkpoint": ".", "teacher_dir": None,
    "distill_temperature": 2.0, "distill_alpha": 0.5, "output_dir": "OUT", "max_seq_length": 64,
    "doc_stride": 128, "max_query_length": 64, "max_answer_length": 30, "n_best_size": 20,
    "version_2_with_negative": None, "null_score_diff_threshold": 0.0,
    "multi_label_threshold": 0.5, "train_batch_size": 8, "eval_batch_size": 64,
    "learning_rate": 5e-05, "num_train_epochs": 2, "warmup_proportion": 0.1,
    "weight_decay": 0.01, "layerwise_lr_decay": None, "dropout": 0.1,
    "max_train_examples": None, "max_eval_examples": None, "main_metric": None, "dtype": "auto",
    "distribution_strategy": "one_device", "jit_compile": False, "seed": 42,
    "checkpoint_every": 0, "verbose": 2}


def finetune_config(tmp_path, **options):
    return FinetuneConfig.from_options(**{
        "task": "classification", "init_checkpoint": ".", "output_dir": str(tmp_path),
        "max_seq_length": 64, "train_batch_size": 8, "num_train_epochs": 2, **options})


def test_a_run_directory_of_the_previous_version_resumes_and_a_changed_option_is_named(tmp_path):
    (tmp_path / "flags.json").write_text(json.dumps(PREVIOUS_FLAGS_JSON))
    finetuning_state.check_same_flags(str(tmp_path), finetune_config(tmp_path), "a run")
    with pytest.raises(finetuning_state.ResumeError,
                       match=r"--learning_rate=0.0001 \(was 5e-05\)"):
        finetuning_state.check_same_flags(str(tmp_path),
                                          finetune_config(tmp_path, learning_rate=1e-4), "a run")


def test_the_flat_options_round_trip_through_the_sections(tmp_path):
    config = finetune_config(tmp_path, task="span_qa", doc_stride=64, weight_decay=0.0,
                             max_seq_length=128,
                             train_file="bert_keras/assets/wordnet_qa.train.jsonl.gz")
    assert (config.task_options.doc_stride, config.optimizer.weight_decay) == (64, 0.0)
    assert config.data.train_file.endswith("wordnet_qa.train.jsonl.gz")
    assert FinetuneConfig.from_options(**config.to_dict()) == config
    assert "multi_label_threshold" not in config.to_dict()  # another task type's option


def test_an_option_of_another_task_type_or_objective_is_refused_by_name(tmp_path):
    with pytest.raises(configs.ConfigError, match="--multi_label_threshold is an option of "
                       "--task=multi_label, not of --task=classification"):
        finetune_config(tmp_path, multi_label_threshold=0.3)
    with pytest.raises(configs.ConfigError, match="--rtd_weight is an option of "
                       "--objective=electra, not of --objective=mlm"):
        PretrainConfig.from_options(model_dir=str(tmp_path), train_text=TEXT, rtd_weight=50.0)


def test_the_flags_keep_their_names_and_helpfull_groups_them_by_component():
    flag_values = flags.FlagValues()
    configs.define_flags(FinetuneConfig, flag_values)
    owner = flag_values.find_module_defining_flag
    assert owner("doc_stride") == "bert_keras.tasks.span_qa.options"
    assert owner("weight_decay") == "bert_keras.optimization.config"
    assert owner("train_file") == "bert_keras.data.finetuning.config"
    flag_values(["finetune", "--task=span_qa", "--doc_stride=32", "--init_checkpoint=.",
                 "--output_dir=/tmp/x", "--learning_rate=2e-5"])
    config = configs.from_flags(FinetuneConfig, flag_values)
    assert (config.task_options.doc_stride, config.optimizer.learning_rate) == (32, 2e-5)


def test_a_flag_of_another_task_type_is_refused_by_name():
    flag_values = flags.FlagValues()
    configs.define_flags(FinetuneConfig, flag_values)
    flag_values(["finetune", "--task=tagging", "--doc_stride=32", "--init_checkpoint=.",
                 "--output_dir=/tmp/x"])
    with pytest.raises(configs.ConfigError, match="--doc_stride is an option of --task=span_qa"):
        configs.from_flags(FinetuneConfig, flag_values)


def test_electra_pretrainer_takes_the_tools_defaults_from_one_place(tmp_path):
    config = PretrainConfig.from_options(model_dir=str(tmp_path), train_text=TEXT,
                                         objective="electra")
    model = bk.ElectraPretrainer(bk.BertEncoder.from_preset("bert_tiny", vocab_size=60), seed=0)
    assert model.options == config.objective_options == bk.ElectraOptions()
    assert bk.ElectraPretrainer.from_config(model.get_config()).options == model.options


def test_the_encoder_architecture_is_its_encoder_config():
    encoder = bk.BertEncoder(bk.PRESETS["bert_tiny"], vocab_size=60, dropout=0.0)
    assert (encoder.num_layers, encoder.vocab_size, encoder.dropout) == (2, 60, 0.0)
    assert encoder.encoder_config == bk.PRESETS["bert_tiny"].replace(vocab_size=60, dropout=0.0)
    assert bk.BertEncoder.from_config(encoder.get_config()).encoder_config == encoder.encoder_config
    with pytest.raises(configs.ConfigError, match="num_heads"):
        bk.BertEncoder(vocab_size=60, hidden_size=100, num_heads=12)


# -- os.PathLike options, wrong types, and the output directory of a failed run (issue 65) ---

DATA = pathlib.Path(bk.__file__).resolve().parent / "assets"


def test_every_path_option_takes_a_path_object_and_the_config_writes_as_json(
        tmp_path, tiny_encoder_dir):
    config = FinetuneConfig.from_options(
        task="classification", init_checkpoint=tiny_encoder_dir, output_dir=tmp_path / "run",
        train_file=DATA / "bible_paraphrase.train.tsv.gz", text_b_column=2)
    assert (config.init_checkpoint, config.output_dir) == (str(tiny_encoder_dir),
                                                          str(tmp_path / "run"))
    assert config.data.train_file == str(DATA / "bible_paraphrase.train.tsv.gz")
    files.write_json(tmp_path / "flags.json", config.to_dict())  # the run's first write
    assert FinetuneConfig.from_options(**json.loads((tmp_path / "flags.json").read_text())
                                       ) == config
    assert PretrainConfig.from_options(model_dir=tmp_path, train_text=DATA / CORPUS
                                       ).model_dir == str(tmp_path)
    assert bk.ExportConfig(task_dir=tmp_path, export_dir_base=tmp_path / "saved"
                           ).export_dir_base == str(tmp_path / "saved")


def test_an_option_of_a_wrong_type_is_one_config_error_naming_it_before_any_work(tmp_path):
    run = dict(task="classification", init_checkpoint=".", output_dir=tmp_path / "run",
               train_file=str(DATA / "bible_paraphrase.train.tsv.gz"))
    with pytest.raises(configs.ConfigError,
                       match=r"^--train_batch_size='8' must be an int, not str\.$"):
        bk.run_finetuning(**run, train_batch_size="8")
    with pytest.raises(configs.ConfigError, match=r"^--output_dir=3 must be a str or "
                       r"os.PathLike, not int\.$"):
        bk.run_finetuning(**dict(run, output_dir=3))
    with pytest.raises(configs.ConfigError, match=r"^--header=1 must be a bool, not int\.$"):
        FinetuneConfig.from_options(**run, header=1)
    assert not (tmp_path / "run").exists()


def test_a_failed_run_leaves_no_output_dir_that_it_made(tmp_path, tiny_encoder_dir):
    conll = tmp_path / "bad.conll"
    conll.write_text("In O\nthe O\nbeginning\textra O\n")  # line 3 has 2 columns
    run = dict(task="tagging", train_file=conll, init_checkpoint=tiny_encoder_dir,
               max_seq_length=16)
    with pytest.raises(bk.InputError, match=re.escape(str(conll))):  # after OUTPUT_DIR is made
        bk.run_finetuning(**run, output_dir=tmp_path / "runs" / "tagger")
    assert not (tmp_path / "runs").exists()  # runs/ was made by the run too
    (tmp_path / "mine").mkdir()  # a directory the user made is left alone
    with pytest.raises(bk.InputError, match=re.escape(str(conll))):
        bk.run_finetuning(**run, output_dir=tmp_path / "mine")
    assert (tmp_path / "mine").is_dir()


def test_a_pretraining_run_that_fails_before_its_first_checkpoint_leaves_no_model_dir(
        tmp_path, monkeypatch):
    def interrupted(model_fn, dataset_fn, *, model_dir, config, **options):  # as loop.train
        files.makedirs(model_dir)
        files.write_json(files.join(model_dir, "run_config.json"), config)
        raise KeyboardInterrupt

    monkeypatch.setattr(pretraining, "train", interrupted)
    with pytest.raises(KeyboardInterrupt):
        bk.run_pretraining(model_dir=tmp_path / "runs" / "mini", train_text=TEXT,
                           progress=False)
    assert not (tmp_path / "runs").exists()
