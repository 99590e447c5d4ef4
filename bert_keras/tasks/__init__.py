"""The task types, one package each (classification with its problem types single_label,
multi_label and regression; tagging; span_qa; embedding; pretraining; encoder): its Keras
task model and head, the featurizer of its raw inputs, reading, predicting, scoring and its
serving function.

What they share is here: `base.Task` (the protocol), `task_model.BertTaskModel` (the task
models' base, raw text through `text_inputs` and `text_preprocessor`), `targets` (label
checks), `graph_ops` (in-graph serving helpers), `task_io` (task directories, written and
read) and `registry` (names -> task types; which task type a model or a transformers
checkpoint is).
"""
