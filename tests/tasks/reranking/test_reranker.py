"""The reranking task type against sentence-transformers: a WordPiece (BERT) and a byte-level
BPE (RoBERTa) CrossEncoder (tests/fixtures/make_reranker_references.py) import with their head
and activation and score pairs and rank documents as `CrossEncoder.predict` / `.rank` do, in
user code and through the export's serving function; a tiny fit lowers each loss; bad inputs
are refused in one line."""

import json
import pathlib
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

import bert_keras as bk
from bert_keras import assets
from bert_keras.serving import export
from bert_keras.tasks import registry
from bert_keras.tasks.reranking import reader

SEQ = 64  # the fixtures' position table
ROOT = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures"
RERANKING = FIXTURES / "reranking"
SOURCES = json.loads((RERANKING / "sources.json").read_text())
NAMES = sorted(SOURCES)
EXAMPLES = json.loads((RERANKING / "examples.json").read_text(encoding="utf-8"))
NOT_TOKENIZER = ("config.json", "model.safetensors", "*.npz", "multilingual.json", "answers.json")


def checkpoint(name, directory):
    """`directory`/`name`: the CrossEncoder `name` with its tokenizer files; returns the path."""
    path = pathlib.Path(directory) / name
    shutil.copytree(FIXTURES / "families" / SOURCES[name], path,
                    ignore=shutil.ignore_patterns(*NOT_TOKENIZER))
    for file in ("config.json", "model.safetensors", "config_sentence_transformers.json"):
        shutil.copyfile(RERANKING / name / file, path / file)
    return path


def reference(name):
    return json.loads((RERANKING / name / "reference.json").read_text())


def pairs():
    return ([q for q, _ in EXAMPLES["pairs"]], [d for _, d in EXAMPLES["pairs"]])


@pytest.mark.parametrize("name", NAMES)
def test_each_family_scores_and_ranks_as_sentence_transformers(tmp_path, name):
    path = checkpoint(name, tmp_path)
    ref = reference(name)
    reranker = bk.BertReranker.from_pretrained(path, seq_length=SEQ)
    assert reranker.activation == ref["activation"].lower()
    scores = reranker.predict(pairs())
    assert scores.dtype == np.float32 and scores.shape == (len(EXAMPLES["pairs"]),)
    np.testing.assert_allclose(scores, ref["scores"], atol=1e-4, err_msg=name)
    for query, want in zip(EXAMPLES["queries"], ref["ranks"]):
        got = reranker.rank(query["query"], query["documents"])
        assert [r["corpus_id"] for r in got] == [r["corpus_id"] for r in want]
        np.testing.assert_allclose([r["score"] for r in got], [r["score"] for r in want],
                                   atol=1e-4)
        assert len(reranker.rank(query["query"], query["documents"], top_k=1)) == 1
    # The directory is a reranking task for the tools, served the same.
    model, tokenizer, info = registry.load_task(str(path))
    assert info["task"] == "reranking" and isinstance(model, bk.BertReranker)
    functions = export.serving_functions(model, tokenizer, dict(info, seq_length=SEQ))
    queries = [q["query"] for q in EXAMPLES["queries"]]
    width = max(len(q["documents"]) for q in EXAMPLES["queries"])
    documents = [q["documents"] + [""] * (width - len(q["documents"]))
                 for q in EXAMPLES["queries"]]
    out = functions.serve(tf.constant(queries), tf.constant(documents))
    for row, (query, want) in enumerate(zip(EXAMPLES["queries"], ref["ranks"])):
        k = len(query["documents"])
        assert out["order"][row][:k].numpy().tolist() == [r["corpus_id"] for r in want]
        by_id = {r["corpus_id"]: r["score"] for r in want}
        np.testing.assert_allclose(out["scores"][row][:k], [by_id[i] for i in range(k)],
                                   atol=1e-4)
        assert np.all(np.isneginf(out["scores"][row][k:]))


def test_the_activation_of_older_cross_encoders_and_plain_checkpoints(tmp_path):
    path = checkpoint("roberta", tmp_path)
    (path / "config_sentence_transformers.json").unlink()
    assert bk.BertReranker.from_pretrained(path).activation == "sigmoid"  # CrossEncoder's default
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps(dict(
        config, sbert_ce_default_activation_function="torch.nn.modules.linear.Identity")))
    assert bk.BertReranker.from_pretrained(path).activation == "identity"
    (path / "config.json").write_text(json.dumps(dict(
        config, sentence_transformers={"activation_fn": "torch.nn.modules.activation.ReLU"})))
    with pytest.raises(bk.InputError, match="config.json: activation "
                                            "'torch.nn.modules.activation.ReLU' is not one"):
        bk.BertReranker.from_pretrained(path)


def test_save_transformers_writes_a_cross_encoder(tmp_path):
    """What sentence-transformers reads as a CrossEncoder with the model's activation (checked
    once by CrossEncoder(directory) 6.3.0, scores within 1e-6): one label, no regression
    problem_type; read back, it scores the same."""
    reranker = bk.BertReranker.from_pretrained(checkpoint("roberta", tmp_path), seq_length=SEQ)
    assert reranker.activation == "identity"  # not CrossEncoder's default
    bk.save_transformers(reranker, tmp_path / "written")
    config = json.loads((tmp_path / "written" / "config.json").read_text())
    assert "problem_type" not in config and config["id2label"] == {"0": "LABEL_0"}
    assert config["architectures"] == ["RobertaForSequenceClassification"]
    st_config = json.loads((tmp_path / "written" / "config_sentence_transformers.json").read_text())
    assert st_config["model_type"] == "CrossEncoder"
    assert st_config["activation_fn"] == "torch.nn.modules.linear.Identity"
    again = bk.BertReranker.from_pretrained(tmp_path / "written", seq_length=SEQ)
    assert again.activation == "identity"
    np.testing.assert_allclose(again.predict(pairs()), reference("roberta")["scores"], atol=1e-4)


def test_the_bundled_retrieval_task():
    """bert_keras/assets/make_bible_retrieval.py's files, read as --task=reranking reads them:
    a King James verse, its World English wording, 7 other verses led by its chapter
    neighbours; no query of dev or test is a training query."""
    task = registry.get_task("reranking")
    splits = {split: task.read_files([assets.path(f"bible_retrieval.{split}.jsonl.gz")], "jsonl")
              for split in ("train", "dev", "test")}
    assert {k: len(v) for k, v in splits.items()} == {"train": 1000, "dev": 200, "test": 200}
    for example in splits["dev"]:
        assert len(example.positives) == 1 and len(example.negatives) == 7
        assert example.positives[0] not in example.negatives
    train = {ex.query for ex in splits["train"]}
    assert not train & {ex.query for ex in splits["dev"] + splits["test"]}


def test_fine_tuning_over_replicas_is_refused_before_any_work(tmp_path):
    """The trainer deals a batch's rows out over replicas, which would tear its query groups
    apart: refused in one line, nothing written."""

    class TwoReplicas:  # all run_finetuning reads of a strategy before the check
        num_replicas_in_sync = 2

    train = tmp_path / "train.jsonl"
    train.write_text(json.dumps({"query": "Who wept?", "positives": ["Jesus wept."],
                                 "negatives": ["Amen."]}) + "\n")
    with pytest.raises(bk.InputError, match="--task=reranking trains on one replica only: its "
                                            "batches are groups that 2 replicas of "
                                            "--distribution_strategy="):
        bk.run_finetuning(task="reranking", train_file=str(train),
                          init_checkpoint=str(FIXTURES / "families" / "distilbert"),
                          output_dir=str(tmp_path / "run"), strategy=TwoReplicas())
    assert not (tmp_path / "run").exists()


QUERIES = ["Who wept?", "Who created the heavens?", "Where did he go?", "Who is the king?"]
POSITIVES = ["Jesus wept.", "God created the heavens.", "He went up to Jerusalem.",
             "Yahweh is the king of glory."]
NEGATIVES = [["Amen.", "The earth was empty."], ["Jesus wept."], ["Amen.", "Rome."], []]


def tiny_reranker(**kwargs):
    """A new tiny encoder (the fixtures' N(0, 0.3) weights leave little gradient) with the
    WordPiece fixture's tokenizer."""
    keras.utils.set_random_seed(0)
    tokenizer = bk.load_tokenizer(str(FIXTURES / "families" / "distilbert"))
    encoder = bk.BertEncoder(vocab_size=len(tokenizer.vocab), num_layers=1, hidden_size=16,
                             num_heads=2, intermediate_size=32, max_positions=SEQ, dropout=0.0,
                             attention_dropout=0.0)
    return bk.BertReranker(encoder, dropout=0.0, preprocessor=bk.TextPreprocessor(tokenizer, SEQ),
                           **kwargs)


@pytest.mark.parametrize("loss", ["listwise", "pointwise"])
def test_a_tiny_fit_lowers_the_loss_and_the_model_saves(tmp_path, loss):
    model = tiny_reranker(ranking_loss=loss, in_batch_negatives=loss == "listwise")
    model.compile(optimizer=keras.optimizers.Adam(1e-2))  # the default loss
    data = (QUERIES, POSITIVES, NEGATIVES)
    history = model.fit(data, batch_size=4, epochs=8, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < losses[0], losses
    scores = model.predict((QUERIES, POSITIVES))
    if loss == "listwise":  # each positive now ranks first among its query's candidates
        for q, p, n in zip(QUERIES, POSITIVES, NEGATIVES):
            assert model.rank(q, [p] + n)[0]["corpus_id"] == 0
        path = tmp_path / "reranker.keras"
        model.save(path)
        loaded = keras.saving.load_model(path)
        assert loaded.ranking_loss == "listwise" and loaded.in_batch_negatives
        np.testing.assert_allclose(loaded.predict((QUERIES, POSITIVES)), scores, atol=1e-5)
        assert registry.task_of_model(loaded).name == "reranking"


def test_bad_inputs_are_refused_in_one_line(tmp_path):
    model = tiny_reranker()
    with pytest.raises(ValueError, match="2 queries but 1 documents"):
        model.predict((["a", "b"], ["x"]))
    with pytest.raises(ValueError, match="document 0 is \\['x', 'y'\\], not a string"):
        model.predict((["a"], [["x", "y"]]))
    with pytest.raises(ValueError, match="query 1 is ''; a query must be a non-empty string"):
        model.predict((["a", ""], ["x", "y"]))
    with pytest.raises(ValueError, match="row 0: no positive document"):
        model.fit((["a"], [[]], [["x"]]), verbose=0)
    with pytest.raises(ValueError, match="take \\(queries, positives, negatives\\)"):
        model.fit((["a"], ["x"]), [1.0], verbose=0)
    line = tmp_path / "bad.jsonl"
    line.write_text('{"query": "Who wept?", "positives": ["Jesus wept."]}\n'
                    '{"query": "Who?", "positives": [], "negatives": ["Amen."]}\n')
    with pytest.raises(reader.TaskFileError, match="bad.jsonl:2: no positive document for the "
                                                   "query 'Who\\?'"):
        reader.read_reranking_jsonl(str(line))
    tsv = tmp_path / "bad.tsv"
    tsv.write_text("Who wept?\tJesus wept.\tAmen.\n\tJesus wept.\n")
    with pytest.raises(reader.TaskFileError, match="bad.tsv:2: the query is ''"):
        reader.read_reranking_tsv(str(tsv))
    tsv.write_text("Who wept?\tJesus wept.\tAmen.\nWho wept?\tHe wept.\tRome.\nWhere?\n")
    with pytest.raises(reader.TaskFileError, match="bad.tsv:3: 1 field"):
        reader.read_reranking_tsv(str(tsv))
    tsv.write_text("Who wept?\tJesus wept.\tAmen.\nWho wept?\tHe wept.\tRome.\n")
    (example,) = reader.read_reranking_tsv(str(tsv))
    assert example.candidates == ["Jesus wept.", "He wept.", "Amen.", "Rome."]
    assert example.relevance == [1, 1, 0, 0]
