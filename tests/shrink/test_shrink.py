"""``sentcl shrink`` on the tiny random BERT: the plan, a whole run killed and run again, the chosen model against
an independent encode of its folder, a budget no candidate meets, and bad inputs (one line, nothing lost).

The teacher is a sentence-transformers folder (mean pooling, Normalize) that sentence-transformers itself saved
over the tiny BERT, and a plain Hugging Face folder; neither was written by sentcl."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from modeling.modeling_folders import st_folder
from transformers import AutoModel, AutoTokenizer

from sentcl.cli import main
from sentcl.modeling.open import open_model
from sentcl.shrink.layer_choice import layer_subsets
from sentcl.shrink.plan import (
    PLAN_MARGIN,
    Target,
    TeacherShape,
    every_candidate,
    layer_counts,
    plan_candidates,
)

ROOT = Path(__file__).resolve().parents[2]
SENTENCES = ["a man plays the guitar", "the dog runs near the river", "stock price falls", "a"]
PAIRS = [  # (s1, s2, score): a hand-written STS-style file of the tiny vocabulary
    ("a man plays the guitar", "a man is playing a guitar", 5.0),
    ("a woman rides a horse", "a woman is riding a horse", 4.8),
    ("the dog runs in the garden", "a dog is running in a garden", 4.5),
    ("a child reads", "a child is reading", 4.6),
    ("the cat sits on the mat", "a cat is sitting", 3.5),
    ("a man plays the piano", "a man plays the guitar", 2.5),
    ("the bird eats", "a bird is eating", 4.2),
    ("the team wins the game", "the team wins", 3.8),
    ("stock price rises", "stock price falls", 1.5),
    ("a man walks on the road", "a car is on the road", 1.2),
    ("the old house", "a young child", 0.2),
    ("the bank said the market falls", "a dog sits under a tree", 0.0),
    ("a red car", "a blue car", 2.2),
    ("the news report", "the music song", 0.4),
    ("a happy child", "a sad child", 2.0),
    ("the river near the city", "a city near a river", 4.4),
]


def write_pairs(path: Path, rows: list[tuple[str, str, object]]) -> Path:
    lines = ["sentence1\tsentence2\tscore", *(f"{a}\t{b}\t{s}" for a, b, s in rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def small_run(teacher: Path, out: Path, root: Path, *extra: str) -> list[str]:
    """The arguments of a tiny shrink run (a hand-written pairs file, a few steps, one short timing round)."""
    return [
        "shrink", str(teacher), str(out), "--pairs", str(root / "pairs.tsv"),
        "--corpus-sentences", "200", "--layer-steps", "15", "--static-steps", "6", "--batch-size", "16",
        "--choice-texts", "40", "--time-texts", "48", "--rounds", "1", "--min-seconds", "0.02",
        "--teacher-cache", str(root / "cache"), *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def shrunk(tiny_bert: Path, data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A whole run on a sentence-transformers teacher, killed (SIGKILL) during the layer student's
    distillation, then run again to the end; its output folder and the second run's printed lines."""
    root = tmp_path_factory.mktemp("shrink")
    write_pairs(root / "pairs.tsv", PAIRS)
    teacher = st_folder(root / "teacher", tiny_bert, "mean", [], normalize=True)
    out = root / "out"
    argv = small_run(teacher, out, root, "--budget", "3x", "--data-dir", str(data_dir))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "sentcl.cli", *argv], env=env, cwd=root)
    deadline = time.monotonic() + 240
    while not (out / "steps" / "l1-layers.json").is_file():  # the next step is the distillation
        assert proc.poll() is None, "the run ended before the kill"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = sorted(p.name for p in (out / "steps").iterdir())
    return {"root": root, "teacher": teacher, "out": out, "argv": argv, "killed_after": before}


def test_the_plan_keeps_what_can_meet_the_budget() -> None:
    minilm = TeacherShape(
        layers=6, hidden=384, weights=22_700_000, vocab=30522, sentences_per_s=300.0, ffn=1536
    )
    plan = plan_candidates(minilm, Target("speed", 10), ("layers", "int8", "static"))
    assert all(c.estimate >= 10 * PLAN_MARGIN or c.name in {d.source for d in plan} for c in plan)
    narrow = ["l1-ffn384", "l1-ffn384-int8"]  # a layer of 4 x 384^2 + 2 x 384 x 384 weights: half a full one
    assert {"l2-int8", *narrow, "static-256", "static-128", "static-weighted-256"} <= {c.name for c in plan}
    assert [c.estimate for c in plan if c.name in narrow] == [12.0, 24.0]
    six = [c.name for c in plan_candidates(minilm, Target("speed", 6), ("layers", "int8", "static"))]
    statics = ["static-256", "static-128", "static-weighted-256"]
    assert six == ["l3", "l3-int8", "l2", "l2-int8", *narrow, *statics]  # l3: l3-int8's source
    far = plan_candidates(minilm, Target("speed", 1000), ("layers", "int8", "static"))
    assert [c.name for c in far] == ["static-256", "static-128"]  # none expected: the fastest family
    every = plan_candidates(minilm, Target("quality", 0.97), ("layers", "int8", "static"))
    assert len(every) == 10 and every[0].name == "teacher-int8"
    one = TeacherShape(layers=1, hidden=32, weights=1000, vocab=50, sentences_per_s=9.0, ffn=64)
    assert not [c for c in every_candidate(one) if c.family == "layers"]  # nothing to choose from
    assert layer_counts(6) == [3, 2] and layer_counts(2) == [1] and layer_counts(12) == [6, 4]
    assert all(s[-1] == 5 and len(s) == 3 for s in layer_subsets(6, 3)) and len(layer_subsets(6, 3)) == 10
    assert len(layer_subsets(12, 6)) == 12  # C(11, 5) = 462 subsets, 12 spread over them


def test_dry_run_prints_the_plan_and_writes_nothing(
    tiny_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["shrink", str(tiny_bert), str(tmp_path / "out"), "--budget", "3x", "--dry-run"]
    assert main([*argv, "--min-seconds", "0.02", "--time-texts", "32"]) == 0
    out = capsys.readouterr().out
    assert "l1-int8" in out and "static-21" in out and "estimated CPU time" in out and "total:" in out
    assert "dry run: nothing built or written" in out
    assert not (tmp_path / "out").exists()


def test_a_killed_run_resumes_and_loses_nothing(shrunk: dict, capsys: pytest.CaptureFixture[str]) -> None:
    assert "teacher-int8.json" in shrunk["killed_after"] and "l1.json" not in shrunk["killed_after"]
    assert main(shrunk["argv"]) == 0
    printed = capsys.readouterr().out
    for step in ("teacher-int8", "teacher-vectors", "l1-layers"):  # finished before the kill: not redone
        assert f"{step}: done before, reused" in printed
    assert "l1: running" in printed  # killed mid-way: redone
    trained = json.loads((shrunk["out"] / "work" / "l1-run" / "results.json").read_text(encoding="utf-8"))
    assert trained["global_step"] == 15  # the steps asked, past one epoch (12 batches of 16 of 200)
    record = json.loads((shrunk["out"] / "shrink.json").read_text(encoding="utf-8"))
    statics = {"static-21", "static-10", "static-weighted-21"}
    narrow = {"l1-ffn16", "l1-ffn16-int8"}  # the tiny BERT's 64 neurons a layer, a quarter kept
    assert set(record["rows"]) == {"teacher", "teacher-int8", "l1", "l1-int8", *narrow, *statics}
    narrow_folder = AutoModel.from_pretrained(str(shrunk["out"] / "candidates" / "l1-ffn16"))
    assert narrow_folder.config.intermediate_size == 16 and narrow_folder.config.num_hidden_layers == 1
    pareto = json.loads((shrunk["out"] / "pareto.json").read_text(encoding="utf-8"))
    rows = pareto["rows"]
    meeting = [n for n, r in rows.items() if n != "teacher" and r["speed_vs_teacher"] >= 3]
    want = max(meeting, key=lambda n: (rows[n]["kept"], rows[n]["speed_vs_teacher"])) if meeting else None
    assert pareto["chosen"] == (want or pareto["chosen"]) and pareto["met"] == bool(meeting)
    assert record["sentence"] in (shrunk["out"] / "pareto.md").read_text(encoding="utf-8")
    assert (shrunk["out"] / "pareto.png").stat().st_size > 10_000
    assert "sentcl shrink" in (shrunk["out"] / "model" / "README.md").read_text(encoding="utf-8")
    assert main(shrunk["argv"]) == 0  # a third run redoes nothing
    assert "running" not in capsys.readouterr().out


def by_hand(folder: Path, sentences: list[str]) -> np.ndarray:
    """transformers' AutoModel, mean over the attention mask by hand, unit rows (N, D)."""
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModel.from_pretrained(str(folder)).eval()
    batch = tokenizer(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        states = model(**batch).last_hidden_state  # (N, T, H)
    mask = batch["attention_mask"].unsqueeze(-1).float()  # (N, T, 1)
    mean = ((states * mask).sum(dim=1) / mask.sum(dim=1)).numpy()  # (N, H)
    return mean / np.linalg.norm(mean, axis=1, keepdims=True)


def test_the_chosen_layer_student_equals_an_independent_encode(
    shrunk: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the layer family: its steps are reused from the whole run, the choice is a layer student (the
    one-layer student or the narrow one: whichever its measurements favour)."""
    if not (shrunk["out"] / "shrink.json").is_file():
        assert main(shrunk["argv"]) == 0
    assert main([*shrunk["argv"], "--families", "layers"]) == 0
    printed = capsys.readouterr().out
    assert "l1: done before, reused" in printed and "eval-l1: done before, reused" in printed
    model = shrunk["out"] / "model"
    chosen = json.loads((shrunk["out"] / "pareto.json").read_text(encoding="utf-8"))["chosen"]
    assert chosen in ("l1", "l1-ffn16") and "l1-ffn16: done before, reused" in printed
    got = open_model(str(model)).encode(SENTENCES, normalize=True)
    np.testing.assert_allclose(got, by_hand(model, SENTENCES), atol=1e-5)
    assert AutoModel.from_pretrained(str(model)).config.num_hidden_layers == 1


def test_a_budget_no_candidate_meets_names_the_nearest(
    shrunk: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    if not (shrunk["out"] / "shrink.json").is_file():
        assert main(shrunk["argv"]) == 0
    argv = [a if a != "3x" else "100000x" for a in shrunk["argv"]]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert (
        "No candidate reached 100000x the teacher's speed on this machine at 1 thread(s); the nearest is static-"
        in printed
    )
    record = json.loads((shrunk["out"] / "pareto.json").read_text(encoding="utf-8"))
    assert record["met"] is False and record["sentence"] in printed
    width = int(record["chosen"].rsplit("-", 1)[1])  # static-W or static-weighted-W
    assert open_model(str(shrunk["out"] / "model")).encode(SENTENCES).shape == (4, width)


def test_a_plain_hugging_face_teacher_to_a_static_model(
    tiny_bert: Path, tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A plain folder (its own [CLS] pooler), the static family: the chosen model encodes as its files compute
    by hand (the teacher's word pieces without specials, the mean of their rows; for the weighted form, each row
    weighted by 1/T + sum_h g_h mean_i softmax_j(q_hi . k_hj))."""
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    write_pairs(tmp_path / "pairs.tsv", PAIRS)
    argv = small_run(tiny_bert, tmp_path / "out", tmp_path, "--budget", "3x", "--families", "static")
    assert main([*argv, "--data-dir", str(data_dir)]) == 0
    assert "static-" in capsys.readouterr().out
    model = tmp_path / "out" / "model"
    table = load_file(str(model / "model.safetensors"))["embedding.weight"]  # (V, D)
    tokenizer = Tokenizer.from_file(str(model / "tokenizer.json"))
    weighted = model / "attention_weights.safetensors"
    extra = load_file(str(weighted)) if weighted.is_file() else None
    rows = []
    for sentence in SENTENCES:
        ids = tokenizer.encode(sentence, add_special_tokens=False).ids
        w = np.full(len(ids), 1.0 / len(ids))  # (T,)
        if extra is not None:
            heads = len(extra["gain"])
            d = extra["queries"].shape[1] // heads
            for h in range(heads):
                q = extra["queries"][ids, h * d : (h + 1) * d]  # (T, d), the scale folded in
                k = extra["keys"][ids, h * d : (h + 1) * d]  # (T, d)
                scores = np.exp(q @ k.T - (q @ k.T).max(axis=1, keepdims=True))  # (T, T)
                w += extra["gain"][h] * (scores / scores.sum(axis=1, keepdims=True)).mean(axis=0)
        rows.append(w @ table[ids])
    rows = np.stack(rows) / np.linalg.norm(rows, axis=1, keepdims=True)  # (N, D)
    np.testing.assert_allclose(open_model(str(model)).encode(SENTENCES, normalize=True), rows, atol=1e-5)


def test_the_int8_candidates_equal_onnxruntimes_own_session(shrunk: dict) -> None:
    import onnxruntime as ort

    if not (shrunk["out"] / "shrink.json").is_file():
        assert main(shrunk["argv"]) == 0
    for name in (
        "teacher-int8",
        "l1-int8",
        "l1-ffn16-int8",
    ):  # one sentence a pass: dynamic int8 scales a whole batch
        folder = shrunk["out"] / "candidates" / name
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
        session = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
        rows = []
        for sentence in SENTENCES:
            ids = tokenizer([sentence], return_tensors="np")
            rows += session.run(None, {i.name: ids[i.name].astype(np.int64) for i in session.get_inputs()})
        rows = np.concatenate(rows)  # (N, D)
        rows = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        got = open_model(str(folder)).encode(SENTENCES, batch_size=1, normalize=True)
        np.testing.assert_allclose(got, rows, atol=1e-5)


def test_bad_inputs_are_one_line_and_lose_nothing(
    shrunk: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not (shrunk["out"] / "shrink.json").is_file():
        assert main(shrunk["argv"]) == 0
    out = shrunk["out"]
    kept = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}

    bad = write_pairs(tmp_path / "bad.tsv", [*PAIRS[:2], ("a man", "a dog", "high"), *PAIRS[2:]])
    argv = [a if a != str(shrunk["root"] / "pairs.tsv") else str(bad) for a in shrunk["argv"]]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sentcl shrink: error:") and "bad.tsv" in err[0], err

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json", encoding="utf-8")
    argv = [str(broken) if a == str(shrunk["teacher"]) else a for a in shrunk["argv"]]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sentcl shrink: error:") and "broken" in err[0], err

    for budget in ("ten", "0.5x"):  # refused by the option's reader, before anything runs
        with pytest.raises(SystemExit) as exit_:
            main([a if a != "3x" else budget for a in shrunk["argv"]])
        assert exit_.value.code == 2
        assert "argument --budget:" in capsys.readouterr().err.strip().splitlines()[-1]
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == kept  # nothing touched
