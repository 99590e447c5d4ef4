"""EncoderConfig: the architecture of a BertEncoder (what its weights' shapes and math depend
on), and the published sizes as presets.

>>> PRESETS["bert_base"].num_layers, PRESETS["bert_base"].hidden_size
(12, 768)
>>> PRESETS["albert_base_v2"].embedding_size, PRESETS["albert_base_v2"].num_layer_groups
(128, 1)
>>> EncoderConfig(hidden_size=100, num_heads=12)
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: BertEncoder: hidden_size=100 is not divisible by num_heads=12.
"""

import dataclasses

import tensorflow as tf

from bert_keras.configs import Config, check, option
from bert_keras.models.layers import disentangled
from bert_keras.models.layers.activations import ACTIVATIONS

# The standard English WordPiece vocabularies (uncased and cased are within a few hundred).
DEFAULT_VOCAB_SIZE = 30522


@dataclasses.dataclass(frozen=True)
class EncoderConfig(Config):
    """The constructor arguments of `BertEncoder` that define its weights and math."""

    vocab_size: int = option(DEFAULT_VOCAB_SIZE, "Rows of the token embedding (the vocab size).")
    num_layers: int = option(12, "Transformer blocks.")
    hidden_size: int = option(768, "Width of the embeddings and every block.")
    num_heads: int = option(12, "Attention heads (hidden_size must divide by it).")
    intermediate_size: int = option(3072, "Width of the feed-forward layer of a block.")
    activation: str = option("gelu", "Feed-forward activation.", choices=ACTIVATIONS)
    dropout: float = option(0.1, "Dropout of the embeddings and block outputs.")
    attention_dropout: float = option(0.1, "Dropout of the attention probabilities.")
    max_positions: int = option(512, "Rows of the learned position embedding (position_offset "
                                "included).")
    type_vocab_size: int = option(2, "Segment ids (0 = A, 1 = B); 0: no segment embedding "
                                  "(DistilBERT).")
    layer_norm_epsilon: float = option(1e-12, "Layer norm epsilon.")
    initializer_range: float = option(0.02, "Stddev of the truncated-normal initializers.")
    embedding_size: int = option(None, "Width of factorized embeddings (ALBERT, ELECTRA-small): "
                                 "a dense projection to hidden_size follows their layer norm; "
                                 "None: hidden_size wide, no projection (BERT).")
    num_layer_groups: int = option(None, "Blocks with their own weights; layer i uses block "
                                   "i * groups // num_layers (ALBERT shares one: 1); None: "
                                   "num_layers (BERT).")
    position_offset: int = option(0, "Row of the position embedding of the first token "
                                  "(RoBERTa: padding_idx + 1 = 2).")
    use_pooler: bool = option(True, "A dense-tanh pooler on the first token; False: "
                              "pooled_output is the first token's hidden state (DistilBERT).")
    rotary_theta: float = option(None, "Rotary position embeddings of queries and keys with "
                                 "this base instead of a learned position table (ModernBERT's "
                                 "global layers: 160,000); None: the learned table (BERT).")
    local_rotary_theta: float = option(None, "The rotary base of the local (sliding-window) "
                                       "layers (ModernBERT: 10,000); None: rotary_theta.")
    local_attention: int = option(None, "Window of the local layers, in tokens: a token sees "
                                  "those at most local_attention // 2 away (ModernBERT: 128); "
                                  "None: every layer attends globally (BERT).")
    global_attention_every: int = option(1, "With local_attention: layer i attends globally "
                                         "when i % global_attention_every == 0, the others "
                                         "locally (ModernBERT: 3).")
    pre_norm: bool = option(False, "Layer norms before each block's attention and feed-forward "
                            "(none before the first attention) and a final layer norm "
                            "(ModernBERT); False: after them (BERT).")
    gated_mlp: bool = option(False, "GeGLU feed-forward: activation(x W_in) * (x W_gate), "
                             "then W_out (ModernBERT); False: activation(x W_in) W_out.")
    use_bias: bool = option(True, "Biases in the blocks' dense layers; False: none "
                            "(ModernBERT).")
    norm_bias: bool = option(True, "A bias (beta) in every layer norm; False: none "
                             "(ModernBERT).")
    disentangled_attention: str = option(None, "DeBERTa's disentangled attention: the "
                                         "relative-position terms added to the content scores, "
                                         "'c2p|p2c' (DeBERTa-v2/v3), 'c2p' or 'p2c', all scaled "
                                         "by 1 / sqrt(head size x the number of terms); None: "
                                         "none (BERT).", choices=disentangled.TERMS)
    position_buckets: int = option(None, "With disentangled_attention: 2 x position_buckets "
                                   "relative rows, distances beyond position_buckets // 2 "
                                   "log-bucketed up to max_relative_positions (DeBERTa-v3: "
                                   "256); None: distances clipped to max_relative_positions.")
    max_relative_positions: int = option(None, "With disentangled_attention: the farthest "
                                         "distance (None: max_positions).")
    relative_embedding_norm: bool = option(True, "With disentangled_attention: a layer norm of "
                                           "the relative table (DeBERTa's norm_rel_ebd "
                                           "layer_norm).")
    absolute_positions: bool = option(True, "A learned absolute position table added to the "
                                      "embeddings (unless rotary_theta); False: none "
                                      "(DeBERTa-v3's position_biased_input false).")
    project_before_norm: bool = option(False, "The embedding projection (embedding_size -> "
                                       "hidden_size) before the embeddings' layer norm and "
                                       "without bias (DeBERTa); False: after it, with a bias "
                                       "(ALBERT, ELECTRA).")
    mask_embeddings: bool = option(False, "Padded positions' embeddings zeroed after their "
                                   "layer norm (DeBERTa; only the padded rows' outputs "
                                   "differ).")

    def validate(self):
        for name in ("vocab_size", "num_layers", "hidden_size", "num_heads", "intermediate_size",
                     "max_positions", "type_vocab_size", "embedding_size", "num_layer_groups",
                     "position_offset", "position_buckets", "max_relative_positions"):
            value, least = getattr(self, name), 0 if name in ("type_vocab_size",
                                                              "position_offset") else 1
            if value is None and name in ("embedding_size", "num_layer_groups",
                                          "position_buckets", "max_relative_positions"):
                continue
            check(isinstance(value, int) and not isinstance(value, bool) and value >= least,
                  f"BertEncoder: {name} must be an integer >= {least}, got {value!r}.")
        check(self.num_layer_groups is None or self.num_layer_groups <= self.num_layers,
              f"BertEncoder: num_layer_groups={self.num_layer_groups} exceeds "
              f"num_layers={self.num_layers}.")
        check(self.position_offset < self.max_positions,
              f"BertEncoder: position_offset={self.position_offset} leaves no position of "
              f"max_positions={self.max_positions}.")
        check(self.hidden_size % self.num_heads == 0,
              f"BertEncoder: hidden_size={self.hidden_size} is not divisible by "
              f"num_heads={self.num_heads}.")
        check(self.activation in ACTIVATIONS,
              f"BertEncoder: activation {self.activation!r} is not one of {ACTIVATIONS}.")
        check(self.local_attention is None or (
            isinstance(self.local_attention, int) and self.local_attention >= 2),
              f"BertEncoder: local_attention must be None or an integer >= 2, got "
              f"{self.local_attention!r}.")
        check(isinstance(self.global_attention_every, int)
              and self.global_attention_every >= 1,
              f"BertEncoder: global_attention_every must be an integer >= 1, got "
              f"{self.global_attention_every!r}.")
        check(self.local_rotary_theta is None or self.rotary_theta is not None,
              "BertEncoder: local_rotary_theta needs rotary_theta (rotary positions).")
        check((self.rotary_theta is None or (self.hidden_size // self.num_heads) % 2 == 0),
              f"BertEncoder: rotary positions need an even head size, got "
              f"{self.hidden_size // self.num_heads}.")
        check(self.disentangled_attention in (None, *disentangled.TERMS),
              f"BertEncoder: disentangled_attention must be None or one of "
              f"{disentangled.TERMS}, got {self.disentangled_attention!r}.")
        check(self.position_buckets is None or self.position_buckets >= 4,
              f"BertEncoder: position_buckets must be None or >= 4, got "
              f"{self.position_buckets!r}.")
        for name in ("dropout", "attention_dropout"):
            value = getattr(self, name)
            check(0.0 <= value < 1.0, f"BertEncoder: {name} must be in [0, 1), got {value!r}.")

    @property
    def relative_span(self):
        """S of the relative table (2S rows) with disentangled attention: position_buckets,
        else the farthest distance; None without.

        >>> EncoderConfig(disentangled_attention="c2p|p2c", position_buckets=256).relative_span
        256
        """
        if not self.disentangled_attention:
            return None
        return self.position_buckets or self.max_relative_positions or self.max_positions

    def layer_attention(self, i):
        """(rotary base, half window) of layer i's attention: a global layer has no window
        and rotary_theta; a local one local_attention // 2 and local_rotary_theta.

        >>> modern = EncoderConfig(local_attention=128, global_attention_every=3,
        ...                        rotary_theta=160000.0, local_rotary_theta=10000.0)
        >>> [modern.layer_attention(i) for i in range(3)]
        [(160000.0, None), (10000.0, 64), (10000.0, 64)]
        """
        if self.local_attention is None or i % self.global_attention_every == 0:
            return self.rotary_theta, None
        theta = self.rotary_theta if self.local_rotary_theta is None else self.local_rotary_theta
        return theta, self.local_attention // 2


def _presets():
    # Google's 24 small BERTs (Turc et al., 2019): L layers x H hidden, H/64 heads, 4H feed-forward.
    presets = {
        f"bert_L-{layers}_H-{hidden}": EncoderConfig(
            num_layers=layers, hidden_size=hidden, num_heads=hidden // 64,
            intermediate_size=4 * hidden)
        for layers in (2, 4, 6, 8, 10, 12) for hidden in (128, 256, 512, 768)
    }
    presets.update(
        bert_tiny=presets["bert_L-2_H-128"],
        bert_mini=presets["bert_L-4_H-256"],
        bert_small=presets["bert_L-4_H-512"],
        bert_medium=presets["bert_L-8_H-512"],
        bert_base=presets["bert_L-12_H-768"],
        bert_large=EncoderConfig(num_layers=24, hidden_size=1024, num_heads=16,
                                 intermediate_size=4096),
    )
    # The published sizes of the other families (their Hugging Face config.json files).
    base, large = presets["bert_base"], presets["bert_large"]
    roberta = dict(vocab_size=50265, max_positions=514, type_vocab_size=1, position_offset=2,
                   layer_norm_epsilon=1e-5, use_pooler=False)
    albert = dict(vocab_size=30000, embedding_size=128, num_layer_groups=1,
                  activation="gelu_approximate", dropout=0.0, attention_dropout=0.0)
    presets.update(
        roberta_base=base.replace(**roberta),
        roberta_large=large.replace(**roberta),
        albert_base_v2=base.replace(**albert),
        albert_large_v2=large.replace(**albert),
        distilbert_base=base.replace(num_layers=6, type_vocab_size=0, use_pooler=False),
        electra_small=EncoderConfig(num_layers=12, hidden_size=256, num_heads=4,
                                    intermediate_size=1024, embedding_size=128, use_pooler=False),
        electra_base=base.replace(use_pooler=False),
        electra_large=large.replace(use_pooler=False),
    )
    # DeBERTa-v3 (microsoft/deberta-v3-*): relative c2p|p2c attention over 256 log buckets, no
    # absolute positions or token types; deberta_v3_tiny is bert_tiny's size in that layout.
    deberta = dict(vocab_size=128100, type_vocab_size=0, layer_norm_epsilon=1e-7,
                   use_pooler=False, absolute_positions=False, mask_embeddings=True,
                   disentangled_attention="c2p|p2c", position_buckets=256,
                   relative_embedding_norm=True)
    presets.update(
        deberta_v3_tiny=presets["bert_tiny"].replace(**deberta),
        deberta_v3_xsmall=EncoderConfig(num_layers=12, hidden_size=384, num_heads=6,
                                        intermediate_size=1536, **deberta),
        deberta_v3_small=base.replace(num_layers=6, **deberta),
        deberta_v3_base=base.replace(**deberta),
        deberta_v3_large=large.replace(**deberta),
    )
    # ModernBERT (answerdotai/ModernBERT-*'s config.json): rotary positions (160k on global
    # layers, 10k on local ones), every third layer global and the others within a 128-token
    # window, pre-norm GeGLU blocks without biases, no dropout; tiny and mini are bert_tiny's
    # and bert_mini's depth and width with its feed-forward of 1.5 x hidden (as Ettin's).
    modern = dict(vocab_size=50368, max_positions=8192, type_vocab_size=0,
                  layer_norm_epsilon=1e-5, dropout=0.0, attention_dropout=0.0, use_pooler=False,
                  rotary_theta=160000.0, local_rotary_theta=10000.0, local_attention=128,
                  global_attention_every=3, pre_norm=True, gated_mlp=True, use_bias=False,
                  norm_bias=False)
    presets.update({
        f"modernbert_{name}": EncoderConfig(num_layers=layers, hidden_size=hidden,
                                            num_heads=heads, intermediate_size=ffn, **modern)
        for name, layers, hidden, heads, ffn in (("tiny", 2, 128, 2, 192), ("mini", 4, 256, 4, 384),
                                                 ("base", 22, 768, 12, 1152),
                                                 ("large", 28, 1024, 16, 2624))})
    return presets


PRESETS = _presets()


@dataclasses.dataclass(frozen=True)
class EncoderChoice(Config):
    """Which encoder a pretraining run trains: a preset, or a checkpoint to continue, with
    some of its settings changed.

    >>> EncoderChoice(preset="bert_tiny", num_layers=3).config(vocab_size=100).num_layers
    3
    """

    preset: str = option("bert_mini", "Encoder size: a bk.PRESETS name (bert_tiny, bert_mini, "
                         "bert_small, bert_base, bert_large, bert_L-4_H-512, ...).")
    init_checkpoint: str = option(None, "Continue pretraining from this encoder: a Hugging Face, "
                                  "Google TF1 or bert_keras directory (its size overrides "
                                  "--preset).", advanced=True)
    num_layers: int = option(None, "Override the preset's number of layers.", advanced=True)
    hidden_size: int = option(None, "Override the preset's hidden size.", advanced=True)
    num_heads: int = option(None, "Override the preset's number of attention heads.", advanced=True)
    intermediate_size: int = option(None, "Override the preset's feed-forward size.", advanced=True)
    embedding_size: int = option(None, "Override the preset's embedding width (ALBERT's "
                                 "factorization: E < hidden size).", advanced=True)
    num_layer_groups: int = option(None, "Override the preset's number of distinct layer "
                                   "weight sets (ALBERT: 1, shared by all layers).", advanced=True)
    dropout: float = option(None, "Override hidden and attention dropout (preset: 0.1).",
                            advanced=True)

    def validate(self):
        check(self.preset in PRESETS,
              f"--preset={self.preset!r} is not one of {sorted(PRESETS)}.")
        check(not self.init_checkpoint or tf.io.gfile.isdir(self.init_checkpoint),
              f"--init_checkpoint={self.init_checkpoint!r} is not a directory.")

    def overrides(self):
        """The preset settings this choice changes (sizes, dropout)."""
        overrides = {name: getattr(self, name) for name in
                     ("num_layers", "hidden_size", "num_heads", "intermediate_size",
                      "embedding_size", "num_layer_groups")
                     if getattr(self, name) is not None}
        if self.dropout is not None:
            overrides.update(dropout=self.dropout, attention_dropout=self.dropout)
        return overrides

    def config(self, vocab_size):
        """The EncoderConfig of the preset with these overrides."""
        return PRESETS[self.preset].replace(vocab_size=vocab_size, **self.overrides())
