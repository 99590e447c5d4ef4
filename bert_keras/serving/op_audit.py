"""Op audit of a SavedModel: only ops that a stock TF Serving binary has may appear.

The most common failure of BERT exports in production is "Op type not registered" in the
model server: the graph uses a tensorflow-text op that the server's copy of tf-text does not
have. Stock TF Serving links `@org_tensorflow_text//tensorflow_text:ops_lib`
(tensorflow_serving/model_servers/BUILD, `SUPPORTED_TENSORFLOW_OPS`), but pins an OLD
tensorflow-text: 2.12.1 up to at least TF Serving 2.18 (tensorflow/serving PR #4057), so ops
added to tf-text later are missing there. Observed in the wild: 'TFText>RoundRobinTrim'
(used by `tensorflow_text.RoundRobinTrimmer` since tf-text 2.13+, e.g. keras-hub's BERT
preprocessor) fails in TF Serving (tensorflow/serving issue #2267). The export therefore packs
segments with core ops only, and this audit rejects any op outside:

* core TensorFlow: every op in `tf.raw_ops` (the public op registry of core TF), minus the ops
  that need a Python interpreter (`PyFunc`, `EagerPyFunc`, ...), which no server has;
* `TF_SERVING_TEXT_OPS`: the tf-text ops of tf-text 2.12's ops_lib (the ones a BERT export
  can need and that are documented in that release);
* functions of the SavedModel's own function library (a call node's op is the function name).

Example:
>>> audit_saved_model("saved_models/paraphrase/1")  # doctest: +SKIP
{'FastWordpieceTokenizeWithOffsets', 'MatMul', ...}
"""

import os

import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

# tf-text ops in TF Serving's embedded tensorflow-text (2.12.1): the ops_lib kernels.
TF_SERVING_TEXT_OPS = frozenset({
    "CaseFoldUTF8",
    "ConstrainedSequence",
    "FastBertNormalize",
    "FastWordpieceTokenizeWithOffsets",
    "FindSourceOffsets",
    "MaxSpanningTree",
    "NormalizeUTF8",
    "NormalizeUTF8WithOffsetsMap",
    "RegexSplitWithOffsets",
    "SentenceFragments",
    "SentenceFragmentsV2",
    "SentencepieceDetokenizeOp",
    "SentencepieceIdToStringOp",
    "SentencepieceOp",
    "SentencepieceStringToIdOp",
    "SentencepieceTokenizeOp",
    "SentencepieceTokenizeWithOffsetsOp",
    "SentencepieceVocabSizeOp",
    "SplitMergeTokenizeWithOffsets",
    "TFText>FastWordpieceDetokenize",
    "TFText>NgramsStringJoin",
    "TFText>WhitespaceTokenizeWithOffsetsV2",
    "TokenizerFromLogits",
    "UnicodeScriptTokenizeWithOffsets",
    "WhitespaceTokenizeWithOffsets",
    "WordpieceTokenizeWithOffsets",
})

# Core ops that exist in every TF build but call back into Python: never servable.
PYTHON_OPS = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc"})


class OpAuditError(ValueError):
    """A SavedModel uses ops that stock TF Serving does not register; `.ops` names them."""

    def __init__(self, message, ops):
        super().__init__(message)
        self.ops = dict(ops)


def allowed_ops(extra=()):
    """The set of op names an export may use (core TF + TF Serving's tf-text + `extra`)."""
    core = {name for name in dir(tf.raw_ops) if not name.startswith("_")}
    return (core - PYTHON_OPS) | TF_SERVING_TEXT_OPS | set(extra)


def saved_model_ops(export_dir):
    """{op name: sorted list of graphs/functions using it} over every meta graph of a
    SavedModel: the graph nodes and every function of the function library."""
    path = os.path.join(os.fspath(export_dir), "saved_model.pb")
    proto = saved_model_pb2.SavedModel()
    with tf.io.gfile.GFile(path, "rb") as f:
        proto.ParseFromString(f.read())
    used = {}
    for meta_graph in proto.meta_graphs:
        graph = meta_graph.graph_def
        functions = {fn.signature.name for fn in graph.library.function}
        nodes = [("graph", node) for node in graph.node]
        nodes += [(fn.signature.name, node)
                  for fn in graph.library.function for node in fn.node_def]
        for where, node in nodes:
            if node.op in functions:
                continue  # A call of a library function, audited on its own.
            used.setdefault(node.op, set()).add(where)
    return {op: sorted(where) for op, where in used.items()}


def audit_saved_model(export_dir, extra_allowed=()):
    """Raises `OpAuditError` naming each op of the SavedModel that stock TF Serving lacks
    (and the functions that use it); returns the set of ops used otherwise."""
    used = saved_model_ops(export_dir)
    allowed = allowed_ops(extra_allowed)
    bad = {op: where for op, where in used.items() if op not in allowed}
    if bad:
        lines = [f"  {op} (in {', '.join(where[:3])}{' ...' if len(where) > 3 else ''})"
                 for op, where in sorted(bad.items())]
        raise OpAuditError(
            f"SavedModel {export_dir} uses ops that stock TF Serving does not register:\n"
            + "\n".join(lines)
            + "\nServing it would fail with \"Op type not registered\". Replace them with core "
            "TF ops, or pass them as extra_allowed ops if your server links them.", bad)
    return set(used)
