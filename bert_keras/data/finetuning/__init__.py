"""Fine-tuning data, what every task type shares: the file helpers its readers build on
(`task_files`), the sanity checks of a training file, label maps, chunked tokenizing
(`features`), length-bucketed batches (`batching`), the bundled tasks and TFDS datasets (read
through the task types the registry hands down: `task_types`). Each task type's example
type, readers, featurizer and decoder live in its package, `bert_keras/tasks/<name>/`."""
