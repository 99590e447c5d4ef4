"""Writes a bert_keras model as a transformers directory: `save_transformers(model, directory)`.

The reading direction (`huggingface`, the families' name maps) run backwards: every weight
goes through the exact name map that reads it, inverted (`converters.split`: transposes and
column splits only, so a transformers -> bert_keras -> transformers round trip gives every
tensor back bit for bit), config.json is the family's `transformers_config` of the encoder
(the inverse of its `encoder_config`) with `architectures` and the head's keys, and the
tokenizer files are the family's (`transformers_tokenizer`).

What is written, as each model says (`transformers_spec()`, a
`transformers_spec.TransformersSpec`: this package imports no model and switches on none):

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
BertMultipleChoice                             <Family>ForMultipleChoice
=============================================  ==========================================

The family is `model_type` when given, else the first family (registry order) whose
tokenizer is the model's and whose transformers classes compute what the model computes:
the encoder's architecture (`transformers_config` of each family refuses what its model
cannot hold), the pooler where the head reads one (BERT's and ALBERT's classifiers and pair
heads read it, RoBERTa's, ELECTRA's and DistilBERT's classifiers the first token), the heads'
activations and layer norms (each spec's `head_names` refuses a family whose head differs).
A model that no transformers class computes is refused in one line (`InputError`) naming what
differs: nothing is written then. A weight that goes nowhere (a layer transformers' class has
no place for, such as a CRF) is refused too; the pooler of a model whose head does not read
it (a tagger, span QA, a masked LM without a pair head: an idle layer, never trained) is left
out, as transformers' classes without a pooler (BertForTokenClassification, ...) leave it
out. The directory is written atomically (`directories.write_directory`): nothing is at
`directory` until it is complete.

>>> import bert_keras as bk  # doctest: +SKIP
>>> classifier = bk.BertClassifier.from_pretrained("runs/paraphrase/best")  # doctest: +SKIP
>>> bk.save_transformers(classifier, "paraphrase-hf/")  # doctest: +SKIP
>>> # transformers: AutoModelForSequenceClassification.from_pretrained("paraphrase-hf/")
"""

import os

import numpy as np

from bert_keras.checkpoints.safetensors import write_safetensors
from bert_keras.checkpoints.transformers_tokenizer import tokenizer_files
from bert_keras.directories import write_directory
from bert_keras.errors import InputError
from bert_keras.families import FAMILIES, get_family
from bert_keras.families.converters import split
from bert_keras.families.transformers_names import prefixed
from bert_keras.files import write_json, write_text

CONFIG_FILE, WEIGHTS_FILE = "config.json", "model.safetensors"


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
    spec = _spec_of(model, generator, what)
    if getattr(spec.encoder, "transposed_kernels", False):
        raise InputError(f"{what}: its encoder keeps its kernels transposed for inference "
                         "(cast_for_inference); write the model it was cast from.")
    spec.encoder.check_tokenizer(tokenizer, what)
    family, config, tensors = _contents(spec, tokenizer, model_type, labels, what)
    extra_files = spec.files()
    files = tokenizer_files(tokenizer, family.TRANSFORMERS_TOKENIZER,
                            spec.encoder.max_sequence_length,
                            type_ids=spec.encoder.architecture["type_vocab_size"] >= 2)

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
    return _contents(_spec_of(model, generator, what), tokenizer, model_type, labels, what)


def _spec_of(model, generator, what):
    """The model's `TransformersSpec` (`transformers_spec`); InputError for a model without
    one."""
    spec = getattr(model, "transformers_spec", None)
    if spec is None:
        raise InputError(f"{what} has no transformers class: a BertEncoder or a task model "
                         "with one (`transformers_spec()`) can be written.")
    return spec(generator=generator)


def _contents(spec, tokenizer, model_type, labels, what):
    """(family, config, tensors) of the first family that holds `spec` exactly (only
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
            return (family, *_family_contents(spec, family, tokenizer, labels, what))
        except InputError as e:
            errors.append((family, str(e)))
    if len(errors) == 1:
        raise InputError(errors[0][1])
    raise InputError(f"{what}: no transformers family computes this model: " + "; ".join(
        f"{family.MODEL_TYPE}: {error.removeprefix(what + ': ')}" for family, error in errors))


def _family_contents(spec, family, tokenizer, labels, what):
    """(config, tensors) of `spec` as `family` writes it; InputError for what it cannot hold."""
    if type(tokenizer) is not family.TOKENIZER:
        raise InputError(f"{what}: its tokenizer is a {type(tokenizer).__name__}; "
                         f"transformers' {family.MODEL_TYPE} models read "
                         f"{' + '.join(family.TOKENIZER_FILES)} ({family.TOKENIZER.__name__}).")
    encoder = spec.encoder
    arch = encoder.architecture
    config = family.transformers_config(arch, tokenizer, what)
    names = spec.names(family, what)
    has_pooler = bool(arch["use_pooler"])
    holds_pooler = bool(family.POOLER_TENSORS)
    if spec.reads_pooler and has_pooler and not holds_pooler:
        raise InputError(f"{what}: its encoder has a pooler, which transformers' "
                         f"{family.MODEL_TYPE} models do not have.")
    write_pooler = has_pooler and spec.reads_pooler  # transformers' class has one
    encoder_names = family.encoder_name_map(
        dict(arch, use_pooler=write_pooler),
        prefixed(family.MODEL_TYPE) if spec.prefixed else set())
    pooler = [] if write_pooler or not has_pooler else encoder.pooler.weights
    tensors = _tensors(encoder, encoder_names, spec.deltas, left_out=pooler)
    for layer, layer_names in names:
        tensors.update(_tensors(layer, layer_names, spec.deltas, left_out=encoder.weights))
    accounted = {id(v) for v in encoder.weights}  # written, or its pooler left out
    accounted.update(id(v) for layer, _ in names for v in layer.weights)
    accounted.update(id(v) for v in spec.ignored)
    stray = [v.path for v in spec.model.weights if id(v) not in accounted]
    if stray:
        raise InputError(f"{what} has weights that transformers' "
                         f"{family.TRANSFORMERS_PREFIX}{spec.suffix} has no place for: "
                         f"{stray[:5]}{' ...' if len(stray) > 5 else ''}.")
    config = dict(config, architectures=[family.TRANSFORMERS_PREFIX + spec.suffix],
                  tie_word_embeddings=True, **spec.config(labels, what))
    written = getattr(family, "written_tensors", None)  # tensors its files leave implied
    return written(config, tensors, what) if written else (config, tensors)


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
