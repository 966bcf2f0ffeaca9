"""Build the all-MiniLM-L6-v2 sentence-embedding graph as ONNX, straight from safetensors.

Why build the graph by hand instead of exporting it: exporting needs torch (not allowed here,
and a 700 MB dependency for a 90 MB model), and the hub's pre-exported ONNX files cannot be
downloaded at run time. BERT is small enough to spell out op by op with ``onnx.helper``.

Graph contract::

    input_ids      int64 [batch, seq]
    attention_mask int64 [batch, seq]   (1 = token, 0 = padding)
    ->  embeddings float32 [batch, 384]  (mean-pooled over the mask, L2-normalised)

Choices, each for speed on a small CPU and each checked against
:mod:`trimem.providers.minilm_numpy` (the op-for-op reference):

* Pooling and normalisation live inside the graph, so one ``session.run`` gives final rows.
* Token-type embedding row 0 is folded into the position table (sentence-transformers only
  ever uses segment 0): one Add fewer per call.
* Q, K and V share one (384 x 1152) MatMul; the 1/sqrt(head_dim) score scale is folded into
  the query weights and bias.
* ``fused=False`` (the default) emits only standard ONNX ops (opset 18); onnxruntime's own
  optimiser (``ORT_ENABLE_ALL``) folds the erf GELU and its bias add into ``BiasGelu``.
  ``fused=True`` instead emits onnxruntime's ``com.microsoft`` contrib ops (``Attention``,
  ``SkipLayerNormalization``, ``BiasGelu``, ``EmbedLayerNormalization``). Measured on the
  2-core target with short turns it was 5-15 % *slower* (not investigated further: the
  time goes to the big MatMuls either way), so it is kept only for comparison in the
  benchmark; both graphs agree with the numpy reference to ~1e-7.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .minilm_numpy import BertConfig

#: Bump when the emitted graph changes: it is part of the on-disk cache key.
GRAPH_VERSION = "minilm-onnx-3"
OPSET = 18
MS_DOMAIN = "com.microsoft"


class _Graph:
    """Tiny helper that accumulates nodes/initialisers and hands out unique tensor names."""

    def __init__(self) -> None:
        import onnx.helper  # noqa: F401  (fail early if onnx is missing)

        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._n = 0

    def const(self, name: str, arr: np.ndarray) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def op(self, op_type: str, inputs: list[str], n_out: int = 1, **attrs: Any) -> Any:
        from onnx import helper

        domain = attrs.pop("domain", "")
        self._n += 1
        outs = [f"{op_type.lower()}_{self._n}_{i}" for i in range(n_out)]
        self.nodes.append(
            helper.make_node(op_type, inputs, outs, name=f"{op_type}_{self._n}", domain=domain,
                             **attrs)
        )
        return outs[0] if n_out == 1 else outs


def build_model(weights: dict[str, np.ndarray], config: BertConfig | None = None,
                fused: bool = False) -> Any:
    """Return an ``onnx.ModelProto`` computing normalised sentence embeddings."""
    from onnx import TensorProto, helper

    cfg = config or BertConfig()
    w = {k: np.asarray(v, dtype=np.float32) for k, v in weights.items() if v.dtype != np.int64}
    g = _Graph()
    h, scale = cfg.hidden, 1.0 / math.sqrt(cfg.head_dim)

    def lin(prefix: str) -> tuple[np.ndarray, np.ndarray]:
        return w[prefix + ".weight"].T.copy(), w[prefix + ".bias"]

    # --- embeddings -----------------------------------------------------------------------
    pos = (w["embeddings.position_embeddings.weight"]
           + w["embeddings.token_type_embeddings.weight"][0])
    ln_g, ln_b = w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"]
    mask_f = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    if fused:
        ids32 = g.op("Cast", ["input_ids"], to=TensorProto.INT32)
        # The contrib schema always declares a second output (mask_index); we ignore it.
        x, _ = g.op("EmbedLayerNormalization",
                    [ids32, "", g.const("word_emb", w["embeddings.word_embeddings.weight"]),
                     g.const("pos_emb", pos), "", g.const("emb_ln_g", ln_g),
                     g.const("emb_ln_b", ln_b)],
                    n_out=2, domain=MS_DOMAIN, epsilon=cfg.eps)
        mask32 = g.op("Cast", ["attention_mask"], to=TensorProto.INT32)
    else:
        word = g.op("Gather", [g.const("word_emb", w["embeddings.word_embeddings.weight"]),
                               "input_ids"])
        seq = g.op("Slice", [g.op("Shape", ["input_ids"]), g.const("i1", np.array([1])),
                             g.const("i2", np.array([2]))])
        pos_s = g.op("Slice", [g.const("pos_emb", pos), g.const("i0", np.array([0])), seq,
                               g.const("i0b", np.array([0]))])
        x = g.op("LayerNormalization", [g.op("Add", [word, pos_s]), g.const("emb_ln_g", ln_g),
                                        g.const("emb_ln_b", ln_b)], axis=-1, epsilon=cfg.eps)
        # Additive attention bias [B,1,1,S]: 0 on tokens, -1e9 on padding (exp() gives 0).
        neg = g.op("Mul", [g.op("Sub", [mask_f, g.const("one", np.array(1, np.float32))]),
                           g.const("big", np.array(1e9, np.float32))])
        attn_bias = g.op("Unsqueeze", [neg, g.const("ax12", np.array([1, 2]))])
        split_sizes = g.const("qkv_split", np.array([h, h, h]))
        head_shape = g.const("head_shape", np.array([0, 0, cfg.heads, cfg.head_dim]))
        merge_shape = g.const("merge_shape", np.array([0, 0, h]))

    # --- encoder layers -------------------------------------------------------------------
    for i in range(cfg.layers):
        p = f"encoder.layer.{i}."
        wq, bq = lin(p + "attention.self.query")
        wk, bk = lin(p + "attention.self.key")
        wv, bv = lin(p + "attention.self.value")
        wo, bo = lin(p + "attention.output.dense")
        wi, bi = lin(p + "intermediate.dense")
        wo2, bo2 = lin(p + "output.dense")
        ln1 = (g.const(f"l{i}_ln1_g", w[p + "attention.output.LayerNorm.weight"]),
               g.const(f"l{i}_ln1_b", w[p + "attention.output.LayerNorm.bias"]))
        ln2 = (g.const(f"l{i}_ln2_g", w[p + "output.LayerNorm.weight"]),
               g.const(f"l{i}_ln2_b", w[p + "output.LayerNorm.bias"]))
        if fused:
            qkv_w = g.const(f"l{i}_qkv_w", np.concatenate([wq, wk, wv], axis=1))
            qkv_b = g.const(f"l{i}_qkv_b", np.concatenate([bq, bk, bv]))
            ctx = g.op("Attention", [x, qkv_w, qkv_b, mask32], domain=MS_DOMAIN,
                       num_heads=cfg.heads)
            a = g.op("MatMul", [ctx, g.const(f"l{i}_o_w", wo)])
            x = g.op("SkipLayerNormalization", [a, x, *ln1, g.const(f"l{i}_o_b", bo)],
                     domain=MS_DOMAIN, epsilon=cfg.eps)
            f = g.op("BiasGelu", [g.op("MatMul", [x, g.const(f"l{i}_i_w", wi)]),
                                  g.const(f"l{i}_i_b", bi)], domain=MS_DOMAIN)
            f = g.op("MatMul", [f, g.const(f"l{i}_o2_w", wo2)])
            x = g.op("SkipLayerNormalization", [f, x, *ln2, g.const(f"l{i}_o2_b", bo2)],
                     domain=MS_DOMAIN, epsilon=cfg.eps)
            continue
        qkv_w = g.const(f"l{i}_qkv_w", np.concatenate([wq * scale, wk, wv], axis=1))
        qkv_b = g.const(f"l{i}_qkv_b", np.concatenate([bq * scale, bk, bv]))
        qkv = g.op("Add", [g.op("MatMul", [x, qkv_w]), qkv_b])
        q, k, v = g.op("Split", [qkv, split_sizes], n_out=3, axis=-1)
        q = g.op("Transpose", [g.op("Reshape", [q, head_shape])], perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [k, head_shape])], perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [v, head_shape])], perm=[0, 2, 1, 3])
        probs = g.op("Softmax", [g.op("Add", [g.op("MatMul", [q, k]), attn_bias])], axis=-1)
        ctx = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        ctx = g.op("Reshape", [ctx, merge_shape])
        a = g.op("Add", [g.op("MatMul", [ctx, g.const(f"l{i}_o_w", wo)]),
                         g.const(f"l{i}_o_b", bo)])
        x = g.op("LayerNormalization", [g.op("Add", [a, x]), *ln1], axis=-1, epsilon=cfg.eps)
        f = g.op("Add", [g.op("MatMul", [x, g.const(f"l{i}_i_w", wi)]), g.const(f"l{i}_i_b", bi)])
        f = g.op("Mul", [g.op("Mul", [f, g.const(f"l{i}_half", np.array(0.5, np.float32))]),
                         g.op("Add", [g.op("Erf", [g.op("Div", [
                             f, g.const(f"l{i}_sqrt2", np.array(math.sqrt(2), np.float32))])]),
                             g.const(f"l{i}_one", np.array(1, np.float32))])])
        f = g.op("Add", [g.op("MatMul", [f, g.const(f"l{i}_o2_w", wo2)]),
                         g.const(f"l{i}_o2_b", bo2)])
        x = g.op("LayerNormalization", [g.op("Add", [f, x]), *ln2], axis=-1, epsilon=cfg.eps)

    # --- mean pooling + L2 normalisation (sentence-transformers' epsilons) ------------------
    m = g.op("Unsqueeze", [mask_f, g.const("ax2", np.array([2]))])
    ax1 = g.const("ax1", np.array([1]))
    summed = g.op("ReduceSum", [g.op("Mul", [x, m]), ax1], keepdims=0)
    count = g.op("Max", [g.op("ReduceSum", [m, ax1], keepdims=0),
                         g.const("eps_count", np.array(1e-9, np.float32))])
    pooled = g.op("Div", [summed, count])
    norm = g.op("Max", [g.op("ReduceL2", [pooled, g.const("axm1", np.array([-1]))], keepdims=1),
                        g.const("eps_norm", np.array(1e-12, np.float32))])
    g.nodes.append(helper.make_node("Div", [pooled, norm], ["embeddings"], name="normalise"))

    graph = helper.make_graph(
        g.nodes, "all-MiniLM-L6-v2",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", h])],
        initializer=g.inits,
    )
    opsets = [helper.make_opsetid("", OPSET)]
    if fused:
        opsets.append(helper.make_opsetid(MS_DOMAIN, 1))
    model = helper.make_model(graph, opset_imports=opsets, producer_name="trimem")
    model.ir_version = 8  # readable by every onnxruntime >= 1.14
    return model
