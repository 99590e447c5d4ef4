"""bert_keras: BERT in TensorFlow 2.21 and Keras 3, from raw text to TF Serving.

The public names, in data-flow order (docs/architecture.md): text, data, checkpoints,
optimization, models, metrics, tasks, training, serving.
"""

import gc as _gc  # private: not a name of the package

# First, before anything imports TensorFlow: its oneDNN kernels on AVX2-only CPUs too.
from bert_keras import cpu_kernels

cpu_kernels.prefer_onednn()

# The garbage collector paused while TensorFlow, Keras, tf-text and the package load: they
# make about a million long-lived objects, and the full passes that their growth set off
# took ~0.45 s of a fresh import's ~3.5 s of CPU (median of 6 runs: 3.54 -> 3.08 s).
_collecting = _gc.isenabled()
_gc.disable()
try:
    from bert_keras import metrics
    from bert_keras.checkpoints import CheckpointError
    from bert_keras.checkpoints.transformers_writer import save_transformers
    from bert_keras.configs import ConfigError
    from bert_keras.data.finetuning.label_map import LabelMap
    from bert_keras.data.finetuning.tfds import load_tfds_task
    from bert_keras.data.pretraining.pipeline import (
        create_pretraining_tfrecords,
        dynamic_pretraining_dataset,
    )
    from bert_keras.data.pretraining.records import (
        GOOGLE_TO_MODEL_NAMES,
        read_pretraining_tfrecords,
    )
    from bert_keras.errors import InputError
    from bert_keras.models.encoder import BertEncoder
    from bert_keras.models.encoder.config import PRESETS, EncoderConfig
    from bert_keras.models.heads import ClassificationHead
    from bert_keras.models.objectives.task_distillation import TaskDistiller
    from bert_keras.names import IGNORE_LABEL, INPUT_NAMES
    from bert_keras.optimization import AdamW, Lamb, WarmupDecay, create_optimizer
    from bert_keras.serving.export import (
        export_model,
        export_saved_model,
        export_task,
        next_version,
        read_metadata,
        run_export,
    )
    from bert_keras.serving.export_config import ExportConfig
    from bert_keras.serving.op_audit import OpAuditError, audit_saved_model
    from bert_keras.tasks import finetuning_data, task_features
    from bert_keras.tasks.base import Task
    from bert_keras.tasks.classification import BertClassifier
    from bert_keras.tasks.embedding import (
        POOLINGS,
        BertEmbedder,
        MultipleNegativesRankingLoss,
        SentencePooling,
    )
    from bert_keras.tasks.finetuning_data import ClassificationExample, SpanExample, TaggingExample
    from bert_keras.tasks.multiple_choice import BertMultipleChoice
    from bert_keras.tasks.pretraining import (
        BertPretrainer,
        DistillationPretrainer,
        DistillOptions,
        ElectraOptions,
        ElectraPretrainer,
        student_from_teacher,
    )
    from bert_keras.tasks.pretraining.heads import MaskedLMHead, NextSentenceHead, ReplacedTokenHead
    from bert_keras.tasks.registry import TASKS, get_task, load_task
    from bert_keras.tasks.reranking import BertReranker
    from bert_keras.tasks.span_qa import BertSpanQA
    from bert_keras.tasks.span_qa.decoding import decode_answers
    from bert_keras.tasks.span_qa.head import SpanHead
    from bert_keras.tasks.tagging import BertTokenClassifier
    from bert_keras.tasks.tagging.head import TokenClassificationHead
    from bert_keras.tasks.task_io import save_task
    from bert_keras.tasks.text_preprocessor import TextPreprocessor
    from bert_keras.text.byte_bpe_tokenizer import ByteBpeTokenizer
    from bert_keras.text.preprocessor import BertPreprocessor
    from bert_keras.text.sentencepiece_tokenizer import SentencePieceTokenizer
    from bert_keras.text.tokenizer import SPECIAL_TOKENS, BertTokenizer, WordPieceTokenizer
    from bert_keras.text.tokenizers import load_tokenizer
    from bert_keras.text.vocab import load_vocab, save_vocab
    from bert_keras.text.vocab_learning import learn_vocab, text_files_dataset
    from bert_keras.text.xlm_roberta_tokenizer import XlmRobertaTokenizer
    from bert_keras.training.finetuning import run_finetuning
    from bert_keras.training.finetuning_config import FinetuneConfig
    from bert_keras.training.loop import TrainingDivergedError, train
    from bert_keras.training.precision import DTYPES
    from bert_keras.training.pretraining import run_pretraining
    from bert_keras.training.pretraining_config import PretrainConfig
    from bert_keras.training.strategy import STRATEGIES, create_strategy, per_replica_batch_size
finally:
    if _collecting:
        _gc.enable()
    del _collecting

# Before XLA's first compile, which reads XLA_FLAGS: its faster compiles of the fused kernels.
cpu_kernels.prefer_fast_xla_compiles()
