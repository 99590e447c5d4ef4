"""The chunking rules of the entity metric (`metrics.entities`, seqeval's default) as tables
over tag ids, for the served tagger (`serving.py`), which finds entities in graph ops.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from bert_keras.metrics.entities import ends_chunk, split_tag, starts_chunk


def chunk_tables(labels: Sequence[str]):
    """`get_entities`' rules as tables over tag ids, for code that chunks without Python
    loops (the served tagger): (starts, ends, types).

    `starts[p, t]`: a chunk starts at tag id t after tag id p, where p = len(labels) stands
    for the start of the sentence. `ends[t, n]`: a chunk ends at tag id t before tag id n,
    where n = len(labels) stands for the end of the sentence. `types[t]`: the entity type of
    tag id t. A chunk ending at word j began at the last word i <= j that started one (the
    first word of the sentence if none did).

    >>> starts, ends, types = chunk_tables(["O", "B-PER", "I-PER"])
    >>> starts[3].tolist(), ends[2].tolist(), types
    ([False, True, True], [True, True, False, True], ['_', 'PER', 'PER'])
    """
    split = [split_tag(t) for t in labels]
    before = split + [("O", "")]  # index len(labels): the start of the sentence
    after = split + [split_tag("O")]  # index len(labels): the end of the sentence
    starts = np.array([[starts_chunk(p, t, pt, tt) for t, tt in split]
                       for p, pt in before], bool)
    ends = np.array([[ends_chunk(t, n, tt, nt) for n, nt in after]
                     for t, tt in split], bool)
    return starts, ends, [t for _, t in split]


__all__ = ["chunk_tables"]
