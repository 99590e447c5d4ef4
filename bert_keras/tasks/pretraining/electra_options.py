"""ElectraOptions: the options of ELECTRA pretraining, `ElectraPretrainer`'s and
tools/pretrain.py's defaults alike."""

import dataclasses

from bert_keras.configs import Config, check, option


@dataclasses.dataclass(frozen=True)
class ElectraOptions(Config):
    """The options of ELECTRA pretraining (`--objective=electra`); its defaults are the
    small-scale recipe of docs/variants.md.

    >>> ElectraOptions().rtd_weight, ElectraOptions.paper().rtd_weight
    (1.0, 50.0)
    >>> ElectraOptions(generator_size=1.5)
    Traceback (most recent call last):
    ...
    bert_keras.configs.ConfigError: --generator_size must be in (0, 1], got 1.5.
    """

    generator_size: float = option(0.25, "--objective=electra: the generator's width as a "
                                   "fraction of the discriminator's (paper: 1/4 to 1/3).",
                                   advanced=True)
    generator_layers: float = option(1.0, "--objective=electra: the generator's depth as a "
                                     "fraction of the discriminator's, at least one layer "
                                     "(paper: 1, the same depth).", advanced=True)
    rtd_weight: float = option(1.0, "--objective=electra: weight of the replaced-token "
                               "detection loss against the masked-LM losses (paper: 50; at "
                               "small scale 50 drowns the discriminator's masked LM, "
                               "docs/variants.md).", advanced=True)
    sampling_temperature: float = option(1.5, "--objective=electra: temperature of the "
                                         "generator's sampling distribution once the easy "
                                         "start is over (paper: 1). Above 1 the replacements "
                                         "stay detectable for a small discriminator, which at 1 "
                                         "stops learning at small scale (docs/variants.md).",
                                         advanced=True)
    start_temperature: float = option(3.0, "--objective=electra: sampling temperature at the "
                                      "first step (flatter: rarer, easier replacements), "
                                      "annealed linearly to --sampling_temperature over "
                                      "--curriculum_fraction of the steps (the paper: equal "
                                      "to --sampling_temperature, no easy start).",
                                      advanced=True)
    curriculum_fraction: float = option(1.0, "--objective=electra: fraction of --train_steps "
                                        "over which --start_temperature anneals to "
                                        "--sampling_temperature.", advanced=True)
    disentangled_embeddings: bool = option(False, "--objective=electra: DeBERTa-v3's "
                                           "gradient-disentangled embedding sharing (GDES): the "
                                           "discriminator adds a delta of its own (initially "
                                           "zero) to the shared embeddings and its losses train "
                                           "only that delta, so only the generator's loss trains "
                                           "the shared tables; the saved encoder has their sum "
                                           "(ELECTRA: false, both train them; DeBERTa-v3: true, "
                                           "flags/pretrain_deberta_v3_*.flags).", advanced=True)
    corrective_weight: float = option(0.0, "--objective=electra: weight of COCO-LM's "
                                      "corrective LM: the discriminator also predicts the "
                                      "original token at the masked positions from the "
                                      "corrupted text (paper: 0, none).", advanced=True)
    discriminator_mlm_share: float = option(0.5, "--objective=electra: share of the masked "
                                            "positions the discriminator sees still masked "
                                            "(not filled by the generator); it predicts their "
                                            "tokens, a masked LM beside replaced-token "
                                            "detection (paper: 0; without it a small "
                                            "discriminator fine-tunes no better than a random "
                                            "encoder, docs/variants.md).", advanced=True)

    @classmethod
    def paper(cls):
        """The paper's ELECTRA: detection weighted 50, sampling at 1 throughout, no
        departures."""
        return cls(rtd_weight=50.0, sampling_temperature=1.0, start_temperature=None,
                   discriminator_mlm_share=0.0)

    @classmethod
    def deberta_v3(cls):
        """DeBERTa-v3's replaced-token detection (He et al. 2021; microsoft/DeBERTa's
        experiments/language_model/rtd_*.json and rtd.sh): a generator of the discriminator's
        width and half its depth, gradient-disentangled embedding sharing, samples at
        temperature 1 from the first step, detection weighted 10 (its code's --rtd_lambda
        default), no other departures.

        >>> o = ElectraOptions.deberta_v3()
        >>> o.generator_size, o.generator_layers, o.disentangled_embeddings, o.rtd_weight
        (1.0, 0.5, True, 10.0)
        """
        return cls(generator_size=1.0, generator_layers=0.5, rtd_weight=10.0,
                   sampling_temperature=1.0, start_temperature=None,
                   disentangled_embeddings=True, discriminator_mlm_share=0.0)

    def validate(self):
        check(0.0 < self.generator_size <= 1.0,
              f"--generator_size must be in (0, 1], got {self.generator_size}.")
        check(0.0 < self.generator_layers <= 1.0,
              f"--generator_layers must be in (0, 1], got {self.generator_layers}.")
        check(self.rtd_weight > 0, f"--rtd_weight must be > 0, got {self.rtd_weight}.")
        check(self.corrective_weight >= 0,
              f"--corrective_weight must be >= 0, got {self.corrective_weight}.")
        check(0.0 <= self.discriminator_mlm_share < 1.0, "--discriminator_mlm_share must be in "
              f"[0, 1), got {self.discriminator_mlm_share}.")
        check(self.sampling_temperature > 0,
              f"--sampling_temperature must be > 0, got {self.sampling_temperature}.")
        check(self.start_temperature is None or self.start_temperature > 0,
              f"--start_temperature must be > 0, got {self.start_temperature}.")
        check(0.0 < self.curriculum_fraction <= 1.0,
              f"--curriculum_fraction must be in (0, 1], got {self.curriculum_fraction}.")

    def curriculum_steps(self, train_steps):
        """The easy start in optimizer steps of a run of `train_steps` (0: none)."""
        if self.start_temperature is None or self.start_temperature == self.sampling_temperature:
            return 0
        return max(1, int(round(self.curriculum_fraction * train_steps)))

    def stuck_advice(self):
        """What a stuck run of these options can try, with its own values: the easier
        replacements and the heavier detection loss that kept a small discriminator detecting
        (docs/variants.md; a weaker generator and GDES did not)."""
        start = self.start_temperature or self.sampling_temperature
        return (
            "Try easier replacements: a higher --sampling_temperature and --start_temperature "
            f"(this run: {self.sampling_temperature:g} and {start:g}; the paper's 1 stalls a "
            f"small discriminator), or a heavier --rtd_weight (this run: {self.rtd_weight:g}, "
            "paper 50); the discriminator's masked LM (--discriminator_mlm_share) still trains "
            "the encoder meanwhile; see docs/variants.md.")
