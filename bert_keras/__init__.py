"""bert_keras: BERT in TensorFlow 2.21 and Keras 3, from raw text to TF Serving."""

from bert_keras.checkpoints import CheckpointError
from bert_keras.encoder import PRESETS, BertEncoder
