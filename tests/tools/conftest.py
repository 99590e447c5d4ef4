"""Fixtures of the tool tests."""

import pytest


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory, minilm_dir):
    """A random 1-layer encoder with the real MiniLM vocab, saved with save_pretrained."""
    import bert_keras as bk
    from bert_keras.text.tokenizer import BertTokenizer

    tokenizer = BertTokenizer.from_pretrained(minilm_dir)
    encoder = bk.BertEncoder(vocab_size=tokenizer.vocab_size, num_layers=1, hidden_size=32,
                             num_heads=2, intermediate_size=64, max_positions=128)
    path = tmp_path_factory.mktemp("tiny_encoder")
    encoder.save_pretrained(str(path), tokenizer=tokenizer)
    return path
