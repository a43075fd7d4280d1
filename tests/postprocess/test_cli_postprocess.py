"""``sentcl postprocess``: the saved folder gives the whitening formula (numpy, in the test) of the start
model's vectors through ``sentcl encode``; user errors are one line naming the problem; nothing overwritten."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.data import write_corpus

from sentcl.cli import main
from sentcl.modeling import SentenceEncoder


def test_whitening_command_and_encode(tiny_bert: Path, tmp_path: Path) -> None:
    fit = write_corpus(tmp_path / "fit.txt", 100, seed=5)
    out = tmp_path / "white"
    argv = ["postprocess", "whitening", "--model", str(tiny_bert), "--pooler", "avg"]
    assert main([*argv, "--fit-file", str(fit), "--output", str(out), "--dim", "8"]) == 0
    lines = fit.read_text().splitlines()
    assert (
        main(["encode", "--model", str(out), "--input", str(fit), "--output", str(tmp_path / "e.npy")]) == 0
    )
    ours = np.load(tmp_path / "e.npy").astype(np.float64)

    x = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg").encode(lines).astype(np.float64)
    mu = x.mean(axis=0)
    lam, u = np.linalg.eigh(np.cov(x, rowvar=False))
    ref = ((x - mu) @ u[:, ::-1] / np.sqrt(lam[::-1]))[:, :8]
    signs = np.sign((ours * ref).sum(axis=0))
    np.testing.assert_allclose(ours, ref * signs, atol=2e-3)


def test_user_errors(tiny_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fit = write_corpus(tmp_path / "fit.txt", 20)
    out = tmp_path / "existing"
    out.mkdir()
    base = ["postprocess", "flow", "--model", str(tiny_bert), "--pooler", "avg", "--fit-file"]
    assert main([*base, str(fit), "--output", str(out)]) == 2
    assert "already exists; give a new folder (a model is never overwritten)" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("sent0,sent1\nok,fine\nonly one field\n", encoding="utf-8")
    assert main([*base, str(bad), "--output", str(tmp_path / "new")]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:3: 1 fields, the header has 2" in err and "Traceback" not in err
    assert main([*base, str(tmp_path / "nope.txt"), "--output", str(tmp_path / "new")]) == 2
    assert "nope.txt does not exist" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
