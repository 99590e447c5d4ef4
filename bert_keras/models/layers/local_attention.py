"""Sliding-window attention in blocks: O(T x window) work and memory instead of O(T^2).

Shape legend: B batch, N heads, T sequence length, D head size, b block size, K = T / b blocks
(after padding T up to a multiple of b).

Queries are cut into blocks of b = half window rows; block k's queries see at most half a
window before and after them, so all the keys they may attend to lie in key blocks k-1, k and
k+1. Each query block attends to those 3b keys, with the exact band mask inside (the same
for every block: query row r, key column c are |c - b - r| apart) and the padding mask: the
same softmax as a full T x T score matrix with a band mask, over the keys that matter. Only
reshapes, pads, slices and batched matmuls, so it serves wherever the full path does, with
the sequence length unknown until run time.

>>> import numpy as np
>>> x = np.random.default_rng(0).normal(size=(1, 2, 10, 4)).astype("float32")
>>> mask = np.ones((1, 10), "int32")
>>> blocked = local_attention_bias(mask, 10, half_window=2, dtype="float32")
>>> tuple(blocked.shape)  # (B, 1, K, b, 3b): 5 blocks of 2 rows, 6 keys each
(1, 1, 5, 2, 6)
>>> tuple(to_query_blocks(x, 2).shape), tuple(to_key_blocks(x, 2).shape)
((1, 2, 5, 2, 4), (1, 2, 5, 6, 4))
"""

from keras import ops


def large_negative(dtype):
    """The additive bias of a masked score: float16 has no -1e9."""
    return -6e4 if dtype == "float16" else -1e9


def use_blocks(length, half_window):
    """Whether the blocked path is cheaper than the full one at `length` (int or scalar
    tensor): 3b = 1.5 windows of keys per row against `length`, plus the copies of the key
    blocks; the full path wins on short inputs."""
    return length > 4 * half_window


def _blocks(length, block):
    return (length + block - 1) // block


def to_query_blocks(x, block):
    """(B, N, T, D) -> (B, N, K, b, D), zero rows appended up to K * b."""
    batch, heads, length, size = (ops.shape(x)[0], ops.shape(x)[1], ops.shape(x)[2],
                                  x.shape[-1])
    blocks = _blocks(length, block)
    x = ops.pad(x, [[0, 0], [0, 0], [0, blocks * block - length], [0, 0]])
    return ops.reshape(x, (batch, heads, blocks, block, size))


def to_key_blocks(x, block):
    """(B, N, T, D) -> (B, N, K, 3b, D): for query block k, key blocks k-1, k, k+1 (zero
    rows before the first and after the last; the bias masks them)."""
    batch, heads, length, size = (ops.shape(x)[0], ops.shape(x)[1], ops.shape(x)[2],
                                  x.shape[-1])
    blocks = _blocks(length, block)
    x = ops.pad(x, [[0, 0], [0, 0], [block, (blocks + 1) * block - length], [0, 0]])
    x = ops.reshape(x, (batch, heads, blocks + 2, block, size))
    return ops.concatenate([x[:, :, :-2], x[:, :, 1:-1], x[:, :, 2:]], axis=3)


def local_attention_bias(input_mask, length, half_window, dtype):
    """(B, T) mask (1 = real token) -> the additive bias (B, 1, K, b, 3b) of the blocked
    scores: 0 where the key is a real token within the window of the query, a large negative
    elsewhere (one `where`, never a sum of two biases, which would overflow float16)."""
    block = half_window
    batch = ops.shape(input_mask)[0]
    blocks = _blocks(length, block)
    mask = ops.cast(input_mask, "int32")
    mask = ops.pad(mask, [[0, 0], [block, (blocks + 1) * block - length]])
    mask = ops.reshape(mask, (batch, blocks + 2, block))
    keys = ops.concatenate([mask[:, :-2], mask[:, 1:-1], mask[:, 2:]], axis=2)  # (B, K, 3b)
    rows = ops.arange(block, dtype="int32")[:, None]
    columns = ops.arange(3 * block, dtype="int32")[None, :]
    band = ops.abs(columns - block - rows) <= half_window  # (b, 3b), the same in every block
    seen = ops.logical_and(band[None, None, None], (keys > 0)[:, None, :, None, :])
    return ops.where(seen, ops.cast(0.0, dtype), ops.cast(large_negative(dtype), dtype))


def from_query_blocks(x, length):
    """(B, N, K, b, D) -> (B, N, T, D): the blocks' rows in order, the appended ones cut."""
    batch, heads, size = ops.shape(x)[0], ops.shape(x)[1], x.shape[-1]
    return ops.reshape(x, (batch, heads, -1, size))[:, :, :length]
