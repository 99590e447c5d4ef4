"""bert_keras: BERT in TensorFlow 2.21 and Keras 3, from raw text to TF Serving."""

from bert_keras import finetuning_data, metrics, task_features
from bert_keras.checkpoints import CheckpointError
from bert_keras.encoder import PRESETS, BertEncoder
from bert_keras.export import export_model, export_task, next_version, read_metadata
from bert_keras.finetuning import run_finetuning
from bert_keras.finetuning_data import ClassificationExample, SpanExample, TaggingExample
from bert_keras.heads import (
    ClassificationHead,
    MaskedLMHead,
    NextSentenceHead,
    SpanHead,
    TokenClassificationHead,
)
from bert_keras.label_map import LabelMap
from bert_keras.models import (
    IGNORE_LABEL,
    BertClassifier,
    BertPretrainer,
    BertSpanQA,
    BertTokenClassifier,
)
from bert_keras.op_audit import OpAuditError, audit_saved_model
from bert_keras.optimization import AdamW, Lamb, WarmupDecay, create_optimizer
from bert_keras.preprocessing import BertPreprocessor
from bert_keras.pretraining_data import create_pretraining_tfrecords, dynamic_pretraining_dataset
from bert_keras.pretraining_records import GOOGLE_TO_MODEL_NAMES, read_pretraining_tfrecords
from bert_keras.span_decoding import decode_answers
from bert_keras.strategy import STRATEGIES, create_strategy, per_replica_batch_size
from bert_keras.task_io import load_task, save_task
from bert_keras.tfds_tasks import load_tfds_task
from bert_keras.training import DTYPES, TrainingDivergedError, run_pretraining, train
from bert_keras.tokenization import (
    SPECIAL_TOKENS,
    BertTokenizer,
    learn_vocab,
    load_vocab,
    save_vocab,
    text_files_dataset,
)
