"""Writes tests/fixtures/families/: small BERT-family checkpoints in the Hugging Face layout and
the reference outputs of transformers (PyTorch, float32) on them, so the suite needs no torch.

For each family: a WordPiece vocab trained on the bundled corpus by `tokenizers`, a randomly
initialised model of the family's own transformers classes (every parameter drawn from
N(0, 0.3), so attention is far from uniform and no bias or layer norm is trivially 0 or 1),
saved with `save_pretrained` (config.json, model.safetensors) with its tokenizer, loaded back
through the family's transformers tokenizer class to make the reference ids, and the encoder's
last hidden state on padded batches of single texts and pairs.

    python -m venv /tmp/ref && /tmp/ref/bin/pip install torch==2.13.0 transformers==5.23.0 \
        tokenizers==0.23.3 sentencepiece==0.2.3 numpy
    /tmp/ref/bin/python tests/make_family_references.py [classifiers | heads | offsets | tasks]

Made with torch 2.13.0, transformers 5.23.0, tokenizers 0.23.3, sentencepiece 0.2.3.
"""

import gzip
import json
import pathlib
import shutil
import tempfile

import numpy as np
import torch
import transformers
import sentencepiece
from tokenizers import BertWordPieceTokenizer, ByteLevelBPETokenizer

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "families"
CORPUS = ROOT / "bert_keras" / "assets" / "web_bible_corpus.txt.gz"

# Tokenizer parity texts: accents, CJK, emoji, control characters, long words, runs of spaces,
# empty strings, digits and punctuation.
TEXTS = [
    "In the beginning, God created the heavens and the earth.",
    "Café naïve Ångström — résumé!",
    "短い 中文字符 mixed with English.",
    "emoji 🙂 and ☃ snow",
    "tab\there\x00 control\x07 chars\u200b zero-width",
    "a" * 120 + " supercalifragilisticexpialidocious",
    "runs   of    spaces  ",
    "",
    "   ",
    "He paid 12,000 shekels; 9,9 and 1,000.",
    # (Special tokens written in the text, such as "[MASK]", are left out: transformers matches
    # them as added tokens, BertTokenizer splits them like Google's tokenizer; see the note.)
    "THE LORD'S HOUSE (Jerusalem) [brackets] #1",
]
SINGLES = ["And God said, Let there be light.", "Jesus wept.", "Café naïve résumé!", ""]
PAIRS = [("Who is the king of glory?", "Yahweh strong and mighty."),
         ("In the beginning", "was the Word, and the Word was with God, and the Word was God.")]

COMMON = dict(vocab_size=None, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
              intermediate_size=48, max_position_embeddings=64, initializer_range=0.3)


def corpus_lines(n=20000):
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        return [line.strip() for _, line in zip(range(n), f) if line.strip()]


def train_wordpiece(directory):
    tok = BertWordPieceTokenizer(lowercase=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(corpus_lines()))
    tok.train([f.name], vocab_size=1000, min_frequency=2,
              special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    tok.save_model(str(directory))
    return directory / "vocab.txt"


def randomize(model):
    model.eval()
    with torch.no_grad():
        for parameter in model.parameters():  # tied parameters stay tied
            parameter.normal_(0, 0.3)


def references(base, tokenizer, with_types):
    """Reference ids (each text alone) and encoder outputs (padded batches)."""
    out = {}
    for i, text in enumerate(TEXTS):
        out[f"text_{i}"] = np.array(tokenizer(text, add_special_tokens=False)["input_ids"], np.int32)
    batches = {"singles": tokenizer(SINGLES, padding=True, return_tensors="pt"),
               "pairs": tokenizer([a for a, _ in PAIRS], [b for _, b in PAIRS], padding=True,
                                  return_tensors="pt")}
    for name, batch in batches.items():
        types = batch.get("token_type_ids")
        kwargs = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        if with_types:
            kwargs["token_type_ids"] = types
        with torch.no_grad():
            hidden = base(**kwargs).last_hidden_state.numpy()
        out[f"{name}_input_ids"] = batch["input_ids"].numpy().astype(np.int32)
        out[f"{name}_input_mask"] = batch["attention_mask"].numpy().astype(np.int32)
        out[f"{name}_input_type_ids"] = (np.zeros_like(out[f"{name}_input_ids"]) if types is None
                                         else types.numpy().astype(np.int32))
        out[f"{name}_sequence_output"] = hidden.astype(np.float32)
    return out


def wordpiece_tokenizer(directory):
    vocab = train_wordpiece(directory)
    # transformers 5 takes the vocab as `vocab=` (a `vocab_file=` argument is silently ignored).
    transformers.BertTokenizer(vocab=str(vocab), do_lower_case=True).save_pretrained(directory)


def byte_level_bpe_tokenizer(directory):
    """RoBERTa's vocab.json + merges.txt, trained by `tokenizers`' byte-level BPE."""
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus_lines(), vocab_size=1000, min_frequency=2,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(directory))
    transformers.RobertaTokenizer.from_pretrained(directory).save_pretrained(directory)


def sentencepiece_tokenizer(directory):
    """ALBERT's spiece.model (unigram, <pad>=0 <unk>=1 [CLS] [SEP] [MASK] control symbols)."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(corpus_lines() + ["We paid 12, then 9,9 and 1,000."] * 50))
    sentencepiece.SentencePieceTrainer.train(
        input=f.name, model_prefix=str(directory / "spiece"), vocab_size=1000,
        model_type="unigram", pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"], character_coverage=1.0,
        hard_vocab_limit=False)
    transformers.AlbertTokenizer.from_pretrained(directory).save_pretrained(directory)


def make(name, model, base_of, with_types, make_tokenizer=wordpiece_tokenizer):
    directory = OUT / name
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    make_tokenizer(directory)
    torch.manual_seed(0)
    randomize(model)
    model.save_pretrained(directory)
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)  # the family's own class
    arrays = references(base_of(model), tokenizer, with_types)
    np.savez_compressed(directory / "reference.npz", **arrays)
    print(name, type(model).__name__, type(tokenizer).__name__,
          sorted(p.name for p in directory.iterdir()))


def make_classifier(name, family, model_class, config_of):
    """A fine-tuned-style checkpoint of the family's own sequence-classification class (3
    labels), with the family's tokenizer files, and its logits on the padded batches."""
    directory = OUT / f"{name}_classifier"
    shutil.rmtree(directory, ignore_errors=True)
    shutil.copytree(OUT / family, directory, ignore=shutil.ignore_patterns(
        "config.json", "model.safetensors", "reference.npz"))
    config = config_of(transformers.AutoConfig.from_pretrained(OUT / family))
    config.num_labels = 3
    model = model_class(config)
    torch.manual_seed(1)
    randomize(model)
    model.save_pretrained(directory)
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    arrays = {}
    batches = {"singles": tokenizer(SINGLES, padding=True, return_tensors="pt"),
               "pairs": tokenizer([a for a, _ in PAIRS], [b for _, b in PAIRS], padding=True,
                                  return_tensors="pt")}
    for batch_name, batch in batches.items():
        kwargs = {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask",
                                                           "token_type_ids")}
        with torch.no_grad():
            arrays[f"{batch_name}_logits"] = model(**kwargs).logits.numpy().astype(np.float32)
        for key, value in kwargs.items():
            arrays[f"{batch_name}_{key}"] = value.numpy().astype(np.int32)
    np.savez_compressed(directory / "reference.npz", **arrays)
    print(directory.name, type(model).__name__)


def classifiers():
    keep = lambda config: config  # noqa: E731
    make_classifier("roberta", "roberta", transformers.RobertaForSequenceClassification, keep)
    make_classifier("distilbert", "distilbert", transformers.DistilBertForSequenceClassification,
                    keep)
    make_classifier("electra", "electra_discriminator",
                    transformers.ElectraForSequenceClassification, keep)
    make_classifier("albert", "albert", transformers.AlbertForSequenceClassification, keep)


# Fine-tuned-style task checkpoints: (fixture, the family fixture whose config and tokenizer
# files it takes, transformers class prefix). BERT takes DistilBERT's WordPiece files.
TASK_FAMILIES = [("bert", "distilbert", "Bert"), ("roberta", "roberta", "Roberta"),
                 ("albert", "albert", "Albert"), ("distilbert", "distilbert", "DistilBert"),
                 ("electra", "electra_discriminator", "Electra")]
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
TAGGING_TEXTS = ["Jesus went to Jerusalem, then   Galilee.", "Café naïve résumé!",
                 "don't stop 12,000 shekels", "短い English 🙂 mixed"]
QA_PAIRS = [("Who wept?", "Jesus wept. Then Lazarus came out of the tomb."),
            ("Where did he go?", "He went up to Jerusalem, to the temple of the LORD."),
            ("What is naïve?", "Café naïve résumé! It is a word with accents.")]
MAX_ANSWER_TOKENS = 30


def task_config(family, prefix):
    config = transformers.AutoConfig.from_pretrained(OUT / family)
    if prefix == "Bert":
        config = transformers.BertConfig(**{k: v for k, v in config.to_dict().items()
                                            if k not in ("model_type", "architectures")})
        config.vocab_size, config.hidden_size, config.num_hidden_layers = 1000, 32, 2
        config.num_attention_heads, config.intermediate_size = 4, 48
        config.max_position_embeddings = 64
    return config


def tagging_answers(model, tokenizer):
    """What the tagging export must answer: per word of `word_ids()`, the tag and softmax
    probability at its first token, its char span from `offset_mapping`."""
    rows = []
    for text in TAGGING_TEXTS:
        enc = tokenizer(text, return_offsets_mapping=True, return_tensors="pt")
        with torch.no_grad():
            logits = model(**{k: v for k, v in enc.items() if k != "offset_mapping"}).logits[0]
        probs = torch.softmax(logits, -1).numpy()
        words, offsets = enc.word_ids(), enc["offset_mapping"][0].tolist()
        row = dict(text=text, tokens=[], tags=[], tag_scores=[], token_starts=[], token_ends=[])
        for w in sorted({w for w in words if w is not None}):
            positions = [i for i, x in enumerate(words) if x == w]
            start, end = offsets[positions[0]][0], offsets[positions[-1]][1]
            tag = int(probs[positions[0]].argmax())
            row["tokens"].append(text[start:end])
            row["tags"].append(model.config.id2label[tag])
            row["tag_scores"].append(float(probs[positions[0], tag]))
            row["token_starts"].append(start)
            row["token_ends"].append(end)
        rows.append(row)
    return rows


def span_answers(model, tokenizer):
    """What the span-QA export must answer: the best span s <= e < s + MAX_ANSWER_TOKENS
    inside the context by start + end logit, its text and char span."""
    rows = []
    for question, context in QA_PAIRS:
        enc = tokenizer(question, context, return_offsets_mapping=True, return_tensors="pt")
        with torch.no_grad():
            out = model(**{k: v for k, v in enc.items() if k != "offset_mapping"})
        start, end = out.start_logits[0].numpy(), out.end_logits[0].numpy()
        in_context = [s == 1 for s in enc.sequence_ids()]
        offsets = enc["offset_mapping"][0].tolist()
        best = max((float(start[s] + end[e]), s, e) for s in range(len(start))
                   for e in range(s, min(s + MAX_ANSWER_TOKENS, len(end)))
                   if in_context[s] and in_context[e])
        score, s, e = best
        a, b = offsets[s][0], offsets[e][1]
        rows.append(dict(question=question, context=context, answer=context[a:b],
                         answer_start=a, answer_end=b, score=score))
    return rows


def task_checkpoints():
    """<family>_tagger and <family>_qa: `*ForTokenClassification` (5 tags, id2label) and
    `*ForQuestionAnswering` checkpoints of the five families with their tokenizer files, and
    answers.json: what their exports must answer, computed with transformers."""
    for name, family, prefix in TASK_FAMILIES:
        for kind, head in (("tagger", "ForTokenClassification"), ("qa", "ForQuestionAnswering")):
            directory = OUT / f"{name}_{kind}"
            shutil.rmtree(directory, ignore_errors=True)
            shutil.copytree(OUT / family, directory, ignore=shutil.ignore_patterns(
                "config.json", "model.safetensors", "*.npz"))
            config = task_config(family, prefix)
            if kind == "tagger":
                config.num_labels = len(TAGS)
                config.id2label = dict(enumerate(TAGS))
                config.label2id = {t: i for i, t in enumerate(TAGS)}
            model = getattr(transformers, prefix + head)(config)
            torch.manual_seed(2)
            randomize(model)
            model.save_pretrained(directory)
            tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
            answers = (tagging_answers if kind == "tagger" else span_answers)(model, tokenizer)
            (directory / "answers.json").write_text(
                json.dumps(answers, ensure_ascii=False, indent=1) + "\n")
            print(directory.name, type(model).__name__, type(tokenizer).__name__)


# The pretraining heads of the masked-LM / pretraining fixtures: the class each was saved as.
HEAD_CLASSES = {"distilbert": "DistilBertForMaskedLM", "roberta": "RobertaForMaskedLM",
                "albert": "AlbertForMaskedLM", "electra_generator": "ElectraForMaskedLM",
                "electra_discriminator": "ElectraForPreTraining"}


def head_references():
    """heads.npz beside each masked-LM fixture: transformers' logits of its pretraining head on
    the padded batch of pairs (masked-LM logits (B, T, V), or ELECTRA's discriminator logits
    (B, T)), from the saved files as they are (nothing re-randomised)."""
    for name, class_name in HEAD_CLASSES.items():
        directory = OUT / name
        model = getattr(transformers, class_name).from_pretrained(directory).eval()
        ref = np.load(directory / "reference.npz")
        kwargs = dict(input_ids=torch.from_numpy(ref["pairs_input_ids"]).long(),
                      attention_mask=torch.from_numpy(ref["pairs_input_mask"]).long())
        if name not in ("distilbert", "roberta"):
            kwargs["token_type_ids"] = torch.from_numpy(ref["pairs_input_type_ids"]).long()
        with torch.no_grad():
            logits = model(**kwargs).logits.numpy().astype(np.float32)
        np.savez_compressed(directory / "heads.npz", pairs_logits=logits)
        print(name, class_name, logits.shape)


# Offset parity texts: the tokenizer texts plus words glued to punctuation, leading spaces,
# accents that lower-casing and accent stripping remove, CJK between Latin, emoji inside words.
OFFSET_TEXTS = TEXTS + [
    "  Hello, world!  How are you?",
    "Ünïcödé ÀÉÎ ñ straße ﬁne",
    "日本語のテキストとEnglish混在",
    "smile🙂inside and 👍🏽 thumbs",
    "don't won't it's we'll they're",
    "x -- y --- z ---------- end",
    "a\tb\nc\r\nd",
    "``quoted'' and \"plain\" text",
]


def offset_references():
    """offsets.json: for each tokenizer kind (WordPiece, byte-level BPE, SentencePiece), the
    ids, char offsets (`offset_mapping`) and `word_ids()` of transformers' tokenizer of the
    fixture, on OFFSET_TEXTS without special tokens."""
    out = {"texts": OFFSET_TEXTS}
    for name in ("distilbert", "roberta", "albert"):
        tokenizer = transformers.AutoTokenizer.from_pretrained(OUT / name)
        rows = []
        for text in OFFSET_TEXTS:
            encoding = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
            rows.append(dict(ids=encoding["input_ids"],
                             offsets=[list(o) for o in encoding["offset_mapping"]],
                             words=encoding.word_ids()))
        out[name] = rows
    (OUT / "offsets.json").write_text(json.dumps(out, ensure_ascii=False) + "\n")
    print("offsets.json", {k: len(v) for k, v in out.items()})


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "texts.json").write_text(json.dumps(dict(texts=TEXTS, singles=SINGLES, pairs=PAIRS),
                                               ensure_ascii=False, indent=1) + "\n")
    vocab_size = 1000
    torch.manual_seed(0)
    make("distilbert", transformers.DistilBertForMaskedLM(transformers.DistilBertConfig(
        vocab_size=vocab_size, dim=32, n_layers=2, n_heads=4, hidden_dim=48,
        max_position_embeddings=64, activation="gelu", initializer_range=0.3)),
        lambda m: m.distilbert, with_types=False)
    common = dict(COMMON, vocab_size=vocab_size)
    make("electra_discriminator", transformers.ElectraForPreTraining(transformers.ElectraConfig(
        **common, embedding_size=16)), lambda m: m.electra, with_types=True)
    make("electra_generator", transformers.ElectraForMaskedLM(transformers.ElectraConfig(
        **dict(common, hidden_size=16, intermediate_size=24, num_attention_heads=2),
        embedding_size=16)), lambda m: m.electra, with_types=True)
    make("roberta", transformers.RobertaForMaskedLM(transformers.RobertaConfig(
        **dict(common, max_position_embeddings=66), type_vocab_size=1, layer_norm_eps=1e-5,
        pad_token_id=1, bos_token_id=0, eos_token_id=2)),
        lambda m: m.roberta, with_types=False, make_tokenizer=byte_level_bpe_tokenizer)
    make("albert", transformers.AlbertForMaskedLM(transformers.AlbertConfig(
        **dict(common, num_hidden_layers=4), embedding_size=16, num_hidden_groups=2,
        inner_group_num=1, hidden_act="gelu_new")),
        lambda m: m.albert, with_types=True, make_tokenizer=sentencepiece_tokenizer)


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["classifiers"]:
        classifiers()
    elif sys.argv[1:] == ["heads"]:
        head_references()
    elif sys.argv[1:] == ["offsets"]:
        offset_references()
    elif sys.argv[1:] == ["tasks"]:
        task_checkpoints()
    else:
        main(), classifiers(), head_references(), offset_references(), task_checkpoints()
