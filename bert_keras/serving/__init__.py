"""SavedModels for TF Serving: `export` (versioned, audited, warmed-up exports of a task
model or task directory), `signatures` (raw text or ids in, in-graph tokenization), the op
audit against stock TF Serving, and warmup requests."""
