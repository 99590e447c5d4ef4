"""The Hugging Face layout: `config.json` + `model.safetensors` (read with numpy, no torch).

`config.json`'s `model_type` picks the family module (`hf_bert` for BERT and RoBERTa,
`hf_albert`, `hf_distilbert`, `hf_electra`), which maps the config to BertEncoder arguments and our
variable paths to its tensor names. Whether the file has a pooler decides `use_pooler`
(task-model files of RoBERTa and ALBERT often have none; DistilBERT and ELECTRA never).
"""

import json
import os
import re

from bert_keras.checkpoints import hf_albert, hf_bert, hf_distilbert, hf_electra
from bert_keras.checkpoints.assign import identity, transpose
from bert_keras.checkpoints.safetensors import read_safetensors, tensor_names
from bert_keras.errors import InputError

FAMILIES = {"bert": hf_bert, "roberta": hf_bert, "albert": hf_albert,
            "distilbert": hf_distilbert, "electra": hf_electra}
POOLERS = ("pooler.dense.weight", "bert.pooler.dense.weight", "roberta.pooler.dense.weight")


def is_layout(files):
    return "config.json" in files and "model.safetensors" in files


def read_config(path):
    """(model_type, config.json dict); ValueError for a family we do not read."""
    with open(os.path.join(path, "config.json")) as f:
        config = json.load(f)
    model_type = config.get("model_type", "bert")
    if model_type not in FAMILIES:
        raise InputError(f"{path}: model_type {model_type!r} is not one of {sorted(FAMILIES)}.")
    return model_type, config


def encoder_config(path):
    """The BertEncoder arguments of `path`/config.json."""
    model_type, config = read_config(path)
    arguments = FAMILIES[model_type].encoder_config(config, path)
    names = tensor_names(os.path.join(path, "model.safetensors"))
    if FAMILIES[model_type] is hf_bert:
        arguments["use_pooler"] = any(n in POOLERS for n in names)
    elif FAMILIES[model_type] is hf_albert:
        arguments["use_pooler"] = hf_albert.has_pooler(names)
    return arguments


def read_tensors(path):
    tensors = read_safetensors(os.path.join(path, "model.safetensors"))
    # Older Hugging Face files name LayerNorm weights gamma/beta.
    return {re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight",
                   re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", name)): value
            for name, value in tensors.items()}


def encoder_name_map(arch, tensors, path):
    model_type, _ = read_config(path)
    if model_type == "roberta":
        return hf_bert.encoder_name_map(arch, tensors, family="roberta")
    return FAMILIES[model_type].encoder_name_map(arch, tensors)


# The sequence-classification head of each family: (hidden activation of the head, name of its
# hidden dense or None, name of its output dense), in `*ForSequenceClassification` files.
CLASSIFIER_HEADS = {
    "bert": (None, None, "classifier"),
    "albert": (None, None, "classifier"),
    "roberta": ("tanh", "classifier.dense", "classifier.out_proj"),
    "electra": ("gelu", "classifier.dense", "classifier.out_proj"),
    "distilbert": ("relu", "pre_classifier", "classifier"),
}


def classifier_head(path):
    """(hidden_activation, name map builder) of the classification head of checkpoint `path`:
    the builder maps a ClassificationHead named `head` to the file's head tensors."""
    model_type, _ = read_config(path)
    activation, hidden, output = CLASSIFIER_HEADS[model_type]

    def name_map(head):
        names = {f"{head}/logits/kernel": ([f"{output}.weight"], transpose),
                 f"{head}/logits/bias": ([f"{output}.bias"], identity)}
        if hidden:
            names.update({f"{head}/hidden/kernel": ([f"{hidden}.weight"], transpose),
                          f"{head}/hidden/bias": ([f"{hidden}.bias"], identity)})
        return names

    return activation, name_map


def token_classifier_head_name_map(head):
    """A TokenClassificationHead named `head` -> `*ForTokenClassification`'s `classifier` (the
    same in the five families)."""
    return {f"{head}/logits/kernel": (["classifier.weight"], transpose),
            f"{head}/logits/bias": (["classifier.bias"], identity)}


def span_head_name_map(head):
    """A SpanHead named `head` -> `*ForQuestionAnswering`'s `qa_outputs` (start, end rows; the
    same in the five families)."""
    return {f"{head}/logits/kernel": (["qa_outputs.weight"], transpose),
            f"{head}/logits/bias": (["qa_outputs.bias"], identity)}


def label_names(config):
    """config.json's id2label as a list in id order ([] without one)."""
    id2label = {int(k): v for k, v in (config.get("id2label") or {}).items()}
    return [id2label[i] for i in sorted(id2label)]


def head_labels(path):
    """The label names of a fine-tuned checkpoint's head (`label_names`), or None where they
    are transformers' placeholders LABEL_0, LABEL_1, ..."""
    labels = label_names(read_config(path)[1])
    if labels == [f"LABEL_{i}" for i in range(len(labels))]:
        return None
    return labels


def head_architecture(path):
    """config.json's first `architectures` entry (e.g. "RobertaForTokenClassification"), or
    None."""
    return (read_config(path)[1].get("architectures") or [None])[0]


def pretraining_head_name_map(mlm_head, nsp_head, next_sentence=True, family="bert"):
    return hf_bert.pretraining_head_name_map(mlm_head, nsp_head, next_sentence, family)


def masked_lm_activation(path):
    """The activation of the masked-LM head of checkpoint `path`'s family when it is not the
    encoder's (RoBERTa and ELECTRA's generator: the exact GELU), else None."""
    return hf_bert.MASKED_LM_HEADS[read_config(path)[0]][0]


def replaced_token_head_name_map(head):
    """A ReplacedTokenHead named `head` -> `ElectraForPreTraining`'s discriminator head."""
    p = "discriminator_predictions"
    return {f"{head}/hidden/kernel": ([f"{p}.dense.weight"], transpose),
            f"{head}/hidden/bias": ([f"{p}.dense.bias"], identity),
            f"{head}/logits/kernel": ([f"{p}.dense_prediction.weight"], transpose),
            f"{head}/logits/bias": ([f"{p}.dense_prediction.bias"], identity)}
