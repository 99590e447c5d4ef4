"""Keras 3 building blocks below the task types: `layers/` (the encoder's layers and their
compiled train-step forms), `encoder/` (the one configurable backbone, `BertEncoder`, with
`EncoderConfig`, its presets and inference helpers), `heads` (every head the task types and
objectives put on the encoder) with `head_checkpoints` (their weights from Google and Hugging
Face files), `objectives/` (losses, `ObjectiveModel`, task distillation) and `idle_layers`.

The task models (`BertClassifier`, `BertTokenClassifier`, `BertSpanQA`, `BertPretrainer`,
`BertEmbedder`) are in their task packages, `bert_keras.tasks.<name>`."""
