"""BERT-family checkpoints in the Hugging Face layout import exactly: DistilBERT, ELECTRA
(discriminator and generator), RoBERTa, ALBERT, XLM-RoBERTa and ModernBERT (rotary positions,
a sliding window far below the test lengths, pre-norm GeGLU blocks), against transformers' outputs
on the same small checkpoints (tests/fixtures/make_family_references.py and
make_xlm_roberta_references.py made them and the references; no torch needed here). Tokenizer
parity: WordPiece (DistilBERT, ELECTRA), SentencePiece (ALBERT; XLM-R's with fairseq's ids) and
byte-level BPE (RoBERTa); packing of texts and pairs as the family's tokenizer packs them."""

import functools
import json
import pathlib
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras.models.layers.transformer import TransformerBlock
from bert_keras.text.tokenizers import load_tokenizer

import tool_runner  # tests/support: tools forked without their imports

FAMILIES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "families"
CASES = ["distilbert", "electra_discriminator", "electra_generator", "albert", "roberta",
         "xlm_roberta", "modernbert", "deberta_v3"]
TOKENIZER_CLASSES = {"albert": "SentencePieceTokenizer", "roberta": "ByteBpeTokenizer",
                     "xlm_roberta": "XlmRobertaTokenizer", "modernbert": "ModernBertTokenizer",
                     "deberta_v3": "DebertaV3Tokenizer"}
SAMPLES = json.loads((FAMILIES / "texts.json").read_text(encoding="utf-8"))
TEXTS = SAMPLES["texts"]


def reference(name):
    return dict(np.load(FAMILIES / name / "reference.npz"))


@functools.cache
def family_encoder(name):
    """The family fixture's encoder, read once per test process: the tests that only call it
    or read its architecture share it (the ones that build a model around it read their own)."""
    return bk.BertEncoder.from_pretrained(str(FAMILIES / name))


def batch_inputs(ref, batch):
    """The reference's padded batch as the encoder's three inputs."""
    return {"input_word_ids": ref[f"{batch}_input_ids"], "input_mask": ref[f"{batch}_input_mask"],
            "input_type_ids": ref[f"{batch}_input_type_ids"]}


@pytest.mark.parametrize("name", CASES)
def test_tokenizer_ids_equal_the_family_tokenizer(name):
    ref = reference(name)
    tokenizer = load_tokenizer(str(FAMILIES / name))
    assert type(tokenizer).__name__ == TOKENIZER_CLASSES.get(name, "WordPieceTokenizer")
    got = tokenizer.tokenize(TEXTS)
    for i, text in enumerate(TEXTS):
        np.testing.assert_array_equal(got[i].numpy(), ref[f"text_{i}"], err_msg=repr(text))


@pytest.mark.parametrize("name", CASES)
def test_encoder_matches_transformers(name):
    ref = reference(name)
    encoder = family_encoder(name)
    for batch in ("singles", "pairs"):
        inputs = batch_inputs(ref, batch)
        got = encoder(inputs)["sequence_output"].numpy()
        mask = inputs["input_mask"].astype(bool)
        np.testing.assert_allclose(got[mask], ref[f"{batch}_sequence_output"][mask], atol=1e-4,
                                   err_msg=f"{name} {batch}")


@pytest.mark.parametrize("dtype", ["float32", "mixed_bfloat16"])
def test_encoders_and_pretrainers_built_without_tracing_their_blocks_are_the_traced_ones(
        dtype, monkeypatch):
    """A block states its symbolic output (TransformerBlock.compute_output_spec) instead of
    Keras tracing its `call`: every family's encoder, and a pretrainer (which reads rows by
    `output_positions`), get the same outputs and weights as when Keras traces the blocks."""
    def built(name):
        encoder = bk.BertEncoder.from_config({**family_encoder(name).get_config(),
                                              "dtype": dtype})
        pretrainer = bk.BertPretrainer(encoder, next_sentence=False)
        return ([(w.path, tuple(w.shape), w.dtype) for w in pretrainer.weights],
                [(tuple(t.shape), t.dtype)
                 for t in tf.nest.flatten([encoder.outputs, pretrainer.outputs])])

    stated = {name: built(name) for name in CASES}
    monkeypatch.setattr(TransformerBlock, "compute_output_spec",
                        keras.layers.Layer.compute_output_spec)
    for name in CASES:
        assert stated[name] == built(name), name


def test_family_architectures():
    distil = family_encoder("distilbert").architecture
    assert (distil["type_vocab_size"], distil["use_pooler"]) == (0, False)
    electra = family_encoder("electra_discriminator").architecture
    assert (electra["embedding_size"], electra["hidden_size"],
            electra["use_pooler"]) == (16, 32, False)
    config = json.loads((FAMILIES / "electra_generator" / "config.json").read_text())
    assert config["embedding_size"] == config["hidden_size"]  # no projection tensor in the file
    generator = family_encoder("electra_generator").architecture
    assert generator["embedding_size"] is None


def test_byte_bpe_detokenize_inverts_tokenize():
    tokenizer = load_tokenizer(str(FAMILIES / "roberta"))
    texts = [TEXTS[1], TEXTS[3], "runs   of  spaces\tand tabs"]
    ids = tokenizer.tokenize(texts)
    packed = tf.concat([tf.fill([3, 1], tokenizer.cls_id), ids.to_tensor(tokenizer.pad_id)], 1)
    assert [t.decode("utf-8") for t in tokenizer.detokenize(packed).numpy()] == texts


def test_roberta_and_albert_architectures():
    roberta = family_encoder("roberta")
    assert (roberta.position_offset, roberta.type_vocab_size, roberta.use_pooler) == (2, 1, False)
    assert roberta.max_sequence_length == 64
    albert = family_encoder("albert")
    assert (albert.num_layers, albert.num_layer_groups, albert.embedding_size) == (4, 2, 16)
    # Two blocks of weights serve four layers.
    assert len({v.path.split("/")[0] for v in albert.weights if "transformer_layer" in v.path}) == 2


def test_own_format_round_trip_keeps_the_family(tmp_path):
    encoder = family_encoder("electra_discriminator")
    tokenizer = bk.BertTokenizer.from_pretrained(str(FAMILIES / "electra_discriminator"))
    encoder.save_pretrained(str(tmp_path / "own"), tokenizer)
    again = bk.BertEncoder.from_pretrained(str(tmp_path / "own"))
    assert again.architecture == encoder.architecture
    ref = reference("electra_discriminator")
    inputs = batch_inputs(ref, "pairs")
    np.testing.assert_array_equal(again(inputs)["sequence_output"].numpy(),
                                  encoder(inputs)["sequence_output"].numpy())


def test_family_checkpoint_with_a_missing_tensor_names_it(tmp_path):
    from bert_keras.checkpoints.safetensors import read_safetensors, write_safetensors

    target = tmp_path / "distil"
    target.mkdir()
    for f in ("config.json", "vocab.txt"):
        (target / f).write_bytes((FAMILIES / "distilbert" / f).read_bytes())
    tensors = read_safetensors(str(FAMILIES / "distilbert" / "model.safetensors"))
    del tensors["distilbert.transformer.layer.1.ffn.lin2.bias"]
    write_safetensors(str(target / "model.safetensors"), tensors)
    with pytest.raises(bk.CheckpointError, match=r"layer\.1\.ffn\.lin2\.bias"):
        bk.BertEncoder.from_pretrained(str(target))


def test_unknown_model_type_is_refused(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(ValueError, match="model_type 'gpt2' is not one of"):
        bk.BertEncoder.from_pretrained(str(tmp_path))


def test_albert_tokenizer_in_graph_and_round_trip(tmp_path):
    tokenizer = load_tokenizer(str(FAMILIES / "albert"))
    graph = tf.function(tokenizer.tokenize)
    np.testing.assert_array_equal(graph(tf.constant(TEXTS[:2])).to_list()[1],
                                  reference("albert")["text_1"])
    tokenizer.save(str(tmp_path))
    again = load_tokenizer(str(tmp_path))
    assert (again.vocab, again.lower_case, again.cls_id) == (tokenizer.vocab, True, 2)
    assert tokenizer.detokenize(tokenizer.tokenize(["In the BEGINNING"])).numpy()[0] == (
        b"in the beginning")


@pytest.mark.parametrize("name", CASES)
def test_packed_inputs_and_outputs_from_raw_text(name):
    """Our packer ([CLS] A [SEP] B [SEP], RoBERTa's <s> A </s></s> B </s>) on the raw texts gives
    the family tokenizer's padded batches, and the encoder the reference outputs from them."""
    ref = reference(name)
    preprocessor = bk.BertPreprocessor(load_tokenizer(str(FAMILIES / name)), seq_length=64,
                                       pad_to_longest=True)
    encoder = family_encoder(name)
    batches = {"singles": (SAMPLES["singles"],),
               "pairs": ([a for a, _ in SAMPLES["pairs"]], [b for _, b in SAMPLES["pairs"]])}
    for batch, texts in batches.items():
        inputs = preprocessor(*[tf.constant(t) for t in texts])
        np.testing.assert_array_equal(inputs["input_word_ids"].numpy(), ref[f"{batch}_input_ids"])
        np.testing.assert_array_equal(inputs["input_mask"].numpy(), ref[f"{batch}_input_mask"])
        # Type ids as transformers 5's tokenizers give them (none, i.e. 0, from ALBERT's and
        # RoBERTa's: `pair_type_ids`).
        np.testing.assert_array_equal(inputs["input_type_ids"].numpy(),
                                      ref[f"{batch}_input_type_ids"])
        mask = ref[f"{batch}_input_mask"].astype(bool)
        np.testing.assert_allclose(encoder(inputs)["sequence_output"].numpy()[mask],
                                   ref[f"{batch}_sequence_output"][mask], atol=1e-4)


def test_byte_bpe_pre_tokenization_emulates_the_lookahead():
    # GPT-2's regex (with \s+(?!\S)) on these, as Python's `regex` splits them.
    pieces = load_tokenizer(str(FAMILIES / "roberta")).pre_tokenize(tf.constant([
        "Hello there       dear", "end   ", "a  \n\n b", "x\t\ty", "I'M here's"])).to_list()
    assert pieces == [[b"Hello", b" there", b"      ", b" dear"], [b"end", b"   "],
                      [b"a", b"  \n\n", b" b"], [b"x", b"\t", b"\t", b"y"],
                      [b"I", b"'", b"M", b" here", b"'s"]]


@pytest.mark.parametrize("name", ["albert", "distilbert", "roberta", "xlm_roberta"])
def test_export_of_a_family_encoder_takes_raw_text(family_encoder_export, name):
    path = family_encoder_export(name)
    loaded = tf.saved_model.load(path)
    ref = reference(name)
    import tensorflow_text  # noqa: F401  (the tokenizer ops of the SavedModel)

    packed = loaded.signatures["preprocess"](text=tf.constant(SAMPLES["singles"][:1]))
    want = ref["singles_input_ids"][0][ref["singles_input_mask"][0] == 1]
    np.testing.assert_array_equal(packed["input_word_ids"].numpy()[0], want)
    inputs = batch_inputs(ref, "pairs")
    out = loaded.signatures["encode"](**{k: tf.constant(v) for k, v in inputs.items()})
    mask = inputs["input_mask"].astype(bool)
    np.testing.assert_allclose(out["sequence_output"].numpy()[mask],
                               ref["pairs_sequence_output"][mask], atol=1e-4)
    assets = {"albert": ["spiece.model"], "roberta": ["vocab.json", "merges.txt"],
              "xlm_roberta": ["sentencepiece.bpe.model"]}.get(name, ["vocab.txt"])
    assert all((pathlib.Path(path) / "assets" / asset).exists() for asset in assets)


@pytest.mark.slow
def test_a_family_checkpoint_fine_tunes_and_its_export_answers_raw_text(tmp_path):
    """tools/finetune.py -> tools/export.py for pairs with a family checkpoint, unchanged
    tools: RoBERTa's classifier with its own head and byte-level BPE. (ALBERT's SentencePiece
    runs the same tools in test_transformers_tasks' tagging and QA runs; every family's
    fine-tuned heads answer as transformers there too. A new head of the family's kind:
    test_fine_tuning_builds_the_family_head_and_loads_a_fitting_one; through the tools,
    test_finetune_tool.py's bare encoder.)"""
    import sys

    root = FAMILIES.parents[2]
    run = lambda *args: tool_runner.run(  # noqa: E731
        [sys.executable, *args], cwd=root, capture_output=True, text=True, timeout=600)
    result = run("tools/finetune.py", "--flagfile=flags/finetune_bible_paraphrase.flags",
                 f"--init_checkpoint={FAMILIES / 'roberta_classifier'}",
                 f"--output_dir={tmp_path / 'run'}", "--max_train_examples=64",
                 "--max_eval_examples=32", "--num_train_epochs=1", "--max_seq_length=32",
                 "--verbose=0")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "run" / "best" / "merges.txt").exists()
    result = run("tools/export.py", f"--task_dir={tmp_path / 'run' / 'best'}",
                 "--model_name=paraphrase", f"--export_dir_base={tmp_path / 'saved'}")
    assert result.returncode == 0, result.stderr[-3000:]
    import tensorflow_text  # noqa: F401  (the tokenizer ops of the SavedModel)

    loaded = tf.saved_model.load(str(tmp_path / "saved" / "paraphrase" / "1"))
    serve = loaded.signatures["serving_default"]
    out = serve(text_a=tf.constant(["He went home.", ""]), text_b=tf.constant(["He left.", ""]))
    assert out["probabilities"].shape == (2, 2)
    np.testing.assert_allclose(out["probabilities"].numpy().sum(-1), 1.0, rtol=1e-5)
    assert set(out["labels"].numpy().tolist()) <= {b"0", b"1"}


# The config.json of the published checkpoints (the keys that matter), as on the Hugging Face hub.
PUBLISHED = {
    "roberta_base": dict(model_type="roberta", vocab_size=50265, hidden_size=768,
                         num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                         hidden_act="gelu", max_position_embeddings=514, type_vocab_size=1,
                         layer_norm_eps=1e-05, pad_token_id=1, hidden_dropout_prob=0.1,
                         attention_probs_dropout_prob=0.1, initializer_range=0.02),
    "albert_base_v2": dict(model_type="albert", vocab_size=30000, embedding_size=128,
                           hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                           intermediate_size=3072, hidden_act="gelu_new", num_hidden_groups=1,
                           inner_group_num=1, max_position_embeddings=512, type_vocab_size=2,
                           hidden_dropout_prob=0, attention_probs_dropout_prob=0,
                           layer_norm_eps=1e-12, initializer_range=0.02),
    "distilbert_base": dict(model_type="distilbert", vocab_size=30522, dim=768, n_layers=6,
                            n_heads=12, hidden_dim=3072, activation="gelu",
                            max_position_embeddings=512, dropout=0.1, attention_dropout=0.1,
                            initializer_range=0.02),
    "electra_small": dict(model_type="electra", vocab_size=30522, embedding_size=128,
                          hidden_size=256, num_hidden_layers=12, num_attention_heads=4,
                          intermediate_size=1024, hidden_act="gelu", max_position_embeddings=512,
                          type_vocab_size=2, hidden_dropout_prob=0.1,
                          attention_probs_dropout_prob=0.1, layer_norm_eps=1e-12,
                          initializer_range=0.02),
    **{preset: dict(model_type="modernbert", vocab_size=50368, num_hidden_layers=layers,
                    hidden_size=hidden, num_attention_heads=heads, intermediate_size=ffn,
                    hidden_activation="gelu", max_position_embeddings=8192,
                    global_attn_every_n_layers=3, local_attention=128,
                    global_rope_theta=160000.0, local_rope_theta=10000.0, norm_eps=1e-05,
                    norm_bias=False, attention_bias=False, mlp_bias=False,
                    attention_dropout=0.0, mlp_dropout=0.0, embedding_dropout=0.0,
                    initializer_range=0.02)
       for preset, layers, hidden, heads, ffn in (("modernbert_base", 22, 768, 12, 1152),
                                                  ("modernbert_large", 28, 1024, 16, 2624))},
}


@pytest.mark.parametrize("preset", sorted(PUBLISHED))
def test_presets_are_the_published_configs(preset):
    from bert_keras.checkpoints import huggingface

    config = PUBLISHED[preset]
    arguments = huggingface.FAMILIES[config["model_type"]].encoder_config(config, preset)
    arguments.setdefault("use_pooler", bk.PRESETS[preset].use_pooler)  # a file property
    assert bk.EncoderConfig(**arguments) == bk.PRESETS[preset]


@pytest.mark.slow
def test_family_exports_serve_in_a_process_without_this_project(tmp_path,
                                                                family_encoder_export):
    """The SavedModels of RoBERTa, ALBERT, DistilBERT and XLM-R encoders, loaded (TF1 and TF2
    loaders) in `python -I -S` with only TensorFlow and tensorflow-text: `preprocess` gives the
    family tokenizer's ids and `encode` the reference outputs."""
    from export_harness import _enc, _outputs, run_client

    names = ["roberta", "albert", "distilbert", "xlm_roberta"]
    paths = {name: family_encoder_export(name) for name in names}
    requests = {}
    for name, path in paths.items():
        ref = reference(name)
        requests[path] = [
            ["preprocess", {"text": _enc(np.array(SAMPLES["singles"], object))}],
            ["encode", {key: _enc(value) for key, value in batch_inputs(ref, "pairs").items()}],
        ]
    report = run_client(tmp_path, list(paths.values()), requests)
    for name, path in paths.items():
        ref = reference(name)
        results = {r["signature"]: r for r in report["exports"][path] if not r["warmup"]}
        ids = _outputs(results["preprocess"])["input_word_ids"]
        np.testing.assert_array_equal(ids, ref["singles_input_ids"], err_msg=name)
        out = _outputs(results["encode"])["sequence_output"]
        mask = ref["pairs_input_mask"].astype(bool)
        np.testing.assert_allclose(out[mask], ref["pairs_sequence_output"][mask], atol=1e-4,
                                   err_msg=name)


# Fine-tuned transformers checkpoints whose reference.npz holds transformers' logits.
TASK_CASES = ["roberta_classifier", "distilbert_classifier", "electra_classifier",
              "albert_classifier", "xlm_roberta_classifier", "modernbert_classifier",
              "modernbert_tagger", "modernbert_qa", "deberta_v3_classifier"]
TASK_MODELS = {"classifier": "BertClassifier", "tagger": "BertTokenClassifier",
               "qa": "BertSpanQA"}


def _task_logits(model, inputs):
    out = model(inputs)
    if isinstance(out, dict):  # span QA: transformers' (B, T, 2) start and end logits
        return np.stack([out["start_logits"].numpy(), out["end_logits"].numpy()], -1)
    return out.numpy()


@pytest.mark.parametrize("name", TASK_CASES)
def test_task_checkpoint_loads_with_its_family_head(name, tmp_path):
    """`*ForSequenceClassification` / `*ForTokenClassification` / `*ForQuestionAnswering`
    through `from_pretrained`: encoder + the family's own head give transformers' logits
    (RoBERTa dense-tanh-dense on <s>, ELECTRA dense-gelu-dense, DistilBERT
    pre_classifier-relu, ALBERT pooler + classifier, ModernBERT dense-gelu-norm before every
    head, its classifier over the mean or, `*_cls_logits`, [CLS] as classifier_pooling says)."""
    path = FAMILIES / name
    ref = reference(name)
    directories = {"": path}
    if "pairs_cls_logits" in ref:  # the same weights with config.json's classifier_pooling "cls"
        config = json.loads((path / "config.json").read_text())
        shutil.copytree(path, tmp_path / name)
        (tmp_path / name / "config.json").write_text(
            json.dumps(dict(config, classifier_pooling="cls")))
        directories["cls_"] = tmp_path / name
    model_class = getattr(bk, TASK_MODELS[name.rsplit("_", 1)[1]])
    for key, directory in directories.items():
        model = model_class.from_pretrained(str(directory))
        for batch in ("singles", "pairs"):
            if f"{batch}_{key}logits" not in ref:
                continue
            inputs = {"input_word_ids": ref[f"{batch}_input_ids"],
                      "input_mask": ref[f"{batch}_attention_mask"],
                      "input_type_ids": ref.get(f"{batch}_token_type_ids",
                                                np.zeros_like(ref[f"{batch}_input_ids"]))}
            got, want = _task_logits(model, inputs), ref[f"{batch}_{key}logits"]
            if got.ndim > 2:  # per token: the real ones
                mask = inputs["input_mask"].astype(bool)
                got, want = got[mask], want[mask]
            np.testing.assert_allclose(got, want, atol=1e-4, err_msg=f"{name} {key}{batch}")


@pytest.mark.parametrize("name", ["distilbert", "roberta", "albert", "electra_generator",
                                  "xlm_roberta", "modernbert", "deberta_v3"])
def test_family_masked_lm_head_matches_transformers(name):
    """A `*ForMaskedLM` checkpoint: encoder + the family's MLM head (DistilBERT vocab_transform,
    RoBERTa lm_head with the exact GELU, ALBERT predictions H -> E, ELECTRA's generator
    predictions) give transformers' vocabulary logits at every real token."""
    from bert_keras.tasks.pretraining import head_checkpoint

    path = str(FAMILIES / name)
    ref, logits = reference(name), np.load(FAMILIES / name / "heads.npz")["pairs_logits"]
    pretrainer = bk.BertPretrainer(bk.BertEncoder.from_pretrained(path), next_sentence=False,
                                   mlm_activation=head_checkpoint.masked_lm_activation(path))
    head_checkpoint.load_pretraining_heads(pretrainer, path)
    inputs = batch_inputs(ref, "pairs")
    ids = inputs["input_word_ids"]
    positions = np.broadcast_to(np.arange(ids.shape[1], dtype="int32"), ids.shape)
    got = pretrainer({**inputs, "masked_lm_positions": positions})["masked_lm"].numpy()
    mask = inputs["input_mask"].astype(bool)
    np.testing.assert_allclose(got[mask], logits[mask], atol=2e-4, rtol=1e-4, err_msg=name)


def test_electra_discriminator_head_matches_transformers():
    """`ElectraForPreTraining`'s discriminator head loads into ElectraPretrainer's
    ReplacedTokenHead: transformers' per-token logits at every real token."""
    from bert_keras.tasks.pretraining import head_checkpoint

    path = str(FAMILIES / "electra_discriminator")
    ref = reference("electra_discriminator")
    logits = np.load(FAMILIES / "electra_discriminator" / "heads.npz")["pairs_logits"]
    model = bk.ElectraPretrainer(bk.BertEncoder.from_pretrained(path))
    head_checkpoint.load_replaced_token_head(model, path)
    inputs = batch_inputs(ref, "pairs")
    got = model.discriminator_head(model.encoder(inputs)["sequence_output"]).numpy()
    mask = inputs["input_mask"].astype(bool)
    np.testing.assert_allclose(got[mask], logits[mask], atol=1e-4, rtol=1e-4)
    with pytest.raises(bk.CheckpointError, match="discriminator_predictions"):
        head_checkpoint.load_replaced_token_head(model, str(FAMILIES / "electra_generator"))


def test_fine_tuning_builds_the_family_head_and_loads_a_fitting_one():
    from bert_keras.tasks.registry import get_task

    path = str(FAMILIES / "roberta_classifier")
    ref = reference("roberta_classifier")
    task = get_task("classification")
    three = bk.LabelMap(["a", "b", "c"])
    model = task.build_model(bk.BertEncoder.from_pretrained(path), three, checkpoint=path)
    assert model.hidden_activation == "tanh"
    inputs = {"input_word_ids": ref["pairs_input_ids"], "input_mask": ref["pairs_attention_mask"],
              "input_type_ids": np.zeros_like(ref["pairs_input_ids"])}
    np.testing.assert_allclose(model(inputs).numpy(), ref["pairs_logits"], atol=1e-4)
    two = task.build_model(bk.BertEncoder.from_pretrained(path), bk.LabelMap(["x", "y"]),
                           checkpoint=path)  # another label set: a new head, same family
    assert two.hidden_activation == "tanh" and two.num_classes == 2


@pytest.mark.parametrize("name", ["distilbert", "albert", "roberta", "xlm_roberta"])
def test_whole_word_masking_finds_the_family_word_starts(name):
    """Pretraining data marks a word's first piece: "##" continues a WordPiece word; "▁"
    (SentencePiece) and "Ġ" (byte-level BPE) start a word."""
    from bert_keras.data.pretraining import stages
    tokenizer = load_tokenizer(str(FAMILIES / name))
    lines = tf.constant(["unbelievably tokenized words", "words again"])
    pieces, starts, *_ = stages._flat_tokens(tokenizer, stages._suffix_table(tokenizer), lines,
                                             tf.constant([0, 0]), "none")
    pieces = [tokenizer.vocab[i] for i in pieces.numpy()]
    assert starts.numpy().sum() == 5, list(zip(pieces, starts.numpy()))
    assert starts[0] == 1
