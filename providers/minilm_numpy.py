"""Pure-numpy forward pass of all-MiniLM-L6-v2 (BERT encoder + mean pooling + L2 norm).

Two jobs:

* **Fallback runtime.** If ``onnx`` or ``onnxruntime`` cannot be imported or refuse the graph
  (an exotic platform, a broken wheel), :class:`trimem.providers.local.LocalEmbedder` still
  works through this module, only slower (roughly 2-4x: numpy dispatches one BLAS call per op
  and cannot fuse the element-wise work).
* **Correctness reference.** It is written to read like the Hugging Face ``BertModel`` code,
  op for op, so the hand-built ONNX graph in :mod:`trimem.providers.minilm_onnx` can be checked
  against it (tests require max abs difference < 1e-4).

Only what this checkpoint uses is implemented: absolute position embeddings, token type 0
everywhere (sentence-transformers never passes a second segment), exact erf GELU, post-LN.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: sentence-transformers' ``max_seq_length`` for this model (sentence_bert_config.json);
#: BERT itself would take 512, but the model was trained on <=128 and evaluated at 256.
MAX_SEQ_LEN = 256


@dataclass(frozen=True)
class BertConfig:
    """The few hyper-parameters the forward pass needs (read from the bundled config.json)."""

    hidden: int = 384
    layers: int = 6
    heads: int = 12
    intermediate: int = 1536
    eps: float = 1e-12
    vocab: int = 30522

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @classmethod
    def from_dir(cls, model_dir: Path) -> BertConfig:
        raw = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        if raw.get("hidden_act", "gelu") != "gelu" or raw.get(
            "position_embedding_type", "absolute"
        ) != "absolute":
            raise ValueError("unsupported BERT variant: need exact GELU and absolute positions")
        return cls(
            hidden=raw["hidden_size"],
            layers=raw["num_hidden_layers"],
            heads=raw["num_attention_heads"],
            intermediate=raw["intermediate_size"],
            eps=float(raw.get("layer_norm_eps", 1e-12)),
            vocab=raw["vocab_size"],
        )


def load_weights(path: Path) -> dict[str, np.ndarray]:
    """Read ``model.safetensors`` into float32 numpy arrays (no torch involved)."""
    from safetensors.numpy import load_file

    return load_file(str(path))


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU, ``0.5 x (1 + erf(x / sqrt 2))``, as in HF's ``ACT2FN["gelu"]``.

    numpy has no vectorised erf (and scipy is not a dependency), hence :func:`_erf`.
    """
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _erf(x: np.ndarray) -> np.ndarray:
    """Vectorised erf with max abs error ~1.2e-7 (Numerical Recipes ``erfcc``, Chebyshev fit).

    Computed in float64 and cast back, which keeps the reference well inside the 1e-4
    agreement budget with onnxruntime's own Erf kernel.
    """
    z = np.abs(x.astype(np.float64))
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (
        1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (
            0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))
        )))
    )
    erfc = t * np.exp(poly)
    out = np.where(x >= 0, 1.0 - erfc, erfc - 1.0)
    return out.astype(x.dtype)


class MiniLMNumpy:
    """The full sentence-embedding forward pass over already-tokenised, padded batches."""

    def __init__(self, weights: dict[str, np.ndarray], config: BertConfig | None = None):
        self.cfg = config or BertConfig()
        self.w = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in weights.items()}
        # Pre-transpose every Linear weight once: HF stores (out, in), we multiply x @ W^T.
        for k in list(self.w):
            if k.startswith("encoder.") and k.endswith(".weight") and self.w[k].ndim == 2:
                self.w[k] = np.ascontiguousarray(self.w[k].T)

    def _linear(self, x: np.ndarray, prefix: str) -> np.ndarray:
        # Flatten (batch, seq) first: one big GEMM instead of numpy's per-row loop of small
        # ones (each a thread fork/join in OpenBLAS, ruinous when the cores are busy).
        w = self.w[prefix + ".weight"]
        y = x.reshape(-1, x.shape[-1]) @ w + self.w[prefix + ".bias"]
        return y.reshape(*x.shape[:-1], w.shape[1])

    def hidden_states(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """Last hidden layer, shape (batch, seq, hidden)."""
        cfg, w = self.cfg, self.w
        b, s = input_ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][input_ids]
            + w["embeddings.position_embeddings.weight"][:s][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(
            x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], cfg.eps
        )
        # Additive mask: 0 where attended, very negative on padding (HF uses finfo.min; any
        # large negative gives exp() == 0 in float32).
        bias = (1.0 - attention_mask[:, None, None, :].astype(np.float32)) * -1e9
        scale = 1.0 / math.sqrt(cfg.head_dim)
        for i in range(cfg.layers):
            p = f"encoder.layer.{i}."

            def heads(t: np.ndarray) -> np.ndarray:
                return t.reshape(b, s, cfg.heads, cfg.head_dim).transpose(0, 2, 1, 3)

            q = heads(self._linear(x, p + "attention.self.query"))
            k = heads(self._linear(x, p + "attention.self.key"))
            v = heads(self._linear(x, p + "attention.self.value"))
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            scores = scores - scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, cfg.hidden)
            attn = self._linear(ctx, p + "attention.output.dense")
            x = _layer_norm(
                attn + x,
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
                cfg.eps,
            )
            ff = _gelu(self._linear(x, p + "intermediate.dense"))
            ff = self._linear(ff, p + "output.dense")
            x = _layer_norm(
                ff + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], cfg.eps
            )
        return x

    def __call__(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """Sentence embeddings, shape (batch, hidden), float32, rows L2-normalised."""
        h = self.hidden_states(input_ids, attention_mask)
        return mean_pool_normalise(h, attention_mask)


def mean_pool_normalise(hidden: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """sentence-transformers ``Pooling(mean)`` then ``Normalize``, with the same epsilons."""
    m = attention_mask.astype(np.float32)[:, :, None]
    pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
    norm = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norm, 1e-12, None)).astype(np.float32)
