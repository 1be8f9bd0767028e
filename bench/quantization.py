"""Which MatMuls of the model to leave in float when quantizing to int8: each choice's vectors against the float
graph's, and its speed.

Runs in the export virtualenv (``.build/export-venv``: onnx, onnxruntime's quantization tools, transformers), not in
docsbot's. Inputs: the unfused float graph (``make model MODEL_VARIANT=onnx-fp32 MODEL_DIR=DIR``), the fused one
docsbot embeds with (``make model``) as the speed yardstick, and a JSON file of texts (``{"chunks": [...],
"queries": [...]}``, e.g. chunks drawn from an index and the questions of ``eval/queries``). For each choice,
onnxruntime's dynamic quantization (int8 weights per output channel, as ``scripts/export_model.py`` quantizes) with
the chosen MatMuls excluded; printed: 1 − cosine of the pooled, normalized vectors to the float graph's (mean and
worst, chunks and queries apart) and the speed against the fused float graph (CPU seconds, one text per call, one
thread, the better of two passes).

    .build/export-venv/bin/python bench/quantization.py --float DIR --fused DIR --texts texts.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import QuantType, quantize_dynamic
from transformers import AutoTokenizer

MAX_TOKENS = 256


def _session(path: str) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def _vectors(session: ort.InferenceSession, tokenizer, texts: list[str]) -> np.ndarray:  # noqa: ANN001
    out = []
    for text in texts:  # one text per call, as docsbot embeds on a CPU
        batch = tokenizer([text], return_tensors="np", truncation=True, max_length=MAX_TOKENS)
        feed = {k: batch[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
        hidden = session.run(None, feed)[0]
        mask = feed["attention_mask"][..., None]
        vector = ((hidden * mask).sum(1) / mask.sum(1))[0]
        out.append(vector / np.linalg.norm(vector))
    return np.array(out)


def _seconds(session: ort.InferenceSession, tokenizer, texts: list[str]) -> float:  # noqa: ANN001
    best = float("inf")
    for _ in range(2):
        start = time.process_time()
        _vectors(session, tokenizer, texts)
        best = min(best, time.process_time() - start)
    return best


def choices(names: list[str]) -> dict[str, list[str]]:
    """The MatMuls each choice leaves in float, by the exported graph's node names."""
    found = {
        "dynamic int8, every MatMul of a weight": [],
        **{f"layer {i} in float": [n for n in names if f"layer.{i}/" in n] for i in range(6)},
        "layers 0 and 1 in float": [n for n in names if "layer.0/" in n or "layer.1/" in n],
        "each layer's FFN output projection in float": [
            n for n in names if n.endswith("/output/dense/MatMul") and "attention" not in n
        ],
        "the attention in float (only the FFN quantized)": [
            n for n in names if "intermediate" not in n and ("/output/dense" not in n or "attention/output" in n)
        ],
    }
    return {label: chosen for label, chosen in found.items() if chosen or label.startswith("dynamic")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--float", dest="float_dir", type=Path, required=True, help="the unfused float model dir")
    parser.add_argument("--fused", type=Path, required=True, help="the fused float model dir (speed yardstick)")
    parser.add_argument("--texts", type=Path, required=True, help='JSON {"chunks": [...], "queries": [...]}')
    parser.add_argument("--chunks", type=int, default=300)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()

    tokenizer = AutoTokenizer.from_pretrained(args.float_dir)
    data = json.loads(args.texts.read_text())
    chunks, queries = data["chunks"][: args.chunks], data["queries"][: args.queries]
    texts = chunks + queries
    source = str(args.float_dir / "model.onnx")
    names = [node.name for node in onnx.load(source).graph.node if node.op_type == "MatMul"]
    reference = _vectors(_session(source), tokenizer, texts)
    timed = texts[:150]
    fused = _seconds(_session(str(args.fused / "model.onnx")), tokenizer, timed)
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, excluded) in enumerate(choices(names).items()):
            path = f"{tmp}/{i}.onnx"
            quantize_dynamic(
                source, path, weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"],
                nodes_to_exclude=excluded,
            )  # fmt: skip
            session = _session(path)
            distance = 1 - (_vectors(session, tokenizer, texts) * reference).sum(1)
            c, q = distance[: len(chunks)], distance[len(chunks) :]
            print(
                f"{label}: {len(excluded)} MatMuls in float; 1 - cosine, chunks mean {c.mean():.4f} worst "
                f"{c.max():.4f}, queries mean {q.mean():.4f} worst {q.max():.4f}; speed "
                f"{fused / _seconds(session, tokenizer, timed):.2f}x the fused float graph",
                flush=True,
            )


if __name__ == "__main__":
    main()
