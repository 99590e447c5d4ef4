"""Fast inference helpers: length-bucketed batching and a compiled encoder call.

Shape legend: N examples, B batch, T sequence length, H hidden size.

Padding every sentence to 128 tokens when most are 30 wastes most of the compute: sort by
length and pad each batch only to its own longest example (rounded up to a multiple of 8).
"""

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from bert_keras.data.finetuning import batching
from bert_keras.models.layers import transposed_dense
from bert_keras.models.layers.quantized_dense import Int8Dense
from bert_keras.models.layers.transformer import TransformerBlock
from bert_keras.names import INPUT_NAMES


def length_bucketed_batches(inputs, batch_size=32, pad_to_multiple=8):
    """Splits `inputs` into batches of similar length, each cut to its longest example.

    Args:
      inputs: dict of `input_word_ids`, `input_mask`, `input_type_ids`, int arrays (N, T)
        (padded, as `BertPreprocessor` returns them).
      batch_size: examples per batch.
      pad_to_multiple: each batch's length is rounded up to a multiple of this (fewer distinct
        shapes; matmul kernels like aligned sizes), and never beyond T.

    Returns:
      A list of `(indices, batch)`: `indices` (B,) are the rows of `inputs` in the batch, and
      `batch` is a dict of the three int32 arrays (B, T_batch).

    Example:
    >>> import numpy as np
    >>> mask = np.array([[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 0, 0]], "int32")
    >>> inputs = dict(input_word_ids=mask * 7, input_mask=mask, input_type_ids=0 * mask)
    >>> [(i.tolist(), b["input_mask"].shape) for i, b in
    ...  length_bucketed_batches(inputs, batch_size=2, pad_to_multiple=1)]
    [([1, 2], (2, 2)), ([0], (1, 3))]
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size!r}.")
    missing = [name for name in INPUT_NAMES if name not in inputs]
    if missing:
        raise ValueError(f"inputs lack {missing}; got keys {sorted(inputs)}.")
    arrays = {name: np.asarray(inputs[name]) for name in INPUT_NAMES}
    max_length = arrays["input_mask"].shape[1]
    lengths = arrays["input_mask"].sum(axis=1)  # (N,)
    batches = []
    for indices in batching.batch_indices(lengths, batch_size):
        longest = max(int(lengths[indices].max()), 1)
        length = min(batching.round_up(longest, pad_to_multiple), max_length)
        batch = {name: np.ascontiguousarray(arrays[name][indices, :length], dtype=np.int32)
                 for name in INPUT_NAMES}
        batches.append((indices, batch))
    return batches


KERNEL_LAYOUTS = ("auto", "keras", "transposed")
# The dense layers of a TransformerBlock, as (sublayer path, attribute) pairs.
BLOCK_DENSE_LAYERS = (("attention", "qkv"), ("attention", "output_dense"), (None, "intermediate"),
                      (None, "output_dense"))


def uses_transposed_kernels(dtype, kernel_layout="auto"):
    """Whether an inference copy in `dtype` keeps the blocks' dense kernels transposed.

    "auto" is by dtype, never by the machine that runs this: Keras' layout for float32, the
    faster at batch 1 on AVX-512 CPUs, the usual server (oneDNN's float32 inner product
    there is 1.4-1.5x slower transposed); transposed for bfloat16 and float16, as exports
    were before (on AVX512-BF16 the two layouts measured the same). On AVX2-only CPUs
    float32 is 1.1-1.6x faster transposed: ask for "transposed" when the serving CPU is one
    and its server cannot set TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1 (with it oneDNN keeps its own
    layout, and the export's stops mattering).

    >>> uses_transposed_kernels("float32"), uses_transposed_kernels("bfloat16")
    (False, True)
    """
    if kernel_layout not in KERNEL_LAYOUTS:
        raise ValueError(f"kernel_layout must be one of {KERNEL_LAYOUTS}, got {kernel_layout!r}.")
    if dtype == "int8":
        return False  # Int8Dense keeps Keras' layout
    if kernel_layout == "auto":
        return dtype != "float32"
    return kernel_layout == "transposed"


def cast_for_inference(model, dtype="bfloat16", kernel_layout="auto", force_copy=False):
    """A copy of `model` (a BertEncoder, or a task model over one) for inference: encoder
    weights and compute all `dtype` (the heads stay float32), and the blocks' dense kernels
    in the layout `kernel_layout` picks (`uses_transposed_kernels`; transposed:
    `transposed_dense.TransposedDense`). `model` itself if it already is both, unless
    `force_copy`.

    bfloat16 is for CPUs with bfloat16 matmuls (AMX): faster than the `mixed_bfloat16`
    policy, which keeps float32 weights and casts every kernel to bfloat16 on every call.
    Within the documented tolerance of float32 (layer norms still run in float32;
    tests/training/test_bfloat16_tolerance.py). float32 copies answer as `model` does, to
    float32 rounding. Do not train the copy: use mixed_bfloat16.

    "int8" (`quantize_for_inference`): a float32 copy whose blocks' dense kernels and token
    embeddings are stored in int8, dequantized before use (always a new copy).

    Example:
    >>> import bert_keras as bk
    >>> encoder = bk.BertEncoder.from_preset("bert_tiny", vocab_size=100)
    >>> cast_for_inference(encoder).weights[0].dtype
    'bfloat16'
    """
    if dtype == "int8":
        return quantize_for_inference(model)
    transposed = uses_transposed_kernels(dtype, kernel_layout)
    config = keras.saving.serialize_keras_object(model)
    changed = False

    def set_inference_config(node):
        nonlocal changed
        if isinstance(node, dict):
            if node.get("class_name") == "BertEncoder":
                encoder = node["config"]
                policy = keras.dtype_policies.get(encoder.get("dtype")).name
                changed |= policy != dtype or bool(encoder.get("transposed_kernels")) != transposed
                encoder.update(dtype=dtype, transposed_kernels=transposed)
            for value in node.values():
                set_inference_config(value)
        elif isinstance(node, list):
            for value in node:
                set_inference_config(value)

    set_inference_config(config)
    if not changed and not force_copy:
        return model
    clone = keras.saving.deserialize_keras_object(config)
    transposed_dense.copy_weights(model, clone)
    return clone


def quantize_for_inference(model):
    """A float32 copy of `model` (a BertEncoder, or a task model over one) with the weights
    that are most of its size stored in int8: every TransformerBlock's four dense kernels
    (`Int8Dense`: per output column, symmetric) and each encoder's token embedding table
    (Keras' own int8 `Embedding`: per row). Compute stays float32 (see quantized_dense.py
    for why no int8 matmul); heads, biases, layer norms and the other embeddings stay
    float32. `model` itself is left as it was.

    Example:
    >>> import bert_keras as bk
    >>> encoder = bk.BertEncoder.from_preset("bert_tiny", vocab_size=100)
    >>> sorted({w.dtype for w in quantize_for_inference(encoder).weights})
    ['float32', 'int8']
    """
    clone = cast_for_inference(model, "float32", "keras", force_copy=True)
    for layer in _nested_layers(clone):
        if isinstance(layer, TransformerBlock):
            for path, name in BLOCK_DENSE_LAYERS:
                owner = getattr(layer, path) if path else layer
                _replace_sublayer(owner, name, _int8_copy(getattr(owner, name)))
        embedding = getattr(layer, "token_embedding", None)
        if isinstance(embedding, keras.layers.Embedding) and not embedding.quantization_mode:
            embedding.quantize("int8")
    return clone


def _nested_layers(model):
    """`model` and every layer inside it, depth first (each once)."""
    seen, stack, found = set(), [model], []
    while stack:
        layer = stack.pop()
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        found.append(layer)
        stack.extend(getattr(layer, "layers", ()))
    return found


def _int8_copy(dense):
    """The Int8Dense of a trained Keras-layout dense layer (same name, bias, no activation:
    the blocks apply theirs after)."""
    if getattr(dense, "activation", None) not in (None, keras.activations.linear):
        raise ValueError(f"{dense.path} has an activation; Int8Dense computes none.")
    return Int8Dense.from_kernel(ops.convert_to_numpy(dense.kernel),
                                 ops.convert_to_numpy(dense.bias), name=dense.name)


def _replace_sublayer(owner, name, layer):
    """Sets `owner.<name>` to `layer`, untracking the layer it replaces, so that the old
    float32 weights leave `owner.weights` (and the SavedModel). A built layer refuses new
    state; Keras' own `Layer.quantize` unlocks its tracker the same way."""
    owner._tracker.untrack(getattr(owner, name))
    delattr(owner, name)
    owner._tracker.unlock()
    try:
        setattr(owner, name, layer)
    finally:
        owner._tracker.lock()


def inference_function(encoder, jit_compile=False, outputs=("sequence_output", "pooled_output")):
    """A `tf.function` that runs `encoder` for inference on any batch size and length.

    One trace serves every shape (input_signature with None dims), so length-bucketed batches
    do not retrace. `jit_compile=False` is the fast choice on CPU: XLA loses oneDNN's
    bfloat16 (AMX) matmuls, see BENCHMARKS.md.

    Example:
    >>> import numpy as np
    >>> import bert_keras as bk
    >>> encoder = bk.BertEncoder.from_preset("bert_tiny", vocab_size=100)
    >>> infer = inference_function(encoder)
    >>> ones = np.ones((2, 5), "int32")
    >>> outputs = infer(dict(input_word_ids=ones, input_mask=ones, input_type_ids=0 * ones))
    >>> tuple(outputs["pooled_output"].shape)
    (2, 128)
    """
    signature = {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES}

    @tf.function(input_signature=[signature], jit_compile=jit_compile)
    def infer(inputs):
        result = encoder(inputs, training=False)
        return {name: result[name] for name in outputs}

    return infer


def encode(encoder, inputs, batch_size=32, output="pooled_output", infer=None):
    """Runs `encoder` over `inputs` (N, T) in length-bucketed batches; returns numpy (N, ...).

    `output="pooled_output"` gives (N, H); `"sequence_output"` gives (N, T, H), zero beyond each
    batch's length.
    """
    infer = infer or inference_function(encoder, outputs=(output,))
    n, max_length = np.asarray(inputs["input_mask"]).shape
    result = None
    for indices, batch in length_bucketed_batches(inputs, batch_size):
        values = np.asarray(tf.cast(infer(batch)[output], tf.float32))
        if result is None:
            shape = (n,) + ((max_length,) + values.shape[2:] if values.ndim == 3
                            else values.shape[1:])
            result = np.zeros(shape, "float32")
        if values.ndim == 3:
            result[indices, :values.shape[1]] = values
        else:
            result[indices] = values
    return result
