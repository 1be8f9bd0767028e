"""Writes tests/data/reranker/model.onnx: a tiny, deterministic stand-in for an exported cross-encoder, so that the
reranking stage's ONNX path (pairs tokenized together, batches, the session run, the sort) is tested for real.

It takes what a BERT cross-encoder takes (``input_ids``, ``attention_mask``, ``token_type_ids``, int64 [batch,
tokens]) and returns ``logits`` [batch, 1]: how many of the text's tokens (type 1) also occur in the query (type
0), token ids bucketed modulo 512, less 0.001 per text token (shorter wins a tie). Any BERT tokenizer fits it (the
tests pair it with the embedding model's tokenizer.json). Needs the ``onnx`` package (the export virtualenv has it):

    .build/export-venv/bin/python scripts/make_test_reranker.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BUCKETS = 512
OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "reranker" / "model.onnx"


def build() -> onnx.ModelProto:
    def const(name: str, value: np.ndarray) -> onnx.TensorProto:
        return numpy_helper.from_array(value, name)

    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
    initializers = [
        const("buckets", np.array(BUCKETS, dtype=np.int64)),
        const("depth", np.array([BUCKETS], dtype=np.int64)),
        const("onoff", np.array([0.0, 1.0], dtype=np.float32)),
        const("one", np.array(1.0, dtype=np.float32)),
        const("penalty", np.array(0.001, dtype=np.float32)),
        const("axis1", np.array([1], dtype=np.int64)),
        const("axis2", np.array([2], dtype=np.int64)),
    ]
    nodes = [
        helper.make_node("Mod", ["input_ids", "buckets"], ["bucket"]),
        helper.make_node("OneHot", ["bucket", "depth", "onoff"], ["onehot"], axis=-1),
        helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["token_type_ids"], ["typef"], to=TensorProto.FLOAT),
        helper.make_node("Sub", ["one", "typef"], ["not_type"]),
        helper.make_node("Mul", ["not_type", "maskf"], ["query_mask"]),
        helper.make_node("Mul", ["typef", "maskf"], ["text_mask"]),
        helper.make_node("Unsqueeze", ["query_mask", "axis2"], ["query_mask3"]),
        helper.make_node("Unsqueeze", ["text_mask", "axis2"], ["text_mask3"]),
        helper.make_node("Mul", ["onehot", "query_mask3"], ["query_hot"]),
        helper.make_node("Mul", ["onehot", "text_mask3"], ["text_hot"]),
        helper.make_node("ReduceMax", ["query_hot"], ["query_bag"], axes=[1], keepdims=0),
        helper.make_node("ReduceSum", ["text_hot", "axis1"], ["text_count"], keepdims=0),
        helper.make_node("Mul", ["query_bag", "text_count"], ["shared"]),
        helper.make_node("ReduceSum", ["shared", "axis1"], ["overlap"], keepdims=1),
        helper.make_node("ReduceSum", ["text_mask", "axis1"], ["text_len"], keepdims=1),
        helper.make_node("Mul", ["text_len", "penalty"], ["length_cost"]),
        helper.make_node("Sub", ["overlap", "length_cost"], ["logits"]),
    ]
    graph = helper.make_graph(nodes, "word_overlap_cross_encoder", inputs, [output], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="docsbot-tests")
    model.ir_version = 8  # what onnxruntime 1.14 and later read
    onnx.checker.check_model(model, full_check=True)
    return model


if __name__ == "__main__":
    OUT.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(build(), str(OUT))
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")
