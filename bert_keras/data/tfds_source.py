"""TfdsSource: the options that name a TFDS dataset as a run's data (both tools).

>>> TfdsSource(tfds_name="glue/mrpc").tfds_download
False
"""

import dataclasses

from bert_keras.configs import Config, option


@dataclasses.dataclass(frozen=True)
class TfdsSource(Config):
    """A TFDS dataset prepared in a data dir (`tfds_datasets.open_prepared`)."""

    tfds_name: str = option(None, "A prepared TFDS dataset instead of files (docs/data_formats."
                            "md): glue/mrpc, squad/v1.1, conll2003, your own; a text dataset "
                            "for pretraining.")
    tfds_data_dir: str = option(None, "The TFDS data dir holding --tfds_name prepared "
                                "(default: $TFDS_DATA_DIR, else ~/tensorflow_datasets).",
                                advanced=True)
    tfds_download: bool = option(False, "Download and prepare --tfds_name into --tfds_data_dir "
                                 "if it is not there (needs the network); without it an "
                                 "unprepared dataset is refused at once.", advanced=True)
