"""A bare encoder in an export: text in, the pooled and per-token representations out."""

from bert_keras.models.encoder import BertEncoder
from bert_keras.tasks.base import Task
from bert_keras.tasks.embedding.export_options import EmbedderExportOptions


class Encoder(Task):
    """Serves `text` -> pooled_output [B, H], sequence_output [B, T, H], input_mask [B, T]."""

    name = "encoder"
    finetunable = False
    needs_label_map = False

    export_options_class = EmbedderExportOptions  # --pooling: served as an embedder

    padded_outputs = ("sequence_output", "input_mask")
    padding_marker = ("input_mask", 0)

    def builds(self, model):
        return isinstance(model, BertEncoder)

    def with_export_options(self, model, info, options, source):
        return options.embedder(model, source), info

    def serve(self, fns, texts):
        inputs, _ = self.preprocess(fns, texts)
        out = fns.encode(**inputs)
        out["input_mask"] = inputs["input_mask"]
        return out
