"""The one configurable backbone: `encoder.BertEncoder` (every family a configuration of it),
`config.EncoderConfig` and its `PRESETS`, and `inference` (length-bucketed batches,
`cast_for_inference`)."""

from bert_keras.models.encoder.config import PRESETS, EncoderConfig
from bert_keras.models.encoder.encoder import BertEncoder

__all__ = ["PRESETS", "BertEncoder", "EncoderConfig"]
