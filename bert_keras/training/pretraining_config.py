"""PretrainConfig: a pretraining run (the flags of tools/pretrain.py), made of its components'
configs: the data (`data.pretraining.config.PretrainData`), the encoder
(`models.encoder.config.EncoderChoice`), the optimizer (`optimization.config.OptimizerConfig`),
the runtime (`runtime_config.RuntimeConfig`) and the options of the --objective
(`ElectraOptions`, `DistillOptions`).

>>> config = PretrainConfig.from_options(
...     model_dir="/tmp/run", train_text="bert_keras/assets/web_bible_corpus.txt.gz")
>>> config.encoder.overrides(), config.data.pair_mode
({}, 'nsp')
>>> PretrainConfig.from_options(model_dir="/tmp/run",
...                             train_text="bert_keras/assets/web_bible_corpus.txt.gz",
...                             warmup_steps=2000)
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --warmup_steps=2000 must be in [0, --train_steps=1000].
"""

import dataclasses

from bert_keras.configs import Config, check, chosen_section, option, section
from bert_keras.data.pretraining.config import PretrainData
from bert_keras.models.encoder.config import EncoderChoice
from bert_keras.optimization.config import OptimizerConfig
from bert_keras.tasks.pretraining.objectives import OBJECTIVES
from bert_keras.training.runtime_config import RuntimeConfig
from bert_keras.training.strategy import MULTI_STEP_STRATEGIES


def _objective_options():
    """{objective name: its options class or None}."""
    return {name: objective.options_class for name, objective in OBJECTIVES.items()}


@dataclasses.dataclass(frozen=True)
class PretrainConfig(Config):
    """A pretraining run (masked LM + NSP / SOP / none, ELECTRA, distillation); see
    tools/pretrain.py."""

    objective: str = option("mlm", "; ".join(f"{name}: {objective.help}"
                                             for name, objective in OBJECTIVES.items()) + ".",
                            choices=tuple(OBJECTIVES))
    model_dir: str = option(None, "Checkpoints, TensorBoard logs, run_config.json and the final "
                            "encoder/ go here; rerunning with the same directory resumes.")
    train_steps: int = option(1000, "Optimizer updates to train for.")
    global_batch_size: int = option(32, "Examples per update, over all replicas (and "
                                    "accumulated micro-batches).")
    warmup_steps: int = option(100, "Linear warmup steps, then linear decay to 0.")
    steps_per_execution: int = option(1, "Batches per compiled call (TPU: e.g. 100).",
                                      advanced=True)
    checkpoint_every: int = option(1000, "Steps between checkpoints (a Keras epoch).",
                                   advanced=True)
    keep_checkpoints: int = option(5, "Recent checkpoints to keep.", advanced=True)
    log_every: int = option(100, "Steps between TensorBoard points and progress lines.",
                            advanced=True)
    eval_every: int = option(1000, "Steps between evaluations of --eval_data / --eval_text "
                             "(also at the end of each phase).", advanced=True)
    eval_steps: int = option(100, "Batches per evaluation: the first N batches of the held-out "
                             "data (all of it if fewer), the same ones each time.",
                             advanced=True)
    seed: int = option(0, "Seeds everything random: initial weights, dropout, the data "
                       "(shuffling, pairs, masks) and ELECTRA's sampling.",
                       advanced=True)
    data: PretrainData = section(PretrainData)
    encoder: EncoderChoice = section(EncoderChoice)
    optimizer: OptimizerConfig = section(OptimizerConfig, learning_rate=1e-4)
    runtime: RuntimeConfig = section(RuntimeConfig, advanced=True)
    objective_options: Config = chosen_section("objective", _objective_options)

    def __post_init__(self):
        if self.data.pair_mode is None:  # the objective's own: BERT's NSP for mlm, else none
            objective = OBJECTIVES.get(self.objective)
            object.__setattr__(self, "data", self.data.replace(
                pair_mode="nsp" if objective and objective.pair_task else "none"))
        super().__post_init__()

    def validate(self):
        check(bool(self.model_dir), "--model_dir is required.")
        check(self.objective in OBJECTIVES,
              f"--objective={self.objective!r} is not one of {tuple(OBJECTIVES)}.")
        for name in ("train_steps", "global_batch_size", "checkpoint_every", "keep_checkpoints",
                     "log_every", "steps_per_execution", "eval_every", "eval_steps"):
            value = getattr(self, name)
            check(isinstance(value, int) and value >= 1, f"--{name} must be >= 1, got {value}.")
        check(0 <= self.warmup_steps <= self.train_steps,
              f"--warmup_steps={self.warmup_steps} must be in "
              f"[0, --train_steps={self.train_steps}].")
        strategy = self.runtime.distribution_strategy
        check(self.steps_per_execution == 1 or strategy in MULTI_STEP_STRATEGIES,
              f"--steps_per_execution={self.steps_per_execution} runs under "
              f"--distribution_strategy={'|'.join(MULTI_STEP_STRATEGIES)}, not {strategy} "
              "(Keras' multi-step loop fails there: keras-team/keras#19246).")
        accumulation = self.optimizer.gradient_accumulation_steps
        check(self.global_batch_size % accumulation == 0,
              f"--global_batch_size={self.global_batch_size} is not divisible by "
              f"--gradient_accumulation_steps={accumulation}.")
        if self.data.phase2_seq_length:
            phase1 = self.phase1_steps()
            check(0 < phase1 < self.train_steps,
                  f"--phase2_fraction={self.data.phase2_fraction} leaves no steps for one of the "
                  f"two phases of --train_steps={self.train_steps}.")
        objective = OBJECTIVES[self.objective]
        check(objective.pair_task or self.data.pair_mode == "none",
              f"--objective={self.objective} trains no sentence-pair task: give --pair_mode=none "
              f"(got --pair_mode={self.data.pair_mode}).")
        check(not (objective.teacher and self.encoder.init_checkpoint),
              f"--objective={self.objective} starts the student from the teacher; drop "
              "--init_checkpoint.")

    def curriculum_steps(self):
        """ELECTRA's easy start in steps (0: none, or not ELECTRA)."""
        curriculum = getattr(self.objective_options, "curriculum_steps", None)
        return curriculum(self.train_steps) if curriculum else 0

    def phase1_steps(self):
        if not self.data.phase2_seq_length:
            return self.train_steps
        return int(round(self.train_steps * (1.0 - self.data.phase2_fraction)))
