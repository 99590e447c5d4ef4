"""ModernBERT's pretraining recipe (issue 68): modernbert_tiny and _mini are modernbert_base
(the released encoder: tests/families/test_families.py) at BERT's sizes, the flagfiles are
its recipe (masked LM only, 30% masked), and one tiny run with ModernBERT's tokenizer masks
30% of the tokens, trains an encoder whose window is below its sequence length, and saves one
that the family reads back and that `bk.save_transformers` writes as a ModernBertModel; its
masked LM (final/) has a bias-free head norm, as the encoder's norms, and writes as a
ModernBertForMaskedLM that reads back into the same logits (transformers 5.25 read such a
directory, written from this run's settings, into logits within 1.5e-7 of ours at 182 tokens,
checked outside the suite)."""

import json
import pathlib

import numpy as np
import pytest
from absl import flags

import bert_keras as bk
from bert_keras import configs
from bert_keras.checkpoints.safetensors import read_safetensors
from bert_keras.data.pretraining import pipeline
from bert_keras.families import modernbert
from bert_keras.tasks.registry import load_model
from bert_keras.text.tokenizers import load_tokenizer
from bert_keras.training import pretraining
from bert_keras.training.pretraining_config import PretrainConfig

REPO = pathlib.Path(__file__).resolve().parents[3]
CORPUS = REPO / "bert_keras" / "assets" / "web_bible_corpus.txt.gz"
TOKENIZER_DIR = REPO / "tests" / "fixtures" / "families" / "modernbert"  # byte-level BPE, 1,005

SIZES = ("num_layers", "hidden_size", "num_heads", "intermediate_size")


def test_tiny_and_mini_are_base_at_bert_tiny_and_mini_sizes():
    base = bk.PRESETS["modernbert_base"]
    for name in ("tiny", "mini"):
        preset, bert = bk.PRESETS[f"modernbert_{name}"], bk.PRESETS[f"bert_{name}"]
        assert [getattr(preset, k) for k in SIZES[:3]] == [getattr(bert, k) for k in SIZES[:3]]
        assert preset.intermediate_size * 2 == preset.hidden_size * 3  # base's 1,152 / 768
        assert preset.replace(**{k: getattr(base, k) for k in SIZES}) == base


def flagfile_config(name, tmp_path):
    """The PretrainConfig that tools/pretrain.py makes of flags/`name` (absl parses it)."""
    flag_values = flags.FlagValues()
    configs.define_flags(PretrainConfig, flag_values)
    flag_values(["pretrain", f"--flagfile={REPO / 'flags' / name}", f"--train_text={CORPUS}",
                 f"--model_dir={tmp_path / 'run'}"])
    return configs.from_flags(PretrainConfig, flag_values)


@pytest.mark.parametrize("name", ["pretrain_modernbert_base.flags",
                                  "pretrain_modernbert_mini.flags"])
def test_the_flagfiles_are_modernberts_recipe(name, tmp_path):
    config = flagfile_config(name, tmp_path)
    data, optimizer = config.data, config.optimizer
    assert config.objective == "mlm" and data.pair_mode == "none"  # no sentence-pair task
    assert data.masked_lm_prob == 0.3 and not data.whole_word_mask and data.ngram == 1
    # Room for 30% of a full row's tokens (all but [CLS] and [SEP]).
    assert data.max_predictions_per_seq >= round(0.3 * (data.max_seq_length - 2))
    assert config.encoder.preset.startswith("modernbert_")
    assert (optimizer.weight_decay, optimizer.adam_beta_2, optimizer.adam_epsilon) == (
        1e-5, 0.98, 1e-6)


def test_a_tiny_run_masks_30_percent_and_saves_a_modernbert(tmp_path, monkeypatch):
    """--masked_lm_prob reaches the pipeline the run trains on, which masks round(0.3 n) of a
    row's n maskable tokens; the saved encoder is the preset's (window 128 under 192 tokens)
    and writes as a transformers ModernBertModel that the family reads into the same outputs;
    the saved masked LM writes as a ModernBertForMaskedLM that reads back into its logits."""
    calls = []

    def recorded(*args, **kwargs):
        calls.append((args, kwargs))
        return real(*args, **kwargs)

    real = pipeline.dynamic_pretraining_dataset
    monkeypatch.setattr(pipeline, "dynamic_pretraining_dataset", recorded)
    sizes = dict(num_layers=2, hidden_size=32, num_heads=2, intermediate_size=48)
    result = pretraining.run_pretraining(
        model_dir=str(tmp_path / "run"), train_text=str(CORPUS), tokenizer_dir=str(TOKENIZER_DIR),
        preset="modernbert_tiny", **sizes, pair_mode="none", masked_lm_prob=0.3,
        max_seq_length=192, max_predictions_per_seq=58, train_steps=2, global_batch_size=4,
        warmup_steps=1, checkpoint_every=2, log_every=1, documents_per_chunk=50,
        dtype="float32", progress=False)
    assert result["step"] == 2
    assert len(calls) == 1 and calls[0][1]["masked_lm_prob"] == 0.3
    monkeypatch.undo()

    args, kwargs = calls[0]
    tokenizer = args[1]
    batch = next(iter(real(*args, **dict(kwargs, input_context=None, as_dict=True))))
    ids, mask = batch["input_word_ids"].numpy(), batch["input_mask"].numpy()
    special = np.isin(ids, [tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id])
    maskable = ((mask == 1) & ~special).sum(axis=1)
    assert maskable.max() > 150  # rows packed across sentences, up to the full length
    np.testing.assert_array_equal(batch["masked_lm_weights"].numpy().sum(axis=1),
                                  np.minimum(58, np.round(0.3 * maskable)))

    encoder = bk.BertEncoder.from_pretrained(result["encoder_dir"])
    assert encoder.encoder_config == bk.PRESETS["modernbert_tiny"].replace(
        vocab_size=1005, **sizes)
    saved_tokenizer = load_tokenizer(result["encoder_dir"])
    assert type(saved_tokenizer) is modernbert.TOKENIZER

    written = tmp_path / "transformers"
    assert bk.save_transformers(encoder, str(written), saved_tokenizer) == "modernbert"
    config = json.loads((written / "config.json").read_text())
    assert config["architectures"] == ["ModernBertModel"]
    assert config["layer_types"] == ["full_attention", "sliding_attention"]
    assert config["local_attention"] == 128
    again = bk.BertEncoder.from_pretrained(str(written))
    inputs = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": np.zeros_like(ids)}
    np.testing.assert_allclose(np.asarray(again(inputs)["sequence_output"]),
                               np.asarray(encoder(inputs)["sequence_output"]), rtol=0, atol=1e-6)

    # The masked LM itself (final/): its head norm has no bias, as the encoder's norms (a
    # trained bias would have no place in transformers' ModernBERT), so it writes whole.
    masked_lm, tokenizer, _, _ = load_model(str(tmp_path / "run" / "final"))
    assert not masked_lm.masked_lm_head.norm_bias
    assert not [v.path for v in masked_lm.masked_lm_head.weights if "beta" in v.path]
    written = tmp_path / "masked_lm"
    assert bk.save_transformers(masked_lm, str(written), tokenizer) == "modernbert"
    config = json.loads((written / "config.json").read_text())
    assert config["architectures"] == ["ModernBertForMaskedLM"] and not config["norm_bias"]
    assert {"head.norm.weight", "decoder.bias"} <= set(
        read_safetensors(written / "model.safetensors"))
    again, _, _, _ = load_model(str(written))
    assert type(again) is type(masked_lm) and not again.masked_lm_head.norm_bias
    inputs["masked_lm_positions"] = batch["masked_lm_positions"].numpy()
    logits = np.asarray(masked_lm(inputs)["masked_lm"])
    assert np.ptp(logits) > 0.1  # not a constant a wrong head could also give
    np.testing.assert_allclose(np.asarray(again(inputs)["masked_lm"]), logits, rtol=0,
                               atol=1e-5)


def test_the_head_norm_bias_is_the_encoders_and_older_configs_keep_theirs():
    """A pretrainer's MLM head norm has a bias where its encoder's norms do; a config saved
    before `mlm_norm_bias` (no such key) builds the head those pretrainers had, with one."""
    encoder = bk.BertEncoder.from_preset("modernbert_tiny", vocab_size=100, num_layers=1)
    pretrainer = bk.BertPretrainer(encoder, next_sentence=False)
    config = pretrainer.get_config()
    assert config["mlm_norm_bias"] is False
    assert not bk.BertPretrainer.from_config(config).masked_lm_head.norm_bias
    older = {k: v for k, v in config.items() if k != "mlm_norm_bias"}
    head = bk.BertPretrainer.from_config(older).masked_lm_head
    assert head.norm_bias and head.transform_layer_norm.beta is not None
    bert = bk.BertPretrainer(bk.BertEncoder.from_preset("bert_tiny", vocab_size=100))
    assert bert.masked_lm_head.norm_bias
