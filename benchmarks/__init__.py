"""The benchmarks: beside bert_keras, not installed with it. Run from the repository root.

  python -m benchmarks.run           bert_keras against keras-hub and Hugging Face PyTorch
                                     (BENCHMARKS.md, one section per CPU kind)

Its parts (each module's docstring says more):

  sections.py                the sections and the worker functions by name
  encoder.py, training.py,   one section each: inference, pretrain + finetune, data, export,
  pipeline.py, export.py,    ModernBERT-base and DeBERTa-v3-base against transformers'
  modernbert.py, deberta.py  PyTorch models (what those two share: versus_torch.py)
  flops.py                   model FLOPs and the peak section (matmul GFLOP/s)
  runner.py, inputs.py,      workers in subprocesses, interleaved; their shared inputs;
  timing.py                  timing inside a worker
  report.py, goals.py,       the section of BENCHMARKS.md: ratios, Goals (goals.json),
  table.py, file.py,         Results table, the file's layout (one section per CPU kind,
  machine.py                 then the hand-written sections), the machine and its CPU kind

The other measurements, each its own command:

  python -m benchmarks.data               our create_pretraining_data against Google's
  python -m benchmarks.compare_variants   the BERT variants at small scale (docs/variants.md)
  python -m benchmarks.prep               export and fine-tuning featurizing time
  python -m benchmarks.optimizer          one AdamW update against Keras' and PyTorch's
  python -m benchmarks.tokenizing         our tokenizers against keras-hub's and the Rust
                                          `tokenizers`
  python benchmarks/qa_windows_latency.py served span QA over one and four windows

Their last published figures: BENCHMARKS.md and benchmarks/history_2026-11.md.
"""
