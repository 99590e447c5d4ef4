"""Checkpoint directories of each source layout, read into our variable names.

One reader per layout (`huggingface`, `google`, `own`), each with `is_layout(files)`,
`encoder_config(path)`, `read_tensors(path)` and an exact name map from our variable paths
to its tensor names; `assign.assign_weights` applies a map strictly. What differs between
families (config keys, tensor names, heads, Google dialects) is not here: the readers of
the Hugging Face and Google layouts ask the family registry (`bert_keras.families`) for the
checkpoint's family module. This package does not import the models: it hands them configs,
tensors and name maps (`bert_keras.models.encoder.BertEncoder.from_pretrained` builds and
fills the encoder).

Example:
>>> import bert_keras as bk  # doctest: +SKIP
>>> encoder = bk.BertEncoder.from_pretrained("all-MiniLM-L6-v2/")  # doctest: +SKIP
"""

from bert_keras.checkpoints import google, huggingface, own
from bert_keras.checkpoints.assign import CheckpointError, assign_weights
from bert_keras.checkpoints.integrity import check_finite
from bert_keras.directories import WRITING
from bert_keras.errors import InputError
from bert_keras.families import DEFAULT_MODEL_TYPE
from bert_keras.files import isdir, listdir

LAYOUTS = {"bert_keras": own, "huggingface": huggingface, "google": google}


def detect_format(path):
    """Returns "bert_keras", "huggingface" or "google" for a checkpoint directory."""
    if not isdir(path):
        raise FileNotFoundError(f"Checkpoint directory {path!r} does not exist.")
    files = set(listdir(path))
    if WRITING in files:
        raise InputError(f"{path} is being written, or its writer was stopped before it "
                         "finished (it holds WRITING): wait, or write it again.")
    for name, layout in LAYOUTS.items():
        if layout.is_layout(files):
            return name
    if "config.json" in files and "pytorch_model.bin" in files:
        raise InputError(
            f"{path} holds a PyTorch pickle (pytorch_model.bin); bert_keras reads only "
            "model.safetensors (no torch needed). Convert it once with transformers: "
            "`AutoModel.from_pretrained(path).save_pretrained(path, safe_serialization=True)`."
        )
    raise InputError(
        f"{path} is not a BERT checkpoint directory: expected bert_keras.json, "
        f"config.json + model.safetensors, or a Google TF1 checkpoint (*.index + *.data-*); "
        f"found {sorted(files)[:10]}"
        + (f" and {len(files) - 10} more." if len(files) > 10 else ".")
    )


def read_encoder_config(path):
    """The BertEncoder constructor arguments of a checkpoint directory."""
    return LAYOUTS[detect_format(path)].encoder_config(path)


def read_tensors(path):
    """(format, {name: numpy array}) of the weights in a checkpoint directory (InputError
    naming a tensor that holds a NaN or an infinity)."""
    fmt = detect_format(path)
    tensors = LAYOUTS[fmt].read_tensors(path)
    check_finite(tensors, path)
    return fmt, tensors


def encoder_name_map(fmt, tensors, encoder, path):
    """The name map from `encoder`'s variables to the tensors of checkpoint `path` of `fmt`."""
    if fmt == "bert_keras":  # Our files are keyed by the variable paths themselves.
        return own.encoder_name_map([v.path for v in encoder.weights])
    if fmt == "google":
        return google.encoder_name_map(encoder.architecture, path)
    return huggingface.encoder_name_map(encoder.architecture, tensors, path)


def pretraining_head_name_map(fmt, mlm_head="masked_lm_head", nsp_head="next_sentence_head",
                              next_sentence=True, family=DEFAULT_MODEL_TYPE):
    """Our pretraining-head variable paths -> (checkpoint tensor names, convert) for a "google"
    or "huggingface" checkpoint (of `family`, transformers' model_type, a key of
    `bert_keras.families.FAMILIES`). The decoder matrix is the tied word-embedding table,
    which the encoder import sets.

    >>> pretraining_head_name_map("google")["masked_lm_head/decoder/output_bias"][0]
    ['cls/predictions/output_bias']
    """
    if fmt not in ("google", "huggingface"):
        raise ValueError(f"pretraining_head_name_map: fmt must be 'google' or 'huggingface', "
                         f"got {fmt!r}.")
    if fmt == "google":
        return google.pretraining_head_name_map(mlm_head, nsp_head, next_sentence)
    return huggingface.pretraining_head_name_map(mlm_head, nsp_head, next_sentence, family)


__all__ = ["CheckpointError", "assign_weights", "detect_format", "encoder_name_map",
           "pretraining_head_name_map", "read_encoder_config", "read_tensors"]
