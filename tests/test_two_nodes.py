"""Training on two nodes: two real ``torchrun`` launches on 127.0.0.1 (``--nnodes 2 --nproc-per-node 2``, a
c10d rendezvous, gloo on CPU) stand for two machines sharing the run folder and the data.

* One training step of the four processes (global batch 8, 2 rows each) gives the loss and the gradients of
  one process on the 8 rows: the negatives are gathered from both nodes (the same step with each process's
  own rows as negatives gives another loss: the check can fail).
* ``sentcl train`` on the two nodes, one node killed mid-run (its agent and processes: the machine is gone),
  then both launched again with ``--resume``: the run continues from the newest checkpoint in the shared run
  folder, and every step both runs made has the same loss (same data order, dropout streams, optimizer).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml
from helpers.data import tiny_recipe, write_corpus, write_small_sts

STEP_SCRIPT = Path(__file__).parent / "helpers" / "two_node_step.py"
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
TIMEOUT_S = 120  # a launch that has not finished by then is a hang


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node_argv(port: int, run_id: str, *program: str) -> list[str]:
    """One machine's launch: 2 processes, 2 nodes in all, rendezvous at 127.0.0.1:port."""
    return [
        sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "2",
        "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", run_id,
        "--max-restarts", "0", *program,
    ]  # fmt: skip


def launch_two_nodes(run_id: str, *program: str) -> list[subprocess.Popen[str]]:
    """Node 0 first (its agent hosts the rendezvous store, as the first machine of a cluster does)."""
    port = free_port()
    nodes = []
    for _ in range(2):
        nodes.append(
            subprocess.Popen(
                node_argv(port, run_id, *program),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env=ENV,
            )
        )
        time.sleep(1.0)
    return nodes


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (torchrun starts its processes in sessions of their own)."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it ended meanwhile
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        found += children
        todo += children
    return found


def kill_node(node: subprocess.Popen[str]) -> None:
    """The machine is gone: its agent and every process it started, at once."""
    for pid in [node.pid, *descendants(node.pid)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def finish(nodes: list[subprocess.Popen[str]]) -> list[tuple[int, str]]:
    results = []
    for node in nodes:
        try:
            out, _ = node.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            kill_node(node)
            out, _ = node.communicate()
            pytest.fail(f"a node did not finish in {TIMEOUT_S}s:\n{out[-3000:]}")
        results.append((node.returncode, out))
    return results


@pytest.mark.slow
def test_two_nodes_give_the_loss_and_gradients_of_one_process(tmp_path: Path, tiny_bert: Path) -> None:
    corpus = write_corpus(tmp_path / "c.txt", 8)
    (tmp_path / "two").mkdir()
    nodes = launch_two_nodes("step", str(STEP_SCRIPT), str(tiny_bert), str(corpus), str(tmp_path / "two"))
    for code, out in finish(nodes):
        assert code == 0, out[-3000:]
    for name, extra in (("one", []), ("local", ["--local-negatives"])):
        (tmp_path / name).mkdir()
        argv = [sys.executable, str(STEP_SCRIPT), str(tiny_bert), str(corpus), str(tmp_path / name), *extra]
        done = subprocess.run(argv, capture_output=True, text=True, env=ENV, timeout=TIMEOUT_S)
        assert done.returncode == 0, done.stderr[-3000:]
    one = torch.load(tmp_path / "one" / "rank0.pt")
    ranks = [torch.load(tmp_path / "two" / f"rank{r}.pt") for r in range(4)]
    assert [r["world"] for r in ranks] == [4] * 4 and one["world"] == 1
    assert len(one["grads"]) > 10
    for got in ranks:
        torch.testing.assert_close(got["loss"], one["loss"], atol=1e-6, rtol=1e-5)
        assert got["grads"].keys() == one["grads"].keys()
        for name, grad in one["grads"].items():
            torch.testing.assert_close(got["grads"][name], grad, atol=1e-6, rtol=1e-4, msg=name)
    # 4 rows against 8: without the gather each process's loss is another number
    local = torch.load(tmp_path / "local" / "rank0.pt")
    assert abs(float(local["loss"]) - float(one["loss"])) > 1e-3


def train_events(run: Path) -> list[dict]:
    path = run / "metrics.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.slow
def test_a_killed_node_resumes_from_the_shared_checkpoint(tmp_path: Path, tiny_bert: Path) -> None:
    corpus = write_corpus(tmp_path / "c.txt", 400)  # 50 steps an epoch
    run = tmp_path / "run"  # the shared run folder (one disk here; a shared file system across machines)
    recipe = tiny_recipe(tiny_bert, write_small_sts(tmp_path / "d"), corpus, run, max_steps=16, save_steps=4)
    recipe["training"].update(eval_steps=0, batch_size=2, device="cpu")  # global batch 8 over 4 processes
    recipe["eval"]["final_tasks"] = []
    config = tmp_path / "r.yaml"
    config.write_text(yaml.safe_dump(recipe), encoding="utf-8")
    train = ["-m", "sentcl.cli", "train", "--config", str(config)]

    nodes = launch_two_nodes("train", *train)
    deadline = time.monotonic() + TIMEOUT_S
    # killed one step past a checkpoint (4, 8, ...): three steps before the next one, so the killed run has made
    # steps that the resumed run makes again
    while not any(e["event"] == "train" and e["step"] % 4 == 1 and e["step"] > 4 for e in train_events(run)):
        assert time.monotonic() < deadline and nodes[0].poll() is None, "the run did not reach step 5"
        time.sleep(0.05)
    kill_node(nodes[1])  # the second machine is gone: its agent and both processes
    (code, out), (killed, _) = finish(nodes)
    assert killed == -signal.SIGKILL
    assert code != 0, out[-3000:]  # the surviving node stops (its peers are gone), it does not hang
    first = {e["step"]: e["loss"] for e in train_events(run) if e["event"] == "train"}
    assert max(first) < 16, "the run finished before the kill"
    saved = [
        int(p.name.split("-")[1]) for p in run.glob("checkpoint-*") if (p / "training_state.pt").is_file()
    ]

    for code, out in finish(launch_two_nodes("resume", *train, "--resume")):
        assert code == 0, out[-3000:]
    events = train_events(run)
    resumes = [e for e in events if e["event"] == "resume"]
    assert len(resumes) == 1 and resumes[0]["step"] == max(saved), (resumes, saved)
    after = [e for e in events[events.index(resumes[0]) :] if e["event"] == "train"]
    assert [e["step"] for e in after] == list(range(max(saved) + 1, 17))
    both = [e for e in after if e["step"] in first]
    assert both, "the killed run made no step past its newest checkpoint"
    for e in both:
        assert e["loss"] == pytest.approx(first[e["step"]], abs=1e-6), e["step"]
    assert (run / "checkpoint-16").is_dir()
