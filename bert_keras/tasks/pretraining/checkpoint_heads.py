"""The pretraining model of a pretrained checkpoint's heads (`registry.load_model`, what
tools/convert_checkpoint.py --output_format=transformers writes):

- a transformers *ForMaskedLM / *ForPreTraining directory: a BertPretrainer with its masked-LM
  (and NSP / SOP) head; ElectraForPreTraining: an ElectraPretrainer with its discriminator head;
- a Google TF1 BERT / ALBERT checkpoint with `cls/predictions`: a BertPretrainer with its heads;
- anything else (an encoder directory of ours, a transformers *Model, a Google checkpoint
  without heads): the encoder as it is.

Every head is read through the exact name maps of `bert_keras.checkpoints` (a tensor of the
wrong shape is an error naming it).
"""

from bert_keras import checkpoints
from bert_keras.checkpoints import huggingface
from bert_keras.tasks.pretraining import head_checkpoint
from bert_keras.tasks.pretraining.electra import ElectraPretrainer
from bert_keras.tasks.pretraining.model import BertPretrainer


def with_checkpoint_heads(encoder, path, family=None):
    """The pretraining model of the heads that checkpoint `path` holds over `encoder` (its
    encoder, loaded), or `encoder` without any; `family`: a transformers directory's."""
    fmt = checkpoints.detect_format(path)
    _, tensors = checkpoints.read_tensors(path)
    if fmt == "huggingface":
        detector = family.REPLACED_TOKEN_HEAD
        if detector and f"{detector}.dense.weight" in tensors:
            model = ElectraPretrainer(encoder)
            names = huggingface.replaced_token_head_names(family, model.discriminator_head.name)
            checkpoints.assign_weights(model, names, tensors, path, partial=True)
            return model
        heads = family.MASKED_LM_HEAD
        if heads.bias not in tensors:
            return encoder
        next_sentence = heads.pair is not None and f"{heads.pair}.weight" in tensors
        model = BertPretrainer(encoder, next_sentence=next_sentence,
                               mlm_activation=heads.activation)
    elif fmt == "google" and "cls/predictions/output_bias" in tensors:
        next_sentence = "cls/seq_relationship/output_weights" in tensors
        model = BertPretrainer(encoder, next_sentence=next_sentence)
    else:
        return encoder
    head_checkpoint.load_pretraining_heads(
        model, tensors, fmt, **({"family": family.MODEL_TYPE} if family else {}), source=path)
    return model
