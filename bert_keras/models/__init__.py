"""Keras 3 models: the one configurable backbone (`encoder.BertEncoder` with
`encoder_config.EncoderConfig`), its layers and heads, the task models
(`task_models.BertClassifier`, `BertTokenClassifier`, `BertSpanQA`, `BertPretrainer`) with
the preprocessor they carry, the ELECTRA and distillation pretrainers, losses, and the heads'
checkpoint loaders."""
