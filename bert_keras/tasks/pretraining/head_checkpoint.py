"""The pretraining heads as transformers classes (`bk.save_transformers`): a masked LM
(`*ForMaskedLM`; with a pair head `*ForPreTraining`) and ELECTRA's discriminator
(`ElectraForPreTraining`), each a `TransformersSpec` whose name maps are the reading
direction's (`checkpoints.huggingface`), after checking that the family's head computes what
ours computes. (Reading them is `models.head_checkpoints`', which the pretraining runs of
`bert_keras.training` share.)"""

from bert_keras.checkpoints import huggingface
from bert_keras.checkpoints.transformers_spec import TransformersSpec
from bert_keras.errors import InputError


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
        names = huggingface.pretraining_head_name_map(
            masked_lm_head.name, getattr(pair, "name", None), pair is not None, family.MODEL_TYPE)
        return [(layer, {k: v for k, v in names.items() if k.startswith(f"{layer.name}/")})
                for layer in (masked_lm_head, pair) if layer is not None]

    return TransformersSpec(model, encoder, "ForPreTraining" if pair_head else "ForMaskedLM",
                            reads_pooler=pair_head is not None, head_names=head_names,
                            ignored=ignored)


def check_masked_lm(mlm, family, encoder, what):
    """InputError naming `what` where `family`'s transformers masked-LM head computes
    something other than `mlm` (activation, layer norm epsilon, the tied decoder)."""
    arch = encoder.architecture
    expected = family.MASKED_LM_HEAD.activation or arch["activation"]
    if mlm.activation != expected:
        raise InputError(f"{what}: its masked-LM head's activation is {mlm.activation!r}; "
                         f"transformers' {family.MODEL_TYPE} head uses {expected!r}.")
    if mlm.layer_norm_epsilon != arch["layer_norm_epsilon"]:
        raise InputError(f"{what}: its masked-LM head's layer norm epsilon "
                         f"{mlm.layer_norm_epsilon} is not the encoder's "
                         f"{arch['layer_norm_epsilon']}, as transformers' is.")
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
