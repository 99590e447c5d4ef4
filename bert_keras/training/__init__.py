"""Training: the resumable loop for pretraining (MLM + NSP / SOP, ELECTRA, distillation),
fine-tuning runs with evaluation and best-checkpoint selection, distribution strategies,
mixed precision, optimizers' schedules and callbacks."""
