"""Writes a bert_keras model as a transformers directory: `save_transformers(model, directory)`.

The reading direction (`huggingface`, the families' name maps) run backwards: every weight
goes through the exact name map that reads it, inverted (`converters.split`: transposes and
column splits only, so a transformers -> bert_keras -> transformers round trip gives every
tensor back bit for bit), config.json is the family's `transformers_config` of the encoder
(the inverse of its `encoder_config`) with `architectures` and the head's keys, and the
tokenizer files are the family's (`transformers_tokenizer`).

What is written, by the model's heads (found by their attributes, so this package needs no
model class):

=============================================  ==========================================
model                                          architectures
=============================================  ==========================================
BertEncoder                                    <Family>Model
BertPretrainer (masked LM; + NSP / SOP)        <Family>ForMaskedLM (<Family>ForPreTraining)
ElectraPretrainer                              ElectraForPreTraining (the discriminator);
                                               `generator=True`: ElectraForMaskedLM
BertClassifier                                 <Family>ForSequenceClassification (id2label,
                                               label2id, problem_type)
BertReranker                                   <Family>ForSequenceClassification, one label,
                                               + sentence-transformers' CrossEncoder files
BertTokenClassifier                            <Family>ForTokenClassification (id2label)
BertSpanQA                                     <Family>ForQuestionAnswering
=============================================  ==========================================

The family is `model_type` when given, else the first family (registry order) whose
tokenizer is the model's and whose transformers classes compute what the model computes:
the encoder's architecture (`transformers_config` of each family refuses what its model
cannot hold), the pooler where the head reads one (BERT's and ALBERT's classifiers and pair
heads read it, RoBERTa's, ELECTRA's and DistilBERT's classifiers the first token), the heads'
activations and layer norms. A model that no transformers class computes is refused in one
line (`InputError`) naming what differs: nothing is written then. A weight that goes
nowhere (a layer transformers' class has no place for, such as a CRF) is refused too; the
pooler of a model whose head does not read it (a tagger, span QA, a masked LM without a
pair head: an idle layer, never trained) is left out, as transformers' classes without a
pooler (BertForTokenClassification, ...) leave it out. The directory is written atomically
(`files.write_directory`): nothing is at `directory` until it is complete.

A task model may say its head's config.json keys itself (`transformers_head_config()`,
instead of the class names and problem type of a classifier) and add JSON files of its own
(`transformers_extra_files()`: {file name: dict}), as the reranker writes what
sentence-transformers reads as a CrossEncoder.

>>> import bert_keras as bk  # doctest: +SKIP
>>> classifier = bk.BertClassifier.from_pretrained("runs/paraphrase/best")  # doctest: +SKIP
>>> bk.save_transformers(classifier, "paraphrase-hf/")  # doctest: +SKIP
>>> # transformers: AutoModelForSequenceClassification.from_pretrained("paraphrase-hf/")
"""

import dataclasses
import os

import numpy as np

from bert_keras.checkpoints import huggingface
from bert_keras.checkpoints.safetensors import write_safetensors
from bert_keras.checkpoints.transformers_tokenizer import tokenizer_files
from bert_keras.errors import InputError
from bert_keras.families import FAMILIES, get_family
from bert_keras.families.converters import split
from bert_keras.families.transformers_names import prefixed
from bert_keras.files import write_directory, write_json, write_text

CONFIG_FILE, WEIGHTS_FILE = "config.json", "model.safetensors"

# BertClassifier's problem_type -> config.json's.
PROBLEM_TYPES = {"single_label": "single_label_classification",
                 "multi_label": "multi_label_classification", "regression": "regression"}


@dataclasses.dataclass
class _Head:
    """What a model writes: its encoder, the transformers class suffix, the head layers, and
    the variables of the model that deliberately go nowhere."""

    model: object  # the model whose every weight is written or deliberately ignored
    encoder: object
    suffix: str  # "Model", "ForMaskedLM", ...
    layers: dict  # role -> layer: "masked_lm", "pair", "classifier", "tagger", "span", "detector"
    reads_pooler: bool  # the transformers class has a pooler and its output depends on it
    ignored: tuple = ()  # variables of the model that are not written (ELECTRA's other half)
    deltas: dict = dataclasses.field(default_factory=dict)  # id(variable) -> added value


def save_transformers(model, directory, tokenizer=None, model_type=None, labels=None,
                      generator=False):
    """Writes `model` (a BertEncoder or a task model: see the module's table) to `directory`
    as transformers writes its `architectures` class: config.json, model.safetensors and the
    tokenizer files, so `AutoModelFor*.from_pretrained(directory)` and
    `AutoTokenizer.from_pretrained(directory)` compute what the model computes.

    tokenizer: the model's tokenizer (default: the one the model carries, from
        `from_pretrained`); its files are written with the transformers files around them.
    model_type: the family to write ("bert", "roberta", ...); default: inferred.
    labels: the class names of a classifier or tagger (default: the model's `labels`, else
        transformers' placeholders LABEL_0, LABEL_1, ...).
    generator: of an ElectraPretrainer, write its generator (ElectraForMaskedLM) instead of
        its discriminator.

    Returns the family's model_type. InputError (nothing written) for a model that no
    transformers class computes."""
    what = type(model).__name__
    tokenizer = tokenizer or getattr(getattr(model, "preprocessor", None), "tokenizer", None)
    if tokenizer is None:
        raise InputError(f"{what} carries no tokenizer: pass tokenizer= (its files are part of "
                         "a transformers directory).")
    head = _head_of(model, generator, what)
    if getattr(head.encoder, "transposed_kernels", False):
        raise InputError(f"{what}: its encoder keeps its kernels transposed for inference "
                         "(cast_for_inference); write the model it was cast from.")
    head.encoder.check_tokenizer(tokenizer, what)
    family, config, tensors = _contents(head, tokenizer, model_type, labels, what)
    extra_files = getattr(head.model, "transformers_extra_files", dict)()
    files = tokenizer_files(tokenizer, family.TRANSFORMERS_TOKENIZER,
                            head.encoder.max_sequence_length,
                            type_ids=head.encoder.architecture["type_vocab_size"] >= 2)

    def write(path):
        tokenizer.save(path)  # the classic files: vocab.txt, vocab.json + merges.txt, spiece.model
        for name, text in files.items():
            write_text(os.path.join(path, name), text)
        write_safetensors(os.path.join(path, WEIGHTS_FILE), tensors)
        for name, contents in extra_files.items():
            write_json(os.path.join(path, name), contents)
        write_json(os.path.join(path, CONFIG_FILE), config)

    write_directory(os.fspath(directory), write, marker=CONFIG_FILE)
    return family.MODEL_TYPE


def transformers_contents(model, tokenizer, model_type=None, labels=None, generator=False):
    """(family module, config.json dict, {tensor name: float32 array}) that `save_transformers`
    writes for `model`, without writing anything."""
    what = type(model).__name__
    return _contents(_head_of(model, generator, what), tokenizer, model_type, labels, what)


def _head_of(model, generator, what):
    """The `_Head` of `model`, by the attributes of the bert_keras models."""
    if hasattr(model, "discriminator_head") and hasattr(model, "generator"):  # ElectraPretrainer
        electra = model
        if generator:  # it reads the shared embeddings as they are
            head = electra.generator_head
            kept = electra.generator.weights + head.weights
            return _Head(electra, electra.generator, "ForMaskedLM", {"masked_lm": head},
                         reads_pooler=False, ignored=_others(electra, kept))
        # The discriminator reads shared + delta with disentangled embeddings (GDES).
        deltas = {id(v): delta for v, delta in zip(electra.shared_embeddings(),
                                                   getattr(electra, "embedding_deltas", []))}
        head = electra.discriminator_head
        kept = electra.encoder.weights + head.weights
        return _Head(electra, electra.encoder, "ForPreTraining", {"detector": head},
                     reads_pooler=False, ignored=_others(electra, kept), deltas=deltas)
    if hasattr(model, "student_pretrainer"):  # DistillationPretrainer: the student is the model
        return _head_of(model.student_pretrainer, generator, what)
    if generator:
        raise InputError(f"{what} has no ELECTRA generator (generator=True is for an "
                         "ElectraPretrainer).")
    if hasattr(model, "masked_lm_head"):
        pair = getattr(model, "next_sentence_head", None)
        layers = {"masked_lm": model.masked_lm_head, **({"pair": pair} if pair else {})}
        return _Head(model, model.encoder, "ForPreTraining" if pair else "ForMaskedLM", layers,
                     reads_pooler=bool(pair))
    for attribute, role, suffix in (
            ("classification_head", "classifier", "ForSequenceClassification"),
            ("token_classification_head", "tagger", "ForTokenClassification"),
            ("span_head", "span", "ForQuestionAnswering")):
        if hasattr(model, attribute):
            if role == "classifier":
                _check_classifier_options(model, what)
            if getattr(model, "crf_layer", None) is not None:
                raise InputError(f"{what} decodes its tags with a CRF (crf=True), which "
                                 f"transformers' *{suffix} has no place for; save it with "
                                 "model.save() or export it instead.")
            return _Head(model, model.encoder, suffix, {role: getattr(model, attribute)},
                         reads_pooler=role == "classifier")
    if hasattr(model, "architecture") and hasattr(model, "token_embedding"):  # BertEncoder
        return _Head(model, model, "Model", {}, reads_pooler=True)
    raise InputError(f"{what} has no transformers class: a BertEncoder, BertPretrainer, "
                     "ElectraPretrainer, BertClassifier, BertTokenClassifier or BertSpanQA "
                     "can be written.")


def _check_classifier_options(classifier, what):
    """InputError for a classifier's pooling or head layers that no transformers
    *ForSequenceClassification computes (mean / max / attention pooling have no weights to
    leave out, so only this check keeps them from being written as a [CLS] classifier)."""
    pooling = getattr(classifier, "pooling", "cls")
    if pooling != "cls":
        raise InputError(f"{what}: pooling={pooling!r} has no transformers equivalent (its "
                         "*ForSequenceClassification reads the first token: pooling='cls').")
    layers = getattr(classifier, "head_hidden_layers", 0)
    if layers:
        raise InputError(f"{what}: head_hidden_layers={layers} has no transformers equivalent "
                         "(its *ForSequenceClassification heads have no such layers).")


def _others(model, kept):
    kept = {id(v) for v in kept}
    return tuple(v for v in model.weights if id(v) not in kept)


def _contents(head, tokenizer, model_type, labels, what):
    """(family, config, tensors) of the first family that holds `head` exactly (only
    `model_type`'s when given); InputError naming each family's reason otherwise."""
    if model_type is not None:
        families = [get_family(model_type, "model_type")]
    else:
        families = [f for f in FAMILIES.values() if type(tokenizer) is f.TOKENIZER]
        if not families:
            kinds = sorted({f.TOKENIZER.__name__ for f in FAMILIES.values()})
            raise InputError(f"{what}: its tokenizer is a {type(tokenizer).__name__}, which no "
                             f"transformers family reads ({', '.join(kinds)}).")
    errors = []
    for family in families:
        try:
            return (family, *_family_contents(head, family, tokenizer, labels, what))
        except InputError as e:
            errors.append((family, str(e)))
    if len(errors) == 1:
        raise InputError(errors[0][1])
    raise InputError(f"{what}: no transformers family computes this model: " + "; ".join(
        f"{family.MODEL_TYPE}: {error.removeprefix(what + ': ')}" for family, error in errors))


def _family_contents(head, family, tokenizer, labels, what):
    """(config, tensors) of `head` as `family` writes it; InputError for what it cannot hold."""
    if type(tokenizer) is not family.TOKENIZER:
        raise InputError(f"{what}: its tokenizer is a {type(tokenizer).__name__}; "
                         f"transformers' {family.MODEL_TYPE} models read "
                         f"{' + '.join(family.TOKENIZER_FILES)} ({family.TOKENIZER.__name__}).")
    encoder = head.encoder
    arch = encoder.architecture
    config = family.transformers_config(arch, tokenizer, what)
    names = _head_names(head, family, encoder, what)
    has_pooler = bool(arch["use_pooler"])
    holds_pooler = bool(family.POOLER_TENSORS)
    if head.reads_pooler and has_pooler and not holds_pooler:
        raise InputError(f"{what}: its encoder has a pooler, which transformers' "
                         f"{family.MODEL_TYPE} models do not have.")
    write_pooler = has_pooler and head.reads_pooler  # transformers' class has one
    encoder_names = family.encoder_name_map(
        dict(arch, use_pooler=write_pooler),
        set() if head.suffix == "Model" else prefixed(family.MODEL_TYPE))
    pooler = [] if write_pooler or not has_pooler else encoder.pooler.weights
    tensors = _tensors(encoder, encoder_names, head.deltas, left_out=pooler)
    for layer, layer_names in names:
        tensors.update(_tensors(layer, layer_names, head.deltas, left_out=encoder.weights))
    accounted = {id(v) for v in encoder.weights}  # written, or its pooler left out
    accounted.update(id(v) for layer, _ in names for v in layer.weights)
    accounted.update(id(v) for v in head.ignored)
    stray = [v.path for v in head.model.weights if id(v) not in accounted]
    if stray:
        raise InputError(f"{what} has weights that transformers' "
                         f"{family.TRANSFORMERS_PREFIX}{head.suffix} has no place for: "
                         f"{stray[:5]}{' ...' if len(stray) > 5 else ''}.")
    config = dict(config, architectures=[family.TRANSFORMERS_PREFIX + head.suffix],
                  tie_word_embeddings=True, **_head_config(head, labels, what))
    return config, tensors


def _head_names(head, family, encoder, what):
    """[(layer, its name map)] of the head layers, after checking that `family`'s transformers
    head computes what they compute."""
    arch = encoder.architecture
    layers = head.layers
    if head.suffix == "Model" or not layers:
        return []
    if "masked_lm" in layers:
        mlm, pair = layers["masked_lm"], layers.get("pair")
        _check_masked_lm(mlm, family, encoder, what)
        if pair is not None:
            if family.MASKED_LM_HEAD.pair is None:
                raise InputError(f"{what}: its next-sentence (pair) head has no place in "
                                 f"transformers' {family.MODEL_TYPE} models.")
            if not arch["use_pooler"]:
                raise InputError(f"{what}: its pair head reads the first token without a "
                                 "pooler; transformers' reads the pooler.")
            if pair.num_classes != 2:
                raise InputError(f"{what}: its pair head has {pair.num_classes} classes; "
                                 "transformers' has 2.")
        names = huggingface.pretraining_head_name_map(
            mlm.name, getattr(pair, "name", None), pair is not None, family.MODEL_TYPE)
        return [(mlm, {k: v for k, v in names.items() if k.startswith(f"{mlm.name}/")})] + (
            [(pair, {k: v for k, v in names.items() if k.startswith(f"{pair.name}/")})]
            if pair is not None else [])
    if "classifier" in layers:
        classifier = layers["classifier"]
        activation, hidden = family.CLASSIFIER_HEAD.activation, family.CLASSIFIER_HEAD.hidden
        if classifier.hidden_activation != activation:
            raise InputError(f"{what}: its classification head has hidden_activation="
                             f"{classifier.hidden_activation!r}; transformers' {family.MODEL_TYPE} "
                             f"head has {activation!r}.")
        if hidden is None and not arch["use_pooler"]:
            raise InputError(f"{what}: its classifier reads the first token without a pooler; "
                             f"transformers' {family.MODEL_TYPE} classifier reads the pooler.")
        if hidden is not None and arch["use_pooler"]:
            raise InputError(f"{what}: its classifier reads the pooler; transformers' "
                             f"{family.MODEL_TYPE} classifier reads the first token.")
        return [(classifier, huggingface.classifier_head_names(family, classifier.name))]
    if "tagger" in layers:
        tagger = layers["tagger"]
        return [(tagger, huggingface.token_classifier_head_names(family, tagger.name))]
    if "span" in layers:
        span = layers["span"]
        return [(span, huggingface.span_head_names(family, span.name))]
    detector = layers["detector"]
    if family.REPLACED_TOKEN_HEAD is None:
        raise InputError(f"{what}: its replaced-token head has no place in transformers' "
                         f"{family.MODEL_TYPE} models.")
    if detector.activation != arch["activation"]:
        raise InputError(f"{what}: its discriminator head's activation {detector.activation!r} "
                         f"is not the encoder's {arch['activation']!r}, as transformers' is.")
    return [(detector, huggingface.replaced_token_head_names(family, detector.name))]


def _check_masked_lm(mlm, family, encoder, what):
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


def _head_config(head, labels, what):
    """config.json's keys of the head: the class names and problem type of a classifier or
    tagger, or the keys the model says itself."""
    own = getattr(head.model, "transformers_head_config", None)
    if own is not None:
        return own()
    layer = head.layers.get("classifier") or head.layers.get("tagger")
    if layer is None:
        return {}
    names = labels if labels is not None else getattr(head.model, "labels", None)
    count = layer.num_classes
    names = list(names) if names else [f"LABEL_{i}" for i in range(count)]
    if len(names) != count:
        raise InputError(f"{what}: {len(names)} labels {names[:5]} for its {count} classes.")
    config = {"id2label": {str(i): str(n) for i, n in enumerate(names)},
              "label2id": {str(n): i for i, n in enumerate(names)}}
    if "classifier" in head.layers:
        problem = head.model.problem_type
        config["problem_type"] = getattr(problem, "transformers", None) or PROBLEM_TYPES[problem]
    return config


def _tensors(layer, name_map, deltas, left_out=()):
    """{tensor name: float32 array} of `layer`'s variables through `name_map` (our path ->
    (tensor names, combine)) inverted; every variable is mapped but those of `left_out` (a
    pooler left out, the tied table a head shares): anything else is a bug in the map."""
    variables = {v.path: v for v in layer.weights}
    skipped = {id(v) for v in left_out}
    unmapped = sorted(p for p, v in variables.items()
                      if p not in name_map and id(v) not in skipped)
    unknown = sorted(set(name_map) - set(variables))
    if unmapped or unknown:
        raise AssertionError(f"Name map of {layer.name} does not match its variables: "
                             f"unmapped {unmapped}, unknown {unknown}.")
    tensors = {}
    for path, (sources, combine) in name_map.items():
        variable = variables[path]
        value = np.asarray(variable.numpy()).astype(np.float32)
        if id(variable) in deltas:
            value = value + np.asarray(deltas[id(variable)].numpy()).astype(np.float32)
        for name, part in zip(sources, split(combine, value, len(sources))):
            if name in tensors:
                raise AssertionError(f"Tensor {name} written twice from {layer.name}.")
            tensors[name] = part
    return tensors
