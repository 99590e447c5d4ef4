"""How span QA reads a TFDS dataset's rows (`data.finetuning.tfds`): SQuAD's features `id`,
`question`, `context`, `answers` {`text`, `answer_start`} and (v2.0) `is_impossible`."""

from bert_keras.data.finetuning.tfds import decoded
from bert_keras.tasks.span_qa.reader import SpanExample

SPAN_FEATURES = ("id", "question", "context", "answers")


def reads_squad_features(dataset):
    """Whether the dataset has SQuAD's features (what makes it span QA without --task)."""
    return all(key in dataset.kinds for key in SPAN_FEATURES)


class SquadReader:
    """Reads rows as SpanExamples; refused in one line without SQuAD's features."""

    def __init__(self, dataset, **unused_fields):
        missing = [k for k in SPAN_FEATURES if k not in dataset.kinds]
        if missing or dataset.kinds["answers"] not in ("dict", "seq:dict"):
            dataset.refuse(f"span_qa reads SQuAD's features {list(SPAN_FEATURES)} (answers: "
                           f"text, answer_start), missing {missing or ['answers as a dict']}.")

    def label_map(self):
        return None

    def example(self, row, where, split):
        texts = [decoded(t) for t in row["answers"]["text"]]
        starts = [int(s) for s in row["answers"]["answer_start"]]
        return SpanExample(qid=decoded(row["id"]), question=decoded(row["question"]),
                           context=decoded(row["context"]), answers=list(zip(texts, starts)),
                           is_impossible=bool(row.get("is_impossible", False)), source=where)
