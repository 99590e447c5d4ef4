"""The benchmarks behind tools/benchmark.py (BENCHMARKS.md), and the five other measurements.

tools/benchmark.py is the command; here are its parts (each module's docstring says more):

  sections.py                the sections and the worker functions by name
  encoder.py, training.py,   one section each: inference, pretrain + finetune, data, export
  pipeline.py, export.py
  flops.py                   model FLOPs and the peak section (matmul GFLOP/s)
  runner.py, inputs.py,      workers in subprocesses, interleaved; their shared inputs;
  timing.py                  timing inside a worker
  report.py, goals.py,       the section of BENCHMARKS.md: ratios, Goals, Results table,
  table.py, file.py,         the file's layout (one section per CPU kind, then the Notes),
  machine.py                 the machine and its CPU kind

Five other commands, from the repository root:

  python -m bert_keras_tools.bench.data               our create_pretraining_data against
                                                      Google's (BENCHMARKS.md, Notes)
  python -m bert_keras_tools.bench.compare_variants   the BERT variants at small scale
                                                      (docs/variants.md)
  python -m bert_keras_tools.bench.prep               export and fine-tuning featurizing
                                                      time (BENCHMARKS.md, Notes)
  python -m bert_keras_tools.bench.optimizer          one AdamW update against Keras' and
                                                      PyTorch's (BENCHMARKS.md, Notes)
  python -m bert_keras_tools.bench.tokenizing         our tokenizers against keras-hub's and
                                                      the Rust `tokenizers` (BENCHMARKS.md, Notes)
"""
