"""ONNX export: the graph's interface (read with onnx), parity with PyTorch under onnxruntime, the CLI."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sentcl.cli import main
from sentcl.interop.onnx import ONNX_CONFIG, ONNX_MODEL, OnnxEncoder, export_onnx, int8_setting
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.modeling.pooling import POOLERS, pooler_spec
from sentcl.training.provenance import cpu_flags, cpu_model

SENTENCES = [
    "a man is playing a guitar",
    "the dog runs near the river under the old tree in the morning with a child",
    "stock price falls",
    "a",
    "",
]
# every pooler (but PromptBERT's mask: its template is not exported, tests/modeling/test_prompt.py), and [CLS]
# whose MLP head is used in training only
CASES = [(p, False) for p in POOLERS if not pooler_spec(p).prompt] + [("cls", True)]


@pytest.mark.parametrize(("pooler", "mlp_only_train"), CASES)
def test_fp32_parity_every_pooler(tiny_bert: Path, tmp_path: Path, pooler: str, mlp_only_train: bool) -> None:
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler=pooler, mlp_only_train=mlp_only_train)
    out = export_onnx(model, tmp_path / "onnx")
    expected = model.encode(SENTENCES, batch_size=2)
    got = OnnxEncoder(out).encode(SENTENCES, batch_size=2)  # batches of unequal padded length
    assert got.shape == expected.shape == (len(SENTENCES), 32)
    np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0)


def test_graph_interface_and_metadata(tiny_bert: Path, tmp_path: Path) -> None:
    out = export_onnx(str(tiny_bert), tmp_path / "onnx", pooler="avg")
    graph = onnx.load(str(out / ONNX_MODEL)).graph
    assert [i.name for i in graph.input] == ["input_ids", "attention_mask"]
    assert [o.name for o in graph.output] == ["sentence_embedding"]
    for tensor in graph.input:  # dynamic batch and sequence axes: symbolic names, not fixed sizes
        dims = tensor.type.tensor_type.shape.dim
        assert [d.dim_param for d in dims] == ["batch", "sequence"]
    meta = json.loads((out / ONNX_CONFIG).read_text(encoding="utf-8"))
    assert (meta["pooler"], meta["dim"], meta["max_length"], meta["normalize"]) == ("avg", 32, 64, False)
    assert (out / "tokenizer.json").is_file() or (out / "vocab.txt").is_file()


@pytest.fixture(scope="module")
def minilm_int8(tmp_path_factory: pytest.TempPathFactory) -> tuple[SentenceEncoder, Path]:
    """all-MiniLM-L6-v2 (a model sentcl did not save) and its int8 export."""
    model = SentenceEncoder.from_pretrained("all-MiniLM-L6-v2", pooler="avg")
    return model, export_onnx(model, tmp_path_factory.mktemp("minilm") / "int8", int8=True)


def raw_session_rows(folder: Path, sentences: list[str]) -> np.ndarray:
    """onnxruntime's own session of the exported graph (not sentcl's encoder), unit rows (N, D)."""
    import onnxruntime as ort
    from transformers import AutoTokenizer

    batch = AutoTokenizer.from_pretrained(str(folder))(sentences, padding=True, return_tensors="np")
    session = ort.InferenceSession(str(folder / ONNX_MODEL), providers=["CPUExecutionProvider"])
    (rows,) = session.run(None, {i.name: batch[i.name].astype(np.int64) for i in session.get_inputs()})
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)  # (N, D)


def test_minilm_parity_and_int8(
    tmp_path: Path, minilm_int8: tuple[SentenceEncoder, Path], record_property: Callable[[str, object], None]
) -> None:
    """The bound holds on the CPU the test runs on, whichever kernel the export chose for it (int8_setting);
    the CPU's flags are recorded with the result (junit property ``int8_setting``)."""
    model, int8_folder = minilm_int8
    setting = json.loads((int8_folder / ONNX_CONFIG).read_text())["int8"]
    record_property("int8_setting", json.dumps({**setting, "cpu": cpu_model(), "flags": cpu_flags()}))
    assert setting == int8_setting()
    sentences = [
        "A man plays guitar.",
        "Someone is playing music on a big stage tonight.",
        "The market fell.",
    ]
    expected = model.encode(sentences)
    np.testing.assert_allclose(
        OnnxEncoder(export_onnx(model, tmp_path / "fp32")).encode(sentences), expected, atol=1e-4, rtol=0
    )
    int8 = OnnxEncoder(int8_folder).encode(sentences, normalize=True)
    ref = expected / np.linalg.norm(expected, axis=1, keepdims=True)
    assert (int8 * ref).sum(axis=1).min() >= 0.99  # the bound the int8 export keeps per sentence
    assert json.loads((int8_folder / ONNX_CONFIG).read_text())["quantization"] == "int8-dynamic"


def test_int8_quantises_the_unfused_graph(minilm_int8: tuple[SentenceEncoder, Path]) -> None:
    """The int8 graph is the unfused trace quantised (bench.onnx_int8 measured it faster than the fused one):
    every weight MatMul of the six layers is a MatMulInteger, no QAttention."""
    ops = [node.op_type for node in onnx.load(str(minilm_int8[1] / ONNX_MODEL)).graph.node]
    assert "QAttention" not in ops and "Attention" not in ops
    ffn_output = int8_setting()["ffn_output"] == "int8"  # without VNNI the feed-forward output stays fp32
    assert ops.count("MatMulInteger") == 6 * (5 + ffn_output)  # Q, K, V, output, two feed-forward, per layer
    assert "MatMul" in ops  # the attention's own products stay in fp32


@pytest.mark.parametrize(
    ("flags", "kernel", "ffn_output"),
    [
        (["avx2", "fma"], "u8u8", "fp32"),  # AMD EPYC (Zen 2/3): AVX2, no VNNI
        (["avx2", "avx512f", "avx512_vnni"], "u8s8", "int8"),  # Intel Xeon (Cascade Lake and later)
        (["avx2", "avx_vnni"], "u8s8", "int8"),  # Alder Lake and later
        ([], "u8u8", "fp32"),  # no flags known (not Linux): the choice that saturates nowhere
    ],
)
def test_int8_setting_by_cpu_flags(flags: list[str], kernel: str, ffn_output: str) -> None:
    setting = int8_setting(flags)
    assert (setting["kernel"], setting["ffn_output"]) == (kernel, ffn_output)
    assert setting["weights"] == {"u8u8": "quint8", "u8s8": "qint8"}[kernel]


WORDS = ["the", "a", "man", "dog", "plays", "guitar", "river", "market", "fell", "runs", "quickly", "music"]


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=30), min_size=1, max_size=6))
def test_int8_vectors_stay_within_the_bound(
    minilm_int8: tuple[SentenceEncoder, Path], words: list[list[str]]
) -> None:
    """Generated word sequences: onnxruntime's own session of the int8 export against PyTorch, cosine >= 0.95
    per sentence. Real sentences keep 0.99 (above; the least of 1,000 STS-B test sentences is 0.996 for the
    3-layer student in bench/results/onnx_int8_variants.json). Batches of short stop-word strings are the worst
    case, because dynamic quantisation sets the activations' scale per batch: ["the a the", "man"] gives 0.966
    (0.968 with the fused graph quantised instead; 0.983 for the same sentences encoded one at a time)."""
    model, folder = minilm_int8
    sentences = [" ".join(w) for w in words]
    want = model.encode(sentences)
    want = want / np.linalg.norm(want, axis=1, keepdims=True)  # (N, D)
    got = raw_session_rows(folder, sentences)
    assert float((got * want).sum(axis=1).min()) >= 0.95


def test_cli_export_then_encode_eval_search(
    tiny_bert: Path, tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "onnx"
    assert main(["export", "--format", "onnx", str(tiny_bert), str(out), "--pooler", "avg"]) == 0
    text = tmp_path / "in.txt"
    text.write_text("\n".join(SENTENCES[:4]) + "\n", encoding="utf-8")
    for backend, model in (("onnx", out), ("torch", tiny_bert)):
        args = ["encode", "--model", str(model), "--backend", backend, "--pooler", "avg"]
        assert main([*args, "--input", str(text), "--output", str(tmp_path / f"{backend}.npy")]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "onnx.npy"), np.load(tmp_path / "torch.npy"), atol=1e-4)

    scores = {}
    for backend, model in (("onnx", out), ("torch", tiny_bert)):
        res = tmp_path / f"{backend}.json"
        args = ["eval", "--model", str(model), "--backend", backend, "--pooler", "avg", "--tasks", "stsb_dev"]
        assert main([*args, "--data-dir", str(data_dir), "--output", str(res)]) == 0
        scores[backend] = json.loads(res.read_text())["stsb_dev"]["STSBenchmark"]["spearman"]
    assert scores["onnx"] == pytest.approx(scores["torch"], abs=0.01)

    hits = {}
    for backend, model in (("onnx", out), ("torch", tiny_bert)):
        capsys.readouterr()
        args = ["search", "--model", str(model), "--corpus", str(text), "--query", "a guitar", "-k", "4"]
        assert main([*args, "--pooler", "avg", "--json", "--backend", backend]) == 0
        hits[backend] = json.loads(capsys.readouterr().out)[0]["hits"]
    assert [h["line"] for h in hits["onnx"]] == [h["line"] for h in hits["torch"]]
    np.testing.assert_allclose(
        [h["score"] for h in hits["onnx"]], [h["score"] for h in hits["torch"]], atol=1e-4
    )


def test_backend_onnx_refuses_a_pytorch_folder(
    tiny_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = tmp_path / "in.txt"
    text.write_text("a b\n", encoding="utf-8")
    args = ["encode", "--model", str(tiny_bert), "--backend", "onnx", "--input", str(text)]
    assert main([*args, "--output", str(tmp_path / "x.npy")]) == 2
    err = capsys.readouterr().err
    assert "not an exported ONNX folder" in err and "sentcl export --format onnx" in err
    assert not (tmp_path / "x.npy").exists()
