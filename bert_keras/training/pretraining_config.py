"""PretrainConfig: every option of a pretraining run (the flags of tools/pretrain.py).

>>> config = PretrainConfig(model_dir="/tmp/run",
...                         train_text="bert_keras/assets/web_bible_corpus.txt.gz")
>>> config.encoder_overrides()
{}
>>> PretrainConfig(model_dir="/tmp/run", train_text="bert_keras/assets/web_bible_corpus.txt.gz",
...                warmup_steps=2000)
Traceback (most recent call last):
...
bert_keras.configs.ConfigError: --warmup_steps=2000 must be in [0, --train_steps=1000].
"""

import dataclasses
import os

from bert_keras.configs import Config, ConfigError, check, option
from bert_keras.data.pretraining.documents import PAIR_MODES, TfdsText
from bert_keras.files import expand_patterns
from bert_keras.training.precision import AUTO, DTYPES
from bert_keras.training.pretraining_models import OBJECTIVES
from bert_keras.training.strategy import STRATEGIES


@dataclasses.dataclass(frozen=True)
class PretrainConfig(Config):
    """A pretraining run (masked LM + NSP / SOP / none, ELECTRA, distillation); see
    tools/pretrain.py."""

    objective: str = option("mlm", "mlm: BERT's masked LM (+ --pair_mode); electra: replaced-"
                            "token detection with a generator of --generator_size; distill: a "
                            "student of half the layers of --teacher_checkpoint learns its soft "
                            "targets (DistilBERT).", choices=tuple(OBJECTIVES))

    train_text: str = option(None, "Raw text files (comma-separated globs, .gz ok): one sentence "
                             "per line, blank line between documents. Pairs and masks are made "
                             "on the fly.")
    train_data: str = option(None, "Static pretraining TFRecords (comma-separated globs), e.g. "
                             "from tools/create_pretraining_data.py or Google's script.")
    tfds_name: str = option(None, "Or: a TFDS text dataset prepared in --tfds_data_dir (one "
                            "example = one document, its lines = sentences), read as "
                            "--train_text.")
    tfds_split: str = option("train", "--tfds_name: the split to train on.", advanced=True)
    tfds_text_key: str = option("text", "--tfds_name: the feature holding the text.",
                                advanced=True)
    tfds_data_dir: str = option(None, "--tfds_name: the TFDS data dir holding it prepared "
                                "(default: $TFDS_DATA_DIR, else ~/tensorflow_datasets).",
                                advanced=True)
    tfds_download: bool = option(False, "--tfds_name: download and prepare it into "
                                 "--tfds_data_dir if it is not there (needs the network); "
                                 "without it an unprepared dataset is refused at once.",
                                 advanced=True)
    model_dir: str = option(None, "Checkpoints, TensorBoard logs, run_config.json and the final "
                            "encoder/ go here; rerunning with the same directory resumes.")
    preset: str = option("bert_mini", "Encoder size: a bk.PRESETS name (bert_tiny, bert_mini, "
                         "bert_small, bert_base, bert_large, bert_L-4_H-512, ...).")
    train_steps: int = option(1000, "Optimizer updates to train for.")
    global_batch_size: int = option(32, "Examples per update, over all replicas (and "
                                    "accumulated micro-batches).")
    learning_rate: float = option(1e-4, "Peak learning rate.")
    warmup_steps: int = option(100, "Linear warmup steps, then linear decay to 0.")
    vocab_file: str = option(None, "WordPiece vocab; default: the bundled bert_keras/assets/"
                             "vocab.txt, or the vocab of --init_checkpoint.", advanced=True)
    lower_case: bool = option(True, "Uncased vocab (lower-case and strip accents).", advanced=True)
    tokenizer_dir: str = option(None, "Or: a directory of another family's tokenizer files "
                                "(RoBERTa's vocab.json + merges.txt, ALBERT's *.model, or a "
                                "vocab.txt), for pretraining that family from scratch.",
                                advanced=True)
    init_checkpoint: str = option(None, "Continue pretraining from this encoder: a Hugging Face, "
                                  "Google TF1 or bert_keras directory (its size overrides "
                                  "--preset).", advanced=True)
    num_layers: int = option(None, "Override the preset's number of layers.", advanced=True)
    hidden_size: int = option(None, "Override the preset's hidden size.", advanced=True)
    num_heads: int = option(None, "Override the preset's number of attention heads.", advanced=True)
    intermediate_size: int = option(None, "Override the preset's feed-forward size.", advanced=True)
    embedding_size: int = option(None, "Override the preset's embedding width (ALBERT's "
                                 "factorization: E < hidden size).", advanced=True)
    num_layer_groups: int = option(None, "Override the preset's number of distinct layer "
                                   "weight sets (ALBERT: 1, shared by all layers).", advanced=True)
    dropout: float = option(None, "Override hidden and attention dropout (preset: 0.1).",
                            advanced=True)
    max_seq_length: int = option(128, "Sequence length (of the data, for --train_data).",
                                 advanced=True)
    max_predictions_per_seq: int = option(20, "Masked positions per sequence.", advanced=True)
    masked_lm_prob: float = option(0.15, "Fraction of tokens masked (--train_text).", advanced=True)
    whole_word_mask: bool = option(False, "Mask whole words (--train_text).", advanced=True)
    ngram: int = option(1, "Mask spans of up to N words (WordPieces without "
                        "--whole_word_mask), n drawn with p proportional to 1/n; ALBERT: 3 "
                        "(--train_text).", advanced=True)
    documents_per_chunk: int = option(1000, "Documents tokenized at once per input worker "
                                      "(--train_text): also the pool of random next documents "
                                      "and the in-chunk shuffle. Smaller: a quicker first step "
                                      "on a small corpus.", advanced=True)
    pair_mode: str | None = option(None, "Sentence-pair task: next sentence, sentence order, "
                                   "or none (MLM only; full sentences packed across documents, "
                                   "RoBERTa). Default: nsp for --objective=mlm, none for electra "
                                   "and distill (which train none).", choices=PAIR_MODES,
                                   advanced=True)
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
                                           "gradient-disentangled embedding sharing: the "
                                           "discriminator adds a delta of its own to the shared "
                                           "embeddings and its loss trains only that delta, so "
                                           "only the generator's loss trains the shared tables "
                                           "(paper: false, both train them).", advanced=True)
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
    teacher_checkpoint: str = option(None, "--objective=distill: the teacher, a masked LM with "
                                     "its head: a bert_keras pretraining run's final/ or model "
                                     "dir, or a Hugging Face *ForMaskedLM / Google BERT "
                                     "directory.", advanced=True)
    student_layers: str = option(None, "--objective=distill: the teacher layers the student "
                                 "starts from, e.g. 0,2,4 (default: every other one).",
                                 advanced=True)
    distill_temperature: float = option(2.0, "--objective=distill: softmax temperature of the "
                                        "soft targets.", advanced=True)
    alpha_ce: float = option(5.0, "--objective=distill: weight of the soft-target KL loss.",
                             advanced=True)
    alpha_mlm: float = option(2.0, "--objective=distill: weight of the student's MLM loss.",
                              advanced=True)
    alpha_cos: float = option(1.0, "--objective=distill: weight of the hidden-state cosine "
                              "loss.", advanced=True)
    phase2_seq_length: int = option(None, "Two-phase recipe: the last --phase2_fraction of the "
                                    "steps use this sequence length (BERT: 128, then 512).",
                                    advanced=True)
    phase2_fraction: float = option(0.1, "Fraction of --train_steps in phase 2.", advanced=True)
    phase2_max_predictions_per_seq: int = option(None, "Masked positions in phase 2 (default: "
                                                 "--max_predictions_per_seq; BERT used 80 at 512).",
                                                 advanced=True)
    phase2_train_data: str = option(None, "Static TFRecords of phase 2 (with --train_data).",
                                    advanced=True)
    optimizer: str = option("adamw", "Optimizer.", choices=("adamw", "lamb"), advanced=True)
    end_learning_rate: float = option(0.0, "Learning rate at the last step.", advanced=True)
    weight_decay: float = option(0.01, "Decoupled weight decay (not LayerNorm, not biases).",
                                 advanced=True)
    adam_beta_2: float = option(0.999, "Adam's second-moment decay (RoBERTa: 0.98, for large "
                                "batches).", advanced=True)
    adam_epsilon: float = option(1e-6, "Adam's epsilon (BERT and RoBERTa: 1e-6).", advanced=True)
    gradient_accumulation_steps: int = option(1, "Micro-batches per update: each is "
                                              "global_batch_size / this examples.", advanced=True)
    distribution_strategy: str = option(
        "one_device", "one_device; mirrored (all local GPUs); multi_worker_mirrored (cluster "
        "from the TF_CONFIG environment variable); tpu (needs --tpu).", choices=STRATEGIES,
        advanced=True)
    tpu: str = option(None, "TPU address for --distribution_strategy=tpu ('local' on a TPU VM).",
                      advanced=True)
    dtype: str = option(AUTO, "Compute dtype policy (variables, layer norm, softmax and logits "
                        "stay float32); auto: mixed_bfloat16 where the CPU has AMX or "
                        "AVX512-BF16 (or the GPU bfloat16), float32 elsewhere.",
                        choices=(AUTO,) + DTYPES, advanced=True)
    jit_compile: bool = option(False, "XLA-compile the train step (good on GPU/TPU; on CPU it "
                               "loses bfloat16's speed).", advanced=True)
    steps_per_execution: int = option(1, "Batches per compiled call (TPU: e.g. 100).",
                                      advanced=True)
    checkpoint_every: int = option(1000, "Steps between checkpoints (a Keras epoch).",
                                   advanced=True)
    keep_checkpoints: int = option(5, "Recent checkpoints to keep.", advanced=True)
    log_every: int = option(100, "Steps between TensorBoard points and progress lines.",
                            advanced=True)
    seed: int = option(0, "Seeds everything random: initial weights, dropout, the data "
                       "(shuffling, pairs, masks) and ELECTRA's sampling.",
                       advanced=True)

    def __post_init__(self):
        if self.pair_mode is None:  # the objective's own: BERT's NSP for mlm, else none
            objective = OBJECTIVES.get(self.objective)
            object.__setattr__(self, "pair_mode", "nsp" if objective and objective.pair_task
                               else "none")
        super().__post_init__()

    def validate(self):
        check(bool(self.model_dir), "--model_dir is required.")
        sources = ("train_data", "train_text", "tfds_name")
        check(sum(bool(getattr(self, name)) for name in sources) == 1,
              "Give exactly one of --train_data (TFRecords), --train_text (raw text) and "
              "--tfds_name (a TFDS text dataset); got " + ", ".join(
                  f"--{name}={getattr(self, name)!r}" for name in sources) + ".")
        if not self.tfds_name:
            self.files("train_data" if self.train_data else "train_text")
        if self.phase2_train_data:
            check(bool(self.train_data), "--phase2_train_data goes with --train_data.")
            self.files("phase2_train_data")
        if self.phase2_seq_length:
            check(not (self.train_data and not self.phase2_train_data),
                  "--phase2_seq_length with --train_data needs --phase2_train_data (TFRecords "
                  f"of length {self.phase2_seq_length}).")
            check(0.0 < self.phase2_fraction < 1.0,
                  f"--phase2_fraction must be in (0, 1), got {self.phase2_fraction}.")
            phase1 = int(round(self.train_steps * (1.0 - self.phase2_fraction)))
            check(0 < phase1 < self.train_steps,
                  f"--phase2_fraction={self.phase2_fraction} leaves no steps for one of the two "
                  f"phases of --train_steps={self.train_steps}.")
        check(self.distribution_strategy != "tpu" or self.tpu,
              "--distribution_strategy=tpu needs --tpu (an address, or 'local').")
        check(not self.tpu or self.distribution_strategy == "tpu",
              f"--tpu={self.tpu!r} needs --distribution_strategy=tpu, got "
              f"{self.distribution_strategy!r}.")
        check(self.distribution_strategy != "multi_worker_mirrored" or os.environ.get("TF_CONFIG"),
              "--distribution_strategy=multi_worker_mirrored reads the cluster from the "
              "TF_CONFIG environment variable, which is not set.")
        check(not self.vocab_file or os.path.isfile(self.vocab_file),
              f"--vocab_file={self.vocab_file!r} does not exist.")
        check(not (self.vocab_file and self.tokenizer_dir),
              f"Give one of --vocab_file={self.vocab_file!r} and "
              f"--tokenizer_dir={self.tokenizer_dir!r}.")
        check(not self.tokenizer_dir or os.path.isdir(self.tokenizer_dir),
              f"--tokenizer_dir={self.tokenizer_dir!r} is not a directory.")
        check(0.0 < self.adam_beta_2 < 1.0, f"--adam_beta_2 must be in (0, 1), got "
              f"{self.adam_beta_2}.")
        check(self.adam_epsilon > 0, f"--adam_epsilon must be > 0, got {self.adam_epsilon}.")
        check(not self.init_checkpoint or os.path.isdir(self.init_checkpoint),
              f"--init_checkpoint={self.init_checkpoint!r} is not a directory.")
        for name in ("train_steps", "global_batch_size", "checkpoint_every", "keep_checkpoints",
                     "log_every", "gradient_accumulation_steps", "steps_per_execution",
                     "max_seq_length", "max_predictions_per_seq", "ngram", "documents_per_chunk"):
            value = getattr(self, name)
            check(isinstance(value, int) and value >= 1, f"--{name} must be >= 1, got {value}.")
        check(0 <= self.warmup_steps <= self.train_steps,
              f"--warmup_steps={self.warmup_steps} must be in "
              f"[0, --train_steps={self.train_steps}].")
        check(self.global_batch_size % self.gradient_accumulation_steps == 0,
              f"--global_batch_size={self.global_batch_size} is not divisible by "
              f"--gradient_accumulation_steps={self.gradient_accumulation_steps}.")
        check(0.0 < self.masked_lm_prob < 1.0,
              f"--masked_lm_prob must be in (0, 1), got {self.masked_lm_prob}.")
        check(self.pair_mode in PAIR_MODES,
              f"--pair_mode={self.pair_mode!r} is not one of {PAIR_MODES}.")
        check(self.objective in OBJECTIVES,
              f"--objective={self.objective!r} is not one of {tuple(OBJECTIVES)}.")
        objective = OBJECTIVES[self.objective]
        check(objective.pair_task or self.pair_mode == "none",
              f"--objective={self.objective} trains no sentence-pair task: give --pair_mode=none "
              f"(got --pair_mode={self.pair_mode}).")
        check(0.0 < self.generator_size <= 1.0,
              f"--generator_size must be in (0, 1], got {self.generator_size}.")
        check(0.0 < self.generator_layers <= 1.0,
              f"--generator_layers must be in (0, 1], got {self.generator_layers}.")
        check(self.rtd_weight > 0, f"--rtd_weight must be > 0, got {self.rtd_weight}.")
        check(self.corrective_weight >= 0,
              f"--corrective_weight must be >= 0, got {self.corrective_weight}.")
        check(0.0 <= self.discriminator_mlm_share < 1.0, "--discriminator_mlm_share must be in "
              f"[0, 1), got {self.discriminator_mlm_share}.")
        self.check_electra_curriculum()
        check(objective.teacher == bool(self.teacher_checkpoint),
              "--objective=distill needs --teacher_checkpoint, and only it takes one; got "
              f"--objective={self.objective}, --teacher_checkpoint={self.teacher_checkpoint!r}.")
        check(not self.teacher_checkpoint or os.path.isdir(self.teacher_checkpoint),
              f"--teacher_checkpoint={self.teacher_checkpoint!r} is not a directory.")
        check(not (objective.teacher and self.init_checkpoint),
              f"--objective={self.objective} starts the student from the teacher; drop "
              "--init_checkpoint.")
        check(self.distill_temperature > 0,
              f"--distill_temperature must be > 0, got {self.distill_temperature}.")
        self.student_layer_list()
        check(self.dtype in (AUTO,) + DTYPES,
              f"--dtype={self.dtype!r} is not one of {(AUTO,) + DTYPES}.")

    def check_electra_curriculum(self):
        check(self.sampling_temperature > 0,
              f"--sampling_temperature must be > 0, got {self.sampling_temperature}.")
        check(self.start_temperature is None or self.start_temperature > 0,
              f"--start_temperature must be > 0, got {self.start_temperature}.")
        check(0.0 < self.curriculum_fraction <= 1.0,
              f"--curriculum_fraction must be in (0, 1], got {self.curriculum_fraction}.")

    def curriculum_steps(self):
        """ELECTRA's easy start in steps (0: none)."""
        if self.start_temperature is None or self.start_temperature == self.sampling_temperature:
            return 0
        return max(1, int(round(self.curriculum_fraction * self.train_steps)))

    def tfds_text(self):
        """The `documents.TfdsText` of --tfds_name and its options (None without it)."""
        if not self.tfds_name:
            return None
        return TfdsText(self.tfds_name, self.tfds_split, self.tfds_text_key,
                        self.tfds_data_dir or None, self.tfds_download)

    def files(self, name):
        """The files of a comma-separated glob option; ConfigError naming it if one matches none."""
        pattern = getattr(self, name)
        try:
            return expand_patterns(pattern)
        except FileNotFoundError as e:
            raise ConfigError(f"No file matches {getattr(e, 'pattern', pattern)!r} "
                              f"(from --{name}={pattern!r}).") from None

    def encoder_overrides(self):
        """The preset settings this config overrides (sizes, dropout)."""
        overrides = {name: getattr(self, name) for name in
                     ("num_layers", "hidden_size", "num_heads", "intermediate_size",
                      "embedding_size", "num_layer_groups")
                     if getattr(self, name) is not None}
        if self.dropout is not None:
            overrides.update(dropout=self.dropout, attention_dropout=self.dropout)
        return overrides

    def student_layer_list(self):
        """--student_layers as a list of ints (None: every other teacher layer)."""
        if not self.student_layers:
            return None
        try:
            return [int(i) for i in self.student_layers.split(",")]
        except ValueError:
            raise ConfigError(f"--student_layers={self.student_layers!r} is not a comma-separated "
                              "list of layer numbers.") from None

    def phase1_steps(self):
        if not self.phase2_seq_length:
            return self.train_steps
        return int(round(self.train_steps * (1.0 - self.phase2_fraction)))
