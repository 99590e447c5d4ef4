"""A saved task model loads with plain `keras.models.load_model` in a fresh process once
`bert_keras` is imported (its classes register themselves with Keras on import).

Keras 3 resolves a custom class of a `.keras` file by its registered name ("bert_keras>
BertClassifier"), which only an imported package has registered: it imports the module a
config names only for keras' own packages (keras, keras_hub, keras_cv, keras_nlp;
`keras.src.saving.serialization_lib._retrieve_class_or_fn`), so no supported hook imports
bert_keras for the user. docs/python_api.md and the README say so; this test holds both
halves: without the import the load fails with Keras' "Could not locate class", with it the
model predicts as before saving."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np

import bert_keras as bk

ROOT = pathlib.Path(__file__).resolve().parents[2]
FAMILIES = ROOT / "tests" / "fixtures" / "families"
TEXTS = ["In the beginning God created the heaven and the earth.", "Jesus wept."]

LOAD = """
import json, sys
{imports}
import keras
model = keras.models.load_model(sys.argv[1])  # no custom_objects
print(json.dumps(model.predict(json.loads(sys.argv[2]), verbose=0).tolist()))
"""


def load_in_a_fresh_process(path, imports):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    return subprocess.run([sys.executable, "-c", LOAD.format(imports=imports), str(path),
                           json.dumps(TEXTS)], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=300)


def test_a_saved_classifier_loads_in_a_fresh_process_that_imports_bert_keras(tmp_path):
    model = bk.BertClassifier.from_pretrained(str(FAMILIES / "bert_qa"), num_classes=3,
                                              seq_length=16)
    before = model.predict(TEXTS, verbose=0)
    path = tmp_path / "clf.keras"
    model.save(path)

    proc = load_in_a_fresh_process(path, "import bert_keras  # registers its classes")
    assert proc.returncode == 0, proc.stderr[-3000:]
    after = np.array(json.loads(proc.stdout.strip().splitlines()[-1]))
    np.testing.assert_allclose(after, before, atol=1e-5)

    # Without it Keras cannot know the class (what the docs warn about).
    proc = load_in_a_fresh_process(path, "")
    assert proc.returncode != 0 and "Could not locate class 'BertClassifier'" in proc.stderr, \
        proc.stderr[-3000:]
