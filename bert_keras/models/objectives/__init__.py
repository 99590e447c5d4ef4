"""Models whose loss is their own: `objective_model.ObjectiveModel` (the base of the ELECTRA and
distillation pretrainers), `losses` (the masked-LM / token losses and metrics every task and
objective uses) and `task_distillation.TaskDistiller` (fine-tuning against a teacher's logits)."""
