"""Keras metric results (`model.get_metrics_result()`, a callback's `logs`) as Python floats.

>>> import numpy as np
>>> scalar_floats({"loss": np.float32(0.5), "confusion": np.zeros((2, 2))})
{'loss': 0.5}
"""

import numpy as np


def scalar_floats(values):
    """{name: float} of the scalar entries of `values` (None: {}); other entries are left out."""
    return {k: float(np.asarray(v)) for k, v in (values or {}).items() if np.size(v) == 1}
