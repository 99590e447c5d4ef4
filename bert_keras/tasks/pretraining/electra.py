"""ELECTRA pretraining (Clark et al. 2020): replaced-token detection.

A small generator (a masked LM sharing the discriminator's token, segment and position
embeddings) fills the masked positions with tokens sampled from its own output distribution
(no gradient through the sample); the discriminator (the encoder that is kept and
fine-tuned) predicts for every token whether it was replaced. Loss = generator MLM loss +
`rtd_weight` (50 in the paper) x the discriminator's sigmoid loss over the non-padding tokens.
A sampled token that equals the original counts as original, as in the paper.

Four departures from the paper; `ElectraOptions` (the defaults of this class and of
tools/pretrain.py alike) turns on the first two and weighs the detection loss 1 instead of 50,
the recipe that fine-tuned as well as masked LM at small scale where the paper's did no better
than a random encoder (docs/variants.md; `ElectraOptions.paper()` gives the paper's): an easy
start, sampling at `start_temperature` annealed to `sampling_temperature` (a small
discriminator cannot tell temperature-1 samples of a generator at the
masked-LM plateau from the originals, and collapses to "nothing replaced"); a masked LM on the
discriminator (`discriminator_mlm_share` of the masked positions reach it still masked, and it
predicts their tokens: the contextual signal replaced-token detection alone does not give a
small discriminator); DeBERTa-v3's gradient-disentangled embedding sharing
(`disentangled_embeddings`); and COCO-LM's corrective LM (`corrective_weight`).

DeBERTa-v3 (He et al. 2021) is this objective with `ElectraOptions.deberta_v3()` on a
DeBERTa-v3 encoder (flags/pretrain_deberta_v3_*.flags). Where microsoft/DeBERTa's code differs:
it shares the word and position tables only (here the embeddings' layer norm too, each read by
the discriminator as shared + delta), steps the generator and the discriminator with two
optimizers (here one over the sum, clipped by one global norm; with GDES the two losses train
disjoint variables, so under Adam rtd_weight acts only through that clipping), puts
LayerNorm([CLS] + h) before its detection head's dense layer, and replaces every masked
token by [MASK] (here the data's 80/10/10 reaches the generator).

Shape legend: B batch, T sequence length, P masked positions, V vocabulary.
"""

import dataclasses

import keras
from keras import ops

from bert_keras.checkpoints.transformers_spec import weights_besides
from bert_keras.models.encoder import BertEncoder
from bert_keras.models.objectives.losses import Ratio, TokenAccuracy, TokenCrossEntropy
from bert_keras.models.objectives.objective_model import ObjectiveModel
from bert_keras.names import INPUT_NAMES
from bert_keras.optimization import default_optimizer
from bert_keras.tasks.pretraining import head_checkpoint, heads
from bert_keras.tasks.pretraining.electra_generator import (
    generator_config,
    sample_tokens,
    scatter_positions,
    tied_masked_lm_head,
)
from bert_keras.tasks.pretraining.electra_options import ElectraOptions

MASKED_LM_INPUTS = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")


_OPTION_FIELDS = tuple(field.name for field in dataclasses.fields(ElectraOptions))


@keras.saving.register_keras_serializable(package="bert_keras")
class ElectraPretrainer(ObjectiveModel):
    """ELECTRA's replaced-token detection over a discriminator `BertEncoder`.

    Inputs (a dict): the encoder inputs (input_word_ids with the masked positions already
    masked, as the pretraining data makes them) + `masked_lm_positions`, `masked_lm_ids`
    (the original tokens), `masked_lm_weights` (B, P). Outputs: {"generator_logits" (B, P, V),
    "discriminator_logits" (B, T), "replaced" (B, T) 0/1, "detected" (B, T) 0/1 (the tokens
    the detection loss scores: not padding, not left masked), "left_masked" (B, P) 0/1,
    "corrupted_ids" (B, T)}. The loss is computed from these (`loss_terms`, see
    `ObjectiveModel`); `fit` needs no y.

    Args:
        discriminator: the `BertEncoder` to pretrain (`.encoder`; saved and fine-tuned).
        options: an `ElectraOptions` (default: its defaults, the recipe of tools/pretrain.py);
            keyword arguments named like its fields change it (`rtd_weight=50.0`;
            `temperature` is `sampling_temperature`). Their meaning:
            generator_size / generator_layers: the generator's width / depth as a fraction of
            the discriminator's; rtd_weight: lambda, the weight of the discriminator loss;
            sampling_temperature: of the generator's sampling distribution; start_temperature:
            the sampling temperature at the first training step (higher: flatter, so rarer and
            easier to detect replacements), annealed linearly to sampling_temperature over
            `curriculum_steps` (None: sampling_temperature throughout); disentangled_embeddings:
            DeBERTa-v3's gradient-disentangled embedding sharing (the discriminator reads the
            shared embeddings as stop_gradient(shared) + a delta of its own, so only the
            generator's loss trains the shared tables; `fold_embedding_deltas` gives `.encoder`
            the discriminator's own embeddings); corrective_weight: COCO-LM's corrective LM
            (Meng et al. 2021, without its copy mechanism: the discriminator also predicts the
            original tokens at the masked positions of the corrupted text, through its own head
            tied to the shared embeddings; with discriminator_mlm_share it scores only the
            positions the generator filled); discriminator_mlm_share: the share of the masked
            positions (each drawn independently) that the discriminator sees as the data masked
            them, not filled by the generator; it predicts their original tokens (a masked LM
            weighted 1, through its own head tied to the shared embeddings) and they leave the
            detection loss.
        curriculum_steps: optimizer steps of the easy start (0: none; a run sets
            `options.curriculum_steps(train_steps)`). Outside training (`model(x)`, evaluate)
            the replacements are sampled at sampling_temperature.
        seed: of the sampling (its state is a variable, so checkpoints resume it).

    Example:
    >>> import numpy as np
    >>> import bert_keras as bk
    >>> model = ElectraPretrainer(bk.BertEncoder.from_preset("bert_tiny", vocab_size=50), seed=1)
    >>> x = {"input_word_ids": np.array([[2, 4, 4, 9, 3]], "int32"),
    ...      "input_mask": np.ones((1, 5), "int32"), "input_type_ids": np.zeros((1, 5), "int32"),
    ...      "masked_lm_positions": np.array([[1, 2]], "int32"),
    ...      "masked_lm_ids": np.array([[7, 8]], "int32"),
    ...      "masked_lm_weights": np.ones((1, 2), "float32")}
    >>> model(x)["discriminator_logits"].shape
    TensorShape([1, 5])
    """

    default_learning_rate = 5e-4  # ELECTRA-Small's
    loss_term_names = ("generator_loss", "discriminator_loss")

    def __init__(self, discriminator, options=None, *, curriculum_steps=0, seed=None, **kwargs):
        if "temperature" in kwargs:  # the name of earlier versions (and their saved configs)
            kwargs["sampling_temperature"] = kwargs.pop("temperature")
        changes = {name: kwargs.pop(name) for name in list(kwargs) if name in _OPTION_FIELDS}
        options = dataclasses.replace(options or ElectraOptions(), **changes)
        # Its own variable reads (the embedding deltas) stay float32 under mixed precision.
        super().__init__(autocast=False, **kwargs)
        self.options, self.curriculum_steps, self.seed = options, curriculum_steps, seed
        generator_size, generator_layers = options.generator_size, options.generator_layers
        corrective_weight = options.corrective_weight
        discriminator_mlm_share = options.discriminator_mlm_share
        self.encoder = discriminator
        self.generator = BertEncoder(
            **generator_config(discriminator, generator_size, generator_layers).to_dict(),
            embeddings_of=discriminator, dtype=discriminator.dtype_policy, name="generator")
        self.generator_head = tied_masked_lm_head(discriminator, self.generator.hidden_size,
                                                  "generator_head")
        self.discriminator_head = heads.ReplacedTokenHead(
            activation=discriminator.activation, initializer_range=discriminator.initializer_range,
            dtype=discriminator.head_dtype_policy, name="discriminator_head")
        # Built now, so an optimizer can be built for every variable before the first step.
        self.discriminator_head.build((None, None, discriminator.hidden_size))
        if corrective_weight or discriminator_mlm_share:
            self.discriminator_lm_head = tied_masked_lm_head(
                discriminator, discriminator.hidden_size, "discriminator_lm_head")
        if corrective_weight:
            self.trackers["corrective_loss"] = keras.metrics.Mean(name="corrective_loss")
            self.corrective_accuracy = TokenAccuracy(name="corrective_accuracy")
        if discriminator_mlm_share:
            self.trackers["discriminator_mlm_loss"] = keras.metrics.Mean(
                name="discriminator_mlm_loss")
            self.discriminator_mlm_accuracy = TokenAccuracy(name="discriminator_mlm_accuracy")
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.embedding_deltas = (self._embedding_deltas() if options.disentangled_embeddings
                                 else [])
        self._masked_lm_loss = TokenCrossEntropy(epsilon=1e-5)
        self.generator_accuracy = TokenAccuracy(name="generator_accuracy")
        self.ratios = {name: Ratio(name=name) for name in (
            "discriminator_accuracy", "all_original_accuracy", "replaced_fraction",
            "replaced_precision", "replaced_recall")}
        # The discriminator loss of the best constant guess (the binary entropy of the batch's
        # replaced share): a discriminator loss below it is learned from context, even while
        # no token is yet confidently called replaced (accuracy = all-original).
        self.base_rate_loss = keras.metrics.Mean(name="base_rate_loss")
        self.built = True
        self.compile(optimizer=default_optimizer(self.default_learning_rate))

    def call(self, inputs, training=False):
        encoder_inputs = {name: inputs[name] for name in INPUT_NAMES}
        positions = inputs["masked_lm_positions"]
        weights = inputs["masked_lm_weights"]
        # The generator's last block runs on the masked rows only (BertEncoder's shortcut).
        generated = self.generator(encoder_inputs, training=training,
                                   output_positions=positions)["sequence_output"]  # (B, P, G)
        generator_logits = self.generator_head(generated)  # (B, P, V) float32
        sampled = self.replacements(generator_logits, training)  # (B, P)
        word_ids = encoder_inputs["input_word_ids"]
        left_masked = self.left_masked(weights)  # (B, P) 0/1
        original = scatter_positions(word_ids, positions, inputs["masked_lm_ids"], weights)
        corrupted = scatter_positions(word_ids, positions, sampled, weights * (1 - left_masked))
        mask = encoder_inputs["input_mask"]
        replaced = ops.cast(ops.not_equal(corrupted, original), "int32") * mask
        detected = mask * (1 - scatter_positions(ops.zeros_like(word_ids), positions,
                                                 ops.ones_like(positions), left_masked))
        corrupted_inputs = {**encoder_inputs, "input_word_ids": corrupted}
        outputs = {"generator_logits": generator_logits,
                   **self.as_discriminator(lambda: self._discriminator_outputs(
                       corrupted_inputs, positions, training)),
                   "replaced": replaced, "detected": detected, "left_masked": left_masked,
                   "corrupted_ids": corrupted}
        return outputs

    def _discriminator_outputs(self, inputs, positions, training):
        discriminated = self.encoder(inputs, training=training)["sequence_output"]
        outputs = {"discriminator_logits": self.discriminator_head(discriminated)}
        if self.options.corrective_weight or self.options.discriminator_mlm_share:
            # Tied to the token embeddings: with GDES, the discriminator's (shared + delta).
            outputs["discriminator_lm_logits"] = self.discriminator_lm_head(discriminated,
                                                                            positions)
        return outputs

    def left_masked(self, weights):
        """1 at the masked positions (B, P) the discriminator sees masked (a random
        `discriminator_mlm_share` of them), 0 elsewhere."""
        if not self.options.discriminator_mlm_share:
            return ops.zeros_like(weights)
        draw = keras.random.uniform(ops.shape(weights), seed=self.seed_generator)
        return ops.cast(draw < self.options.discriminator_mlm_share, weights.dtype) * ops.cast(
            weights > 0, weights.dtype)

    def idle_layers(self):
        return [self.encoder.pooler]  # the discriminator's heads read the sequence output

    def transformers_spec(self, generator=False):
        """`ElectraForPreTraining`, the discriminator reading shared + delta embeddings
        (GDES); `generator=True`: `ElectraForMaskedLM`, the generator reading the shared
        embeddings as they are (`bk.save_transformers`)."""
        if generator:
            kept = self.generator.weights + self.generator_head.weights
            return head_checkpoint.masked_lm_spec(self, self.generator, self.generator_head,
                                                  ignored=weights_besides(self, kept))
        deltas = {id(v): delta for v, delta in zip(self.shared_embeddings(),
                                                   getattr(self, "embedding_deltas", []))}
        kept = self.encoder.weights + self.discriminator_head.weights
        return head_checkpoint.replaced_token_spec(self, self.encoder, self.discriminator_head,
                                                   ignored=weights_besides(self, kept),
                                                   deltas=deltas)

    def shared_embeddings(self):
        """The discriminator's variables that the generator uses too."""
        generator_variables = {id(v) for v in self.generator.variables}
        return [v for v in self.encoder.variables if id(v) in generator_variables]

    def _embedding_deltas(self):
        return [self.add_weight(shape=v.shape, initializer="zeros", dtype=v.dtype,
                                name=v.path.replace("/", "_") + "_delta")
                for v in self.shared_embeddings()]

    def discriminate(self, inputs, training):
        """The discriminator encoder's outputs, as the discriminator sees the shared
        embeddings (`as_discriminator`)."""
        return self.as_discriminator(lambda: self.encoder(inputs, training=training))

    def as_discriminator(self, compute):
        """`compute()` as the discriminator sees the shared embeddings: with disentangled
        embeddings each reads as stop_gradient(shared) + its delta, so no loss computed in here
        (detection, the discriminator's masked LM through its tied head) reaches the tables
        the generator trains."""
        if not self.options.disentangled_embeddings:
            return compute()
        mapping = [(v, ops.stop_gradient(ops.convert_to_tensor(v)) + delta)
                   for v, delta in zip(self.shared_embeddings(), self.embedding_deltas)]
        with keras.StatelessScope(state_mapping=mapping) as scope:
            outputs = compute()
        for v in self.encoder.non_trainable_variables:  # dropout's seeds advance as usual
            value = scope.get_current_value(v)
            if value is not None:
                v.assign(value)
        return outputs

    def fold_embedding_deltas(self):
        """Adds the deltas into the shared embeddings and zeroes them: `.encoder` alone is then
        the trained discriminator (as saved). Call it after training: the generator sees the
        discriminator's embeddings from then on."""
        for v, delta in zip(self.shared_embeddings(), self.embedding_deltas):
            v.assign(v + delta)
            delta.assign(ops.zeros_like(delta))

    def replacements(self, generator_logits, training):
        """The tokens (B, P) that replace the masked ones: the generator's samples (no gradient
        through them) at the temperature of this step."""
        temperature = self.sampling_temperature(training)
        return sample_tokens(ops.stop_gradient(generator_logits) / temperature, self.seed_generator)

    def sampling_temperature(self, training):
        """`start_temperature` at the first training step, annealed linearly to `temperature`
        at `curriculum_steps`; `temperature` outside training."""
        if self.options.start_temperature is None or not training:
            return self.options.sampling_temperature
        progress = self.curriculum_progress()
        start, end = self.options.start_temperature, self.options.sampling_temperature
        return start + (end - start) * progress

    def curriculum_progress(self):
        """0 at the first optimizer step, 1 from `curriculum_steps` on (the optimizer's step
        count, so a resumed run continues the schedule)."""
        if not self.curriculum_steps or self.optimizer is None:
            return 1.0
        step = ops.cast(self.optimizer.iterations, "float32")
        return ops.minimum(step / float(self.curriculum_steps), 1.0)

    def loss_terms(self, x, y_pred):
        """{"generator_loss", "discriminator_loss", "loss"} of one batch (not yet divided by
        the number of replicas)."""
        generator_loss = self._masked_lm_loss.unscaled(
            x["masked_lm_ids"], y_pred["generator_logits"], x["masked_lm_weights"])
        detected = ops.cast(y_pred["detected"], "float32")
        per_token = ops.binary_crossentropy(  # (B, T)
            ops.cast(y_pred["replaced"], "float32"), y_pred["discriminator_logits"],
            from_logits=True)
        discriminator_loss = ops.sum(per_token * detected) / (ops.sum(detected) + 1e-6)
        terms = {"generator_loss": generator_loss, "discriminator_loss": discriminator_loss,
                 "loss": generator_loss + self.options.rtd_weight * discriminator_loss}
        weights, left_masked = x["masked_lm_weights"], y_pred["left_masked"]
        if self.options.corrective_weight:
            terms["corrective_loss"] = self._masked_lm_loss.unscaled(
                x["masked_lm_ids"], y_pred["discriminator_lm_logits"], weights * (1 - left_masked))
            terms["loss"] += self.options.corrective_weight * terms["corrective_loss"]
        if self.options.discriminator_mlm_share:
            terms["discriminator_mlm_loss"] = self._masked_lm_loss.unscaled(
                x["masked_lm_ids"], y_pred["discriminator_lm_logits"], weights * left_masked)
            terms["loss"] += terms["discriminator_mlm_loss"]
        return terms

    def update_metrics(self, x, y_pred):
        self.generator_accuracy.update_state(x["masked_lm_ids"], y_pred["generator_logits"],
                                             x["masked_lm_weights"])
        weights, left_masked = x["masked_lm_weights"], y_pred["left_masked"]
        if self.options.corrective_weight:
            self.corrective_accuracy.update_state(
                x["masked_lm_ids"], y_pred["discriminator_lm_logits"], weights * (1 - left_masked))
        if self.options.discriminator_mlm_share:
            self.discriminator_mlm_accuracy.update_state(
                x["masked_lm_ids"], y_pred["discriminator_lm_logits"], weights * left_masked)
        mask = ops.cast(y_pred["detected"], "float32")
        replaced = ops.cast(y_pred["replaced"], "float32")
        predicted = ops.cast(y_pred["discriminator_logits"] > 0, "float32") * mask
        correct = ops.sum(ops.cast(ops.equal(predicted, replaced), "float32") * mask)
        self.ratios["discriminator_accuracy"].update_state(correct, ops.sum(mask))
        self.ratios["all_original_accuracy"].update_state(ops.sum((1 - replaced) * mask),
                                                          ops.sum(mask))
        self.ratios["replaced_fraction"].update_state(ops.sum(replaced * mask), ops.sum(mask))
        share = ops.clip(ops.sum(replaced * mask) / ops.sum(mask), 1e-7, 1 - 1e-7)
        self.base_rate_loss.update_state(
            -(share * ops.log(share) + (1 - share) * ops.log(1 - share)))
        true_positives = ops.sum(predicted * replaced)
        self.ratios["replaced_precision"].update_state(true_positives, ops.sum(predicted))
        self.ratios["replaced_recall"].update_state(true_positives, ops.sum(replaced))

    def get_config(self):
        return dict(name=self.name, discriminator=keras.saving.serialize_keras_object(self.encoder),
                    **self.options.to_dict(), curriculum_steps=self.curriculum_steps,
                    seed=self.seed)

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["discriminator"] = keras.saving.deserialize_keras_object(config["discriminator"])
        return cls(**config)


def with_masked_lm_inputs(x, y, sample_weight):
    """The pretraining data's (x, y, sample_weight) as ElectraPretrainer's inputs."""
    return ({**x, "masked_lm_ids": y["masked_lm"],
             "masked_lm_weights": sample_weight["masked_lm"]},)


__all__ = ["ElectraPretrainer", "generator_config", "sample_tokens", "scatter_positions",
           "with_masked_lm_inputs"]
