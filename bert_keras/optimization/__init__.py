"""Optimizers and learning-rate schedules of BERT training: AdamW and LAMB with decoupled
weight decay (not on LayerNorm and biases), gradient accumulation, warmup + decay, layer-wise
learning-rate decay. Below the models (which compile with AdamW by default) and the training
runs (which build them with `create_optimizer`).

>>> import bert_keras as bk
>>> optimizer = create_optimizer("adamw", learning_rate=1e-4, num_train_steps=100,
...                              num_warmup_steps=10)
>>> type(optimizer).__name__
'AdamW'
"""

from bert_keras.optimization.optimizers import AdamW, Lamb, create_optimizer, default_optimizer
from bert_keras.optimization.schedules import WarmupDecay, layerwise_lr_multiplier

__all__ = ["AdamW", "Lamb", "WarmupDecay", "create_optimizer", "default_optimizer",
           "layerwise_lr_multiplier"]
