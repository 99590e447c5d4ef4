"""Keras 3 building blocks below the task types: `layers/` (the encoder's layers and their
compiled train-step forms), `encoder/` (the one configurable backbone, `BertEncoder`, with
`EncoderConfig`, its presets and inference helpers), `heads` (the heads several task types
share) with `head_checkpoints` (what every task type's head loader shares), `objectives/`
(losses, `ObjectiveModel`, task distillation) and `idle_layers`.

The task models (`BertClassifier`, `BertTokenClassifier`, `BertSpanQA`, `BertPretrainer`,
`BertEmbedder`) are in their task packages, `bert_keras.tasks.<name>`."""
