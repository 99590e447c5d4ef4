"""The task types, one `Task` class each (classification, multi-label, regression, tagging,
span QA, pretraining, encoder): features, model, loss, predict, score and serving function;
`registry` maps names to them, `task_io` reads and writes trained task directories."""
