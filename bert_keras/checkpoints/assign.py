"""Setting a Keras model's variables from checkpoint tensors through an exact name map.

A name map is {our variable path: (source tensor names, combine)}, where `combine` turns the
source arrays (in order) into the value of our variable. A tensor that no variable uses, a
variable that no tensor feeds, and a shape that differs are errors that name the tensors.
"""

import re

import numpy as np

from bert_keras.errors import InputError
from bert_keras.families import head_prefixes

# The combine functions of name maps, imported from here by the layout readers.
from bert_keras.families.converters import (  # noqa: F401  (re-exported)
    concat_columns,
    identity,
    transpose,
    transpose_concat,
)


class CheckpointError(InputError):
    """A checkpoint does not match the model: names the tensors at fault."""


# Tensors a full checkpoint carries that the encoder does not use: the task heads of every
# family (loaded, where they are, by the task models), optimizer slots, step counters, Hugging
# Face's constant position ids.
_SKIPPED = re.compile(
    rf"(^({'|'.join(head_prefixes())})[./])|(adam_[mv]$)|(^global_step$)|(position_ids$)"
    r"|(^_CHECKPOINTABLE_OBJECT_GRAPH$)"
)


def assign_weights(model, name_map, tensors, source, partial=False):
    """Sets `model`'s variables from `tensors` (name -> array) through `name_map`.

    With `partial=False` the map must cover every variable and use every tensor (but the
    known head and optimizer tensors); with `partial=True` it sets only the mapped variables
    (e.g. the pretraining heads) and ignores the checkpoint's other tensors.

    >>> import keras, numpy as np
    >>> layer = keras.layers.Dense(2, name="d"); layer.build((None, 3))
    >>> assign_weights(layer, {"d/kernel": (["w"], transpose), "d/bias": (["b"], identity)},
    ...                {"w": np.ones((2, 3)), "b": np.zeros(2)}, "example")
    >>> layer.kernel.numpy().tolist()
    [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]
    """
    variables = {v.path: v for v in model.weights}
    unmapped = sorted(set(variables) - set(name_map)) if not partial else []
    unknown = sorted(set(name_map) - set(variables))
    if unmapped or unknown:  # A bug in the map itself, never the user's fault.
        raise AssertionError(f"Name map of {model.name} does not match its variables: "
                             f"unmapped {unmapped}, unknown {unknown}.")
    needed = {name for sources, _ in name_map.values() for name in sources}
    missing = sorted(needed - set(tensors))
    unused = [] if partial else sorted(
        n for n in set(tensors) - needed if not _SKIPPED.search(n))
    if missing or unused:
        raise CheckpointError(
            f"Checkpoint {source} does not match {model.name}: "
            f"missing tensors {missing[:10]}{' ...' if len(missing) > 10 else ''}; "
            f"unused tensors {unused[:10]}{' ...' if len(unused) > 10 else ''}."
        )
    values, wrong = {}, []
    for path, (sources, combine) in name_map.items():
        value = combine(*[np.asarray(tensors[name]) for name in sources])
        expected = tuple(variables[path].shape)
        if value.shape != expected:
            wrong.append(f"{'+'.join(sources)}: {value.shape} for {path} expecting {expected}")
        values[path] = value
    if wrong:
        raise CheckpointError(f"Checkpoint {source} has tensors of the wrong shape: {wrong}.")
    for path, value in values.items():
        variables[path].assign(value.astype(variables[path].dtype))
