"""PyTorch's side of benchmarks/int8_accuracy.py, run by the reference interpreter (torch and
transformers, no TensorFlow): the bundled paraphrase test accuracy of a transformers
checkpoint (the fine-tuned model written by `bk.save_transformers`) in float32 and after
`torch.ao.quantization.quantize_dynamic` (int8 Linear layers, activations quantized per
call), with the size of each state dict.

    /tmp/ref/bin/python benchmarks/torch_int8_accuracy.py CHECKPOINT_DIR SEQ_LENGTH
"""

import gzip
import io
import json
import pathlib
import sys

ASSETS = pathlib.Path(__file__).resolve().parents[1] / "bert_keras" / "assets"


def main(checkpoint, seq_length):
    import numpy as np
    import torch
    import transformers

    with gzip.open(ASSETS / "bible_paraphrase.test.tsv.gz", "rt", encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f]
    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(checkpoint).eval()
    models = {"float32": model,
              "dynamic int8": torch.ao.quantization.quantize_dynamic(
                  model, {torch.nn.Linear}, torch.qint8)}
    names = model.config.id2label
    for name, net in models.items():
        predicted = []
        for start in range(0, len(rows), 64):
            batch = rows[start:start + 64]
            inputs = tokenizer([r[1] for r in batch], [r[2] for r in batch], padding=True,
                               truncation=True, max_length=seq_length, return_tensors="pt")
            with torch.inference_mode():
                predicted += net(**inputs).logits.argmax(-1).tolist()
        accuracy = float(np.mean([names[p] == r[0] for p, r in zip(predicted, rows)]))
        buffer = io.BytesIO()
        torch.save(net.state_dict(), buffer)
        print("RESULT " + json.dumps(dict(system=name, accuracy=accuracy, labels=predicted,
                                          mb=buffer.tell() / 1e6)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
