"""The model a directory holds, with its heads, as bert_keras objects: what
tools/convert_checkpoint.py --output_format=transformers writes (`bk.save_transformers`).

- a task directory (task.json: tools/finetune.py's best/, tools/pretrain.py's final/, or a run
  directory holding one of them): its task model and labels;
- a fine-tuned transformers directory (*ForSequenceClassification, *ForTokenClassification,
  *ForQuestionAnswering): its task model (`bk.load_task`);
- a transformers *ForMaskedLM / *ForPreTraining directory: a BertPretrainer with its masked-LM
  (and NSP / SOP) head, ElectraForPreTraining an ElectraPretrainer with its discriminator head;
- a Google TF1 BERT / ALBERT checkpoint with `cls/predictions`: a BertPretrainer with its heads;
- anything else (an encoder directory of ours, a transformers *Model, a Google checkpoint
  without heads): the BertEncoder.

Every head is read through the exact name maps of `bert_keras.checkpoints` (a tensor of the
wrong shape is an error naming it).

>>> model, tokenizer, labels, model_type = load_model("runs/paraphrase")  # doctest: +SKIP
"""

import bert_keras as bk
from bert_keras import checkpoints, files
from bert_keras.checkpoints import huggingface
from bert_keras.tasks.task_io import is_task_directory
from bert_keras.text.tokenizers import load_tokenizer

RUN_OUTPUTS = ("best", "final")  # the task directories of a fine-tuning / pretraining run
TASK_HEADS = ("ForSequenceClassification", "ForTokenClassification", "ForQuestionAnswering")


def task_directory(path):
    """`path` when it holds task.json, else its best/ or final/ that does; None otherwise."""
    for candidate in (path, *(files.join(path, name) for name in RUN_OUTPUTS)):
        if is_task_directory(candidate):
            return candidate
    return None


def load_model(path):
    """(model, tokenizer, labels or None, model_type or None) of directory `path` (the
    module's list); model_type is a transformers directory's own."""
    directory = task_directory(path)
    if directory:
        model, tokenizer, info = bk.load_task(directory)
        return model, tokenizer, info.get("labels"), None
    fmt = checkpoints.detect_format(path)
    family = huggingface.read_family(path)[0] if fmt == "huggingface" else None
    if family is not None and (huggingface.head_architecture(path) or "").endswith(TASK_HEADS):
        model, tokenizer, info = bk.load_task(path)
        return model, tokenizer, info.get("labels"), family.MODEL_TYPE
    tokenizer = load_tokenizer(path)
    encoder = bk.BertEncoder.from_pretrained(path)
    encoder.check_tokenizer(tokenizer, path)
    _, tensors = checkpoints.read_tensors(path)
    model = _with_heads(encoder, fmt, family, tensors, path)
    return model, tokenizer, None, family and family.MODEL_TYPE


def _with_heads(encoder, fmt, family, tensors, path):
    """The pretraining model of the heads that `tensors` hold, or `encoder` without any."""
    if fmt == "huggingface":
        detector = family.REPLACED_TOKEN_HEAD
        if detector and f"{detector}.dense.weight" in tensors:
            model = bk.ElectraPretrainer(encoder)
            names = huggingface.replaced_token_head_names(family, model.discriminator_head.name)
            checkpoints.assign_weights(model, names, tensors, path, partial=True)
            return model
        heads = family.MASKED_LM_HEAD
        if heads.bias not in tensors:
            return encoder
        next_sentence = heads.pair is not None and f"{heads.pair}.weight" in tensors
        model = bk.BertPretrainer(encoder, next_sentence=next_sentence,
                                  mlm_activation=heads.activation)
    elif fmt == "google" and "cls/predictions/output_bias" in tensors:
        next_sentence = "cls/seq_relationship/output_weights" in tensors
        model = bk.BertPretrainer(encoder, next_sentence=next_sentence)
    else:
        return encoder
    names = checkpoints.pretraining_head_name_map(
        fmt, model.masked_lm_head.name, getattr(model.next_sentence_head, "name", None),
        next_sentence=next_sentence, **({"family": family.MODEL_TYPE} if family else {}))
    checkpoints.assign_weights(model, names, tensors, path, partial=True)
    return model
