"""The command-line tools (absl mains); installed as the package bert_keras_tools and as
console scripts bert-keras-<tool>; `python tools/<tool>.py` runs them from a checkout."""
