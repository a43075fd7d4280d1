"""Under a real two-process ``torchrun`` (gloo on CPU): a run trained by 2 processes, resumed by 1,
is refused before any step (the global batch, and so the in-batch negatives, would halve), naming the number
of processes to resume with; resumed by 2 it continues. The check itself is tested in test_integrity.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers.data import tiny_recipe, write_corpus, write_small_sts


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(processes: int, *argv: str) -> list[str]:
    return [
        sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={processes}",
        "--master_addr=127.0.0.1", f"--master_port={free_port()}", "-m", "sentcl.cli", *argv,
    ]  # fmt: skip


@pytest.mark.slow
def test_a_two_process_run_resumed_by_one_process_is_refused_di_resume_ws1(
    tmp_path: Path, tiny_bert: Path
) -> None:
    corpus = write_corpus(tmp_path / "c.txt", 40)
    out = tmp_path / "run"
    recipe = tiny_recipe(tiny_bert, write_small_sts(tmp_path / "d"), corpus, out, max_steps=2, save_steps=2)
    recipe["training"].update(eval_steps=0, batch_size=4, device="cpu")
    recipe["eval"]["final_tasks"] = []
    config = tmp_path / "r.yaml"
    config.write_text(yaml.safe_dump(recipe), encoding="utf-8")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}

    def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)

    first = run(torchrun(2, "train", "--config", str(config)))
    assert first.returncode == 0, first.stderr[-3000:]
    assert (out / "checkpoint-2").is_dir()
    data = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r.get("world_size") for r in data if r["event"] == "data"] == [2]  # what the run recorded
    before = sorted(p.name for p in out.iterdir())
    more = ["--set", "training.max_steps=4", "--resume"]
    alone = run([sys.executable, "-m", "sentcl.cli", "train", "--config", str(config), *more])
    assert alone.returncode == 2, alone.stderr[-3000:]
    lines = [line for line in alone.stderr.splitlines() if ": error: " in line]
    assert len(lines) == 1 and "Traceback" not in alone.stderr, alone.stderr[-3000:]
    assert "the run was trained with 2 (global batch 8), this resume has 1 (global batch 4)" in lines[0]
    assert "--nproc-per-node 2" in lines[0]
    assert sorted(p.name for p in out.iterdir()) == before  # refused before any step
    again = run(torchrun(2, "train", "--config", str(config), *more))
    assert again.returncode == 0, again.stderr[-3000:]
    assert (out / "checkpoint-4").is_dir()
