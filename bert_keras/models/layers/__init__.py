"""The layers of the encoder and its heads: `transformer` (the transformer block), `attention`
(self-attention), `position_embedding` (learned and rotary positions), `normalization` (layer
norm), `dropout` (dropout by hashed masks), `activations` (the feed-forward activations and
their XLA-compiled train-step forms), `residual_norm` (a train step's LayerNorm(x + dropout(h))),
`dropout_mask` (hashed dropout masks), `dense` (`Dense`, every dense layer of the models, and
their initializer), `transposed_dense` (`TransposedDense`, the (units, input_dim) kernel
layout) and `pooling` (`SentencePooling`: mean, cls, max or attention over the real tokens)."""
