"""The pretraining heads in checkpoints, read and written: Google's and Hugging Face's masked
LM (+ NSP / SOP) heads set on a BertPretrainer and ELECTRA's discriminator head on an
ElectraPretrainer (`load_pretraining_heads`, `load_replaced_token_head`: what the pretraining
runs of `bert_keras.training` read), and the same heads as transformers classes
(`bk.save_transformers`): a masked LM (`*ForMaskedLM`; with a pair head `*ForPreTraining`) and
ELECTRA's discriminator (`ElectraForPreTraining`), each a `TransformersSpec` whose name maps
are the reading direction's (`checkpoints.huggingface`), after checking that the family's
head computes what ours computes."""

from bert_keras import checkpoints
from bert_keras.checkpoints import huggingface
from bert_keras.checkpoints.transformers_spec import TransformersSpec
from bert_keras.errors import InputError
from bert_keras.families import DEFAULT_MODEL_TYPE


def load_pretraining_heads(pretrainer, checkpoint, fmt=None, family=DEFAULT_MODEL_TYPE,
                           source=None):
    """Sets a BertPretrainer's MLM (and NSP / SOP) head weights from a Google or HF checkpoint.

    `checkpoint`: a checkpoint directory (read with `bert_keras.checkpoints.read_tensors`; a
    Hugging Face directory names its family in config.json), or a dict {tensor name: array}
    with `fmt` "google" / "huggingface" and the Hugging Face `family` (`source`: where it was
    read, for the errors). Missing head tensors or wrong shapes raise `CheckpointError`
    naming them. The encoder weights are loaded
    separately (`BertEncoder.from_pretrained`); the tied decoder needs nothing more. Build
    the pretrainer with `mlm_activation=masked_lm_activation(path)`: RoBERTa's and ELECTRA's
    heads do not use the encoder's activation.

    >>> load_pretraining_heads(pretrainer, "uncased_L-12_H-768_A-12/")  # doctest: +SKIP
    """
    source = source or "the given tensors"
    if isinstance(checkpoint, str):
        source = checkpoint
        fmt, tensors = checkpoints.read_tensors(checkpoint)
        if fmt == "huggingface":
            family = huggingface.read_config(checkpoint)[0]
        checkpoint = tensors
    name_map = masked_lm_names(pretrainer.masked_lm_head, checkpoints.pretraining_head_name_map(
        fmt, pretrainer.masked_lm_head.name, getattr(pretrainer.next_sentence_head, "name", None),
        next_sentence=pretrainer.next_sentence, family=family,
    ))
    checkpoints.assign_weights(pretrainer, name_map, checkpoint, source, partial=True)


def masked_lm_names(masked_lm_head, names):
    """A pretraining-head name map (`checkpoints.pretraining_head_name_map`) without the layer
    norm bias where `masked_lm_head` has none (`norm_bias=False`, as ModernBERT's, whose files
    with `norm_bias` false hold no such tensor: the family reads it as zeros)."""
    if masked_lm_head.norm_bias:
        return names
    beta = f"{masked_lm_head.name}/transform_layer_norm/beta"
    return {path: source for path, source in names.items() if path != beta}


def masked_lm_activation(path):
    """The activation of checkpoint `path`'s masked-LM head where it is not its encoder's
    (Hugging Face RoBERTa and ELECTRA's generator: "gelu"), else None."""
    if checkpoints.detect_format(path) != "huggingface":
        return None
    return huggingface.masked_lm_activation(path)


def load_replaced_token_head(electra, path):
    """Sets an ElectraPretrainer's discriminator head from a Hugging Face
    `ElectraForPreTraining` directory; CheckpointError naming what is missing or mis-shaped.

    >>> load_replaced_token_head(model, "electra-small-discriminator/")  # doctest: +SKIP
    """
    _, tensors = checkpoints.read_tensors(path)
    name_map = huggingface.replaced_token_head_name_map(electra.discriminator_head.name, path)
    checkpoints.assign_weights(electra, name_map, tensors, path, partial=True)


def masked_lm_spec(model, encoder, masked_lm_head, pair_head=None, ignored=()):
    """`model` as `*ForPreTraining` (masked LM + the pair head, on the pooler) or
    `*ForMaskedLM` (no pair head): its `encoder` and heads; `ignored`: its variables that go
    nowhere (an ElectraPretrainer's discriminator when its generator is written)."""

    def head_names(family, what):
        check_masked_lm(masked_lm_head, family, encoder, what)
        pair = pair_head
        if pair is not None:
            if family.MASKED_LM_HEAD.pair is None:
                raise InputError(f"{what}: its next-sentence (pair) head has no place in "
                                 f"transformers' {family.MODEL_TYPE} models.")
            if not encoder.architecture["use_pooler"]:
                raise InputError(f"{what}: its pair head reads the first token without a "
                                 "pooler; transformers' reads the pooler.")
            if pair.num_classes != 2:
                raise InputError(f"{what}: its pair head has {pair.num_classes} classes; "
                                 "transformers' has 2.")
        names = masked_lm_names(masked_lm_head, huggingface.pretraining_head_name_map(
            masked_lm_head.name, getattr(pair, "name", None), pair is not None, family.MODEL_TYPE))
        return [(layer, {k: v for k, v in names.items() if k.startswith(f"{layer.name}/")})
                for layer in (masked_lm_head, pair) if layer is not None]

    return TransformersSpec(model, encoder, "ForPreTraining" if pair_head else "ForMaskedLM",
                            reads_pooler=pair_head is not None, head_names=head_names,
                            ignored=ignored)


def check_masked_lm(mlm, family, encoder, what):
    """InputError naming `what` where `family`'s transformers masked-LM head computes
    something other than `mlm` (activation, layer norm epsilon and bias, the tied decoder)."""
    arch = encoder.architecture
    expected = family.MASKED_LM_HEAD.activation or arch["activation"]
    if mlm.activation != expected:
        raise InputError(f"{what}: its masked-LM head's activation is {mlm.activation!r}; "
                         f"transformers' {family.MODEL_TYPE} head uses {expected!r}.")
    if mlm.layer_norm_epsilon != arch["layer_norm_epsilon"]:
        raise InputError(f"{what}: its masked-LM head's layer norm epsilon "
                         f"{mlm.layer_norm_epsilon} is not the encoder's "
                         f"{arch['layer_norm_epsilon']}, as transformers' is.")
    if arch["norm_bias"] and not mlm.norm_bias:
        raise InputError(f"{what}: its masked-LM head's layer norm has no bias and its "
                         "encoder's norms have one; transformers' head norm has one too.")
    if mlm.decoder_table is not encoder.token_embedding.embeddings:
        raise InputError(f"{what}: its masked-LM decoder is not tied to the word embeddings; "
                         "transformers' is.")


def replaced_token_spec(model, encoder, detector, ignored=(), deltas=None):
    """`model` as `ElectraForPreTraining`: `encoder` and its replaced-token `detector` head;
    `deltas`: id(variable) -> what the discriminator adds to that shared variable."""

    def head_names(family, what):
        if family.REPLACED_TOKEN_HEAD is None:
            raise InputError(f"{what}: its replaced-token head has no place in transformers' "
                             f"{family.MODEL_TYPE} models.")
        activation = encoder.architecture["activation"]
        if detector.activation != activation:
            raise InputError(f"{what}: its discriminator head's activation "
                             f"{detector.activation!r} is not the encoder's {activation!r}, as "
                             "transformers' is.")
        return [(detector, huggingface.replaced_token_head_names(family, detector.name))]

    return TransformersSpec(model, encoder, "ForPreTraining", head_names=head_names,
                            ignored=ignored, deltas=deltas or {})
