"""The BertEncoder arguments that every BERT-style config file names alike: Google's
`bert_config.json` / `albert_config.json` and transformers' BERT, RoBERTa, ALBERT and
ELECTRA `config.json` (each layout maps its own activation names)."""


def encoder_arguments(c, activation, default_dropout=0.1):
    """BertEncoder arguments of config dict `c`; `activation` already mapped to ours,
    `default_dropout` for configs without dropout keys (ALBERT's is 0).

    >>> encoder_arguments(dict(vocab_size=9, num_hidden_layers=1, hidden_size=4,
    ...     num_attention_heads=2, intermediate_size=8, max_position_embeddings=16,
    ...     type_vocab_size=2), "gelu")["attention_dropout"]
    0.1
    """
    return dict(
        vocab_size=c["vocab_size"], num_layers=c["num_hidden_layers"],
        hidden_size=c["hidden_size"], num_heads=c["num_attention_heads"],
        intermediate_size=c["intermediate_size"], activation=activation,
        dropout=c.get("hidden_dropout_prob", default_dropout),
        attention_dropout=c.get("attention_probs_dropout_prob", default_dropout),
        max_positions=c["max_position_embeddings"], type_vocab_size=c["type_vocab_size"],
        layer_norm_epsilon=c.get("layer_norm_eps", 1e-12),
        initializer_range=c.get("initializer_range", 0.02),
    )
