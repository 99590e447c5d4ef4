"""The input line of a serving signature: how tools/predict.py reads one line of a file as one
request row. A task type declares it (`Task.input_line`); predict.py only applies it.

Two forms, for every signature whose inputs are strings:
- a text line: the inputs in the signature's order, separated by tabs; an input of rank 2
  (a list per row, e.g. multiple choice's `choices` [B, K]) comes last and takes every
  remaining field (or the line's whitespace-separated words, `split_words`);
- a JSON line: an object with one key per input, a string for a rank-1 input and a list of
  strings for a rank-2 one.

>>> line = InputLine((("text", 1), ("choices", 2)), minimum=2)
>>> line.describe()
'text<TAB>choices<TAB>choices...'
>>> line.from_text("She opened the door.\\tShe left.\\tIt rained.")
{'text': 'She opened the door.', 'choices': ['She left.', 'It rained.']}
>>> line.from_json({"text": "She opened the door.", "choices": ["She left.", "It rained."]})
{'text': 'She opened the door.', 'choices': ['She left.', 'It rained.']}
>>> line.from_text("She opened the door.\\tShe left.")
Traceback (most recent call last):
ValueError: 1 choices; this model takes at least 2: text<TAB>choices<TAB>choices...
"""

import json


class InputLine:
    """How a line becomes one row of a signature's inputs.

    Args:
      inputs: ((input name, rank), ...) in the order a text line gives them; rank 1 (a string
        per row) or 2 (a list of strings per row: at most one, and last).
      minimum: the fewest items a rank-2 input takes.
      split_words: a rank-2 input is the rest of the line split at whitespace (a sentence's
        words), not its further tab-separated fields.
      padding: the value that pads a rank-2 input's shorter rows to the longest of a batch,
        where the signature reads it as padding; None: one batch holds rows of one length.
    """

    def __init__(self, inputs, minimum=1, split_words=False, padding=None):
        self.inputs = tuple((name, int(rank)) for name, rank in inputs)
        ranks = [rank for _, rank in self.inputs]
        if any(rank not in (1, 2) for rank in ranks) or 2 in ranks[:-1]:
            raise ValueError(f"An input line takes strings [B] and one last list [B, K]; got "
                             f"{self.inputs}.")
        self.names = [name for name, _ in self.inputs]
        self.list_input = self.names[-1] if ranks and ranks[-1] == 2 else None
        self.minimum, self.split_words, self.padding = minimum, split_words, padding

    def describe(self):
        """The text line's form, as error messages and the help show it."""
        texts = [name for name, rank in self.inputs if rank == 1]
        if self.list_input is None:
            return "<TAB>".join(texts)
        if self.split_words:
            return "<TAB>".join(texts + [f"{self.list_input} separated by spaces"])
        return "<TAB>".join(texts + [self.list_input] * 2) + "..."

    def from_text(self, line):
        """{input name: str or [str]} of a text line; ValueError saying what is wrong."""
        texts = len(self.names) - (self.list_input is not None)
        if self.list_input is None:
            parts = line.split("\t") if texts > 1 else [line]
            if len(parts) != texts:
                raise ValueError(f"{len(parts)} tab-separated fields; this model takes "
                                 f"{texts}: {self.describe()}")
            return dict(zip(self.names, parts))
        if self.split_words:  # the words: the rest of the line, tabs included
            head = line.split("\t", texts)
            if len(head) != texts + 1:
                raise ValueError(f"{len(head)} tab-separated fields; this model takes "
                                 f"{self.describe()}")
            parts = head[:texts] + [head[texts].split()]
        else:
            fields = line.split("\t")
            parts = fields[:texts] + [fields[texts:]]
        return self._checked(dict(zip(self.names, parts)))

    def from_json(self, row):
        """{input name: str or [str]} of a JSON line's object; ValueError naming a missing,
        unknown or mistyped key."""
        if not isinstance(row, dict):
            raise ValueError(f"a JSON {type(row).__name__}, not an object with the keys "
                             f"{self.names}")
        if set(row) != set(self.names):
            raise ValueError(f"keys {sorted(row)}; this model takes {self.names}")
        for name, rank in self.inputs:
            value = row[name]
            strings = value if rank == 2 else [value]
            if rank == 2 and not isinstance(value, list) or not all(
                    isinstance(s, str) for s in strings):
                want = "a list of strings" if rank == 2 else "a string"
                raise ValueError(f"{name!r} is {json.dumps(value)[:60]}, not {want}")
        return self._checked({name: row[name] for name in self.names})

    def _checked(self, row):
        items = row.get(self.list_input, None)
        if items is not None and len(items) < self.minimum:
            raise ValueError(f"{len(items)} {self.list_input}; this model takes at least "
                             f"{self.minimum}: {self.describe()}")
        return row

    def batches(self, rows):
        """[[row index, ...]]: the rows in each model call of a batch of rows, so that each
        call's rank-2 input is one [B, K] array (rows of one length, unless `padding`)."""
        if self.list_input is None or self.padding is not None:
            return [list(range(len(rows)))] if rows else []
        groups = {}
        for i, row in enumerate(rows):
            groups.setdefault(len(row[self.list_input]), []).append(i)
        return list(groups.values())

    def tensors(self, rows):
        """{input name: numpy array of str} of rows, a rank-2 input padded to its longest."""
        import numpy as np

        out = {name: np.array([row[name] for row in rows], dtype=object)
               for name in self.names if name != self.list_input}
        if self.list_input is not None:
            lists = [row[self.list_input] for row in rows]
            width = max(len(items) for items in lists)
            out[self.list_input] = np.array([items + [self.padding] * (width - len(items))
                                             for items in lists], dtype=object
                                            ).reshape(len(rows), width)
        return out
