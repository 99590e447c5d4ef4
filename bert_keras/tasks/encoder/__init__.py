"""The bare encoder as a task type: what an exported `BertEncoder` serves (pooled and
per-token representations). Its model is `bert_keras.models.encoder.BertEncoder`."""

from bert_keras.tasks.encoder.task import Encoder

__all__ = ["Encoder"]
