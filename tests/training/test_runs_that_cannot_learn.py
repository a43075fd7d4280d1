"""Runs that cannot learn are refused before any work, naming the key, and a run whose loss stays exactly
constant stops with a clear message.

The rules: each objective declares the fewest sentences per batch it learns with and its temperatures
(``ObjectiveConfig.min_batch``, ``temperature_keys``, ``scale_keys``); ``sentcl.training.validation.check_needs``
refuses the rest; ``model.max_length`` and every ``--max-length`` need 3 or more. They are checked here against
a hand-written table of the methods' needs, an independent float32 computation in numpy, the real InfoNCE in
torch, and real runs of ``sentcl train`` and ``sentcl encode``.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from helpers.data import tiny_recipe, write_corpus
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sentcl.cli import main
from sentcl.config import ConfigError, TrainConfig, load_config
from sentcl.config.method_catalogue import METHODS
from sentcl.objectives.infonce import info_nce
from sentcl.training.step import LossWatch, TrainingStalled
from sentcl.training.validation import SATURATION_GAP, validate

#: what each method needs per batch, written out by hand from its loss (not read from the code)
MIN_BATCH = {
    "unsup_simcse": 2,  # in-batch negatives
    "sup_simcse": 1,  # the contradiction is a negative even alone
    "sup_pairs": 2,
    "cutoff_triplet": 2,
    "next_sentence": 2,
    "quick_thoughts": 3,  # own score masked: two sentences leave one candidate, the neighbour
    "cosent": 2,  # one pair has no order
    "esimcse": 2,
    "mixcse": 2,
    "arccse": 2,
    "promptbert": 2,
    "sncse": 2,
    "distill_mse": 1,  # MSE to the teacher, no SimCSE term by default
    "distill_kl": 3,  # a distribution over the others: one other is always 1
    "rankcse": 2,
    "diffcse": 2,
}
#: what a method needs beside the key under test to pass validation
EXTRA = {
    "promptbert": ["model.pooler=mask"],
    "sncse": ["model.pooler=mask"],
    "distill_mse": ["model.teacher=all-MiniLM-L6-v2"],
    "distill_kl": ["model.teacher=all-MiniLM-L6-v2"],
    "rankcse": ["model.teacher=all-MiniLM-L6-v2"],
    "diffcse": ["model.generator=distilbert-base-uncased"],
}


def float32_loss_is_zero(temperature: float, gap: float = SATURATION_GAP) -> bool:
    """Cross-entropy in float32 (numpy, max-shifted like torch's) of a positive at cosine 1 and one candidate at
    1 - gap, logits cosine / temperature: exactly 0 (or not finite) means the logits saturate."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        tau = np.float32(temperature)
        logits = np.array([1.0, 1.0 - gap], dtype=np.float32) / tau
        if not np.all(np.isfinite(logits)):
            return True
        top = logits.max()
        total = np.exp(logits - top, dtype=np.float32).sum(dtype=np.float32)
        # torch's order: log_softmax = (x - max) - log(sum), so the positive's term is exactly 0 and the loss is
        # log(total); adding the max first would round a small loss away next to logits of 1e4
        loss = np.float32(np.log(total, dtype=np.float32) - (logits[0] - top))
    return not np.isfinite(loss) or loss == 0.0


def refusal(overrides: list[str]) -> str | None:
    """The ConfigError message of loading and validating ``overrides`` (no machine checks), or None."""
    try:
        validate(load_config(TrainConfig, None, overrides), environment=False)
    except ConfigError as err:
        return str(err)
    return None


# ---------------------------------------------------------------- rows of bench/results/records/reliability.md


def test_batch_size_1_is_refused_for_in_batch_negatives() -> None:
    """NUM2_training_batch_size_1_: unsupervised SimCSE at batch size 1 logged loss 0.0 at every step."""
    message = refusal(["training.batch_size=1"])
    assert message is not None and message.startswith("training.batch_size=1 cannot train unsup_simcse")
    assert "2 or more" in message
    assert refusal(["training.batch_size=2"]) is None


def test_temperature_1e_30_is_refused_as_saturated() -> None:
    """NUM2_objective_temperature_1e_30_: logits saturate, loss exactly 0.0 at every step."""
    message = refusal(["objective.temperature=1e-30"])
    assert message is not None and message.startswith("objective.temperature=1e-30 saturates float32 logits")
    assert refusal(["objective.temperature=0.001"]) is None  # SimCSE's smallest temperature (its Table D.1)


@pytest.mark.parametrize("length", [1, 2])
def test_max_length_below_3_is_refused(length: int) -> None:
    """NUM2_model_max_length_2_ (every sentence [CLS][SEP], one vector) and NUM2_model_max_length_1_ (no
    truncation at all): refused while the recipe is read."""
    with pytest.raises(ConfigError, match=rf"^model\.max_length={length} leaves no room for a real token"):
        load_config(TrainConfig, None, [f"model.max_length={length}"])
    with pytest.raises(ConfigError, match=r"model\.teacher\.max_length=2"):
        load_config(TrainConfig, None, ["model.teacher=[{path: t, max_length: 2}]"])
    assert load_config(TrainConfig, None, ["model.max_length=3"]).model.max_length == 3


@pytest.mark.parametrize("length", ["1", "2"])
def test_encode_max_length_below_3_is_refused(length: str, tiny_bert: Path, tmp_path: Path, capsys) -> None:
    """``sentcl encode --max-length 1`` gave the untruncated vectors; 2 gave one vector for every sentence."""
    (tmp_path / "in.txt").write_text("a man plays a guitar\nthe dog runs\n", encoding="utf-8")
    args = ["encode", "--model", str(tiny_bert), "--input", str(tmp_path / "in.txt")]
    with pytest.raises(SystemExit) as exit_:
        main([*args, "--output", str(tmp_path / "out.npy"), "--max-length", length])
    assert exit_.value.code == 2 and not (tmp_path / "out.npy").exists()
    err = capsys.readouterr().err
    assert "--max-length" in err and "no room for a real token" in err and "Traceback" not in err


def test_train_refuses_before_any_work(tiny_bert: Path, data_dir: Path, tmp_path: Path, capsys) -> None:
    """``sentcl train`` at batch size 1: one line naming the key, exit 2, no run folder made."""
    corpus = write_corpus(tmp_path / "corpus.txt", 16)
    sections = tiny_recipe(tiny_bert, data_dir, corpus, tmp_path / "run", batch_size=1)
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(sections), encoding="utf-8")
    assert main(["train", "--config", str(tmp_path / "recipe.yaml")]) == 2
    err = capsys.readouterr().err
    assert "training.batch_size=1 cannot train unsup_simcse" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


# ---------------------------------------------------------------- generated cases


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    method=st.sampled_from(sorted(MIN_BATCH)),
    batch=st.integers(1, 4),
    log_tau=st.floats(-45.0, 0.0),
    max_length=st.integers(1, 6),
)
def test_generated_runs_are_refused_exactly_when_they_cannot_learn(
    method: str, batch: int, log_tau: float, max_length: int
) -> None:
    tau = 10.0**log_tau
    assume(tau > 0)
    ratio = SATURATION_GAP / tau / (24 * math.log(2))
    assume(abs(ratio - 1.0) > 1e-4)  # float32 rounding decides the last digits at the bound itself
    overrides = [f"objective.name={method}", f"training.batch_size={batch}", f"model.max_length={max_length}"]
    fields = METHODS.build(method).options.__dataclass_fields__
    if "temperature" in fields:
        overrides.append(f"objective.temperature={tau!r}")
    elif "scale" in fields:  # CoSENT's lambda is 1 / temperature
        overrides.append(f"objective.scale={1.0 / tau!r}")
    message = refusal([*overrides, *EXTRA.get(method, [])])
    if max_length < 3:
        assert message is not None and message.startswith(f"model.max_length={max_length} "), message
    elif batch < MIN_BATCH[method]:
        assert message is not None and message.startswith(f"training.batch_size={batch} cannot train"), (
            message
        )
    elif ("temperature" in fields or "scale" in fields) and float32_loss_is_zero(tau):
        key = "temperature" if "temperature" in fields else "scale"
        assert message is not None and message.startswith(f"objective.{key}="), message
        assert "saturates float32 logits" in message
    else:
        assert message is None, message


@settings(max_examples=60, deadline=None)
@given(log_tau=st.floats(-8.0, 0.0))
def test_the_real_infonce_is_exactly_0_where_the_rule_refuses(log_tau: float) -> None:
    """The rule against torch's own InfoNCE in float32: two sentences, each positive at cosine 1 with its own
    copy and 1 - gap with the other's: the loss is exactly 0 where a temperature is refused, and > 0 elsewhere."""
    tau = 10.0**log_tau
    ratio = SATURATION_GAP / tau / (24 * math.log(2))
    assume(abs(ratio - 1.0) > 1e-2)  # the cosines themselves are rounded in float32
    cos = 1.0 - SATURATION_GAP
    a = torch.tensor([1.0, 0.0], dtype=torch.float64)
    b = torch.tensor([cos, math.sqrt(1.0 - cos * cos)], dtype=torch.float64)
    z = torch.stack([torch.stack([a, a]), torch.stack([b, b])]).float()  # (B=2, V=2, D=2)
    loss = float(info_nce(z[:, 0], z[:, 1], tau))
    refused = refusal([f"objective.temperature={tau!r}"]) is not None
    assert refused == (loss == 0.0), (tau, loss)


def test_one_sentence_gives_the_real_infonce_exactly_0() -> None:
    """Why batch size 1 is refused: the positive is the only candidate."""
    z = torch.randn(1, 2, 8)  # (B=1, V=2, D)
    assert float(info_nce(z[:, 0], z[:, 1], 0.05)) == 0.0


# ---------------------------------------------------------------- at run time


def reference_stall(losses: list[float], window: int) -> int | None:
    """The 1-based step at which ``window`` equal losses in a row first end, by a plain loop; None if never."""
    run = 0
    for step, value in enumerate(losses, start=1):
        run = run + 1 if step > 1 and value == losses[step - 2] else 1
        if run >= window:
            return step
    return None


@settings(max_examples=200, deadline=None)
@given(
    losses=st.lists(st.sampled_from([0.0, 0.5, 2.0794415, float("-0.0")]), min_size=1, max_size=40),
    window=st.integers(2, 8),
)
def test_the_watch_stops_at_the_first_constant_window(losses: list[float], window: int) -> None:
    watch = LossWatch(window)
    stopped = None
    for step, value in enumerate(losses, start=1):
        try:
            watch.observe(value, step)
        except TrainingStalled as err:
            stopped = step
            assert f"exactly {value!r} for {window} steps" in str(err)
            break
    assert stopped == reference_stall(losses, window)


def test_a_run_whose_loss_cannot_move_stops(tiny_bert: Path, data_dir: Path, tmp_path: Path, capsys) -> None:
    """A corpus of one sentence repeated, no dropout: every view is the same vector, InfoNCE's logits are all
    equal, the loss is log(batch) at every step and no gradient reaches the weights. It passes validation (no
    rule can see the data), and the run stops after the window with one line, exit 1."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the same sentence again\n" * 64, encoding="utf-8")
    sections = tiny_recipe(
        tiny_bert, data_dir, corpus, tmp_path / "run", max_steps=40, epochs=10, eval_steps=0, save_steps=0
    )
    sections["model"]["dropout"] = 0.0
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(sections), encoding="utf-8")
    assert main(["train", "--config", str(tmp_path / "recipe.yaml")]) == 1
    err = capsys.readouterr().err
    assert "the loss has been exactly" in err and "for 20 steps (steps 1 to 20)" in err
    assert "cannot learn" in err and "Traceback" not in err
    steps = [
        line for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines() if '"loss"' in line
    ]
    assert len(steps) < 40


@pytest.mark.parametrize("length", [1, 2])
def test_the_library_encode_refuses_max_length_below_3(length: int, tiny_encoder) -> None:
    """``SentenceEncoder.encode(max_length=1)`` (and the ONNX encoder, through the same batching) is refused, as
    the CLI is: before, 1 silently kept whole sentences and 2 gave one vector for all."""
    with pytest.raises(ValueError, match=rf"max_length={length} leaves no room for a real token"):
        tiny_encoder.encode(["a man plays a guitar", "the dog runs"], max_length=length)
    assert tiny_encoder.encode(["a man plays a guitar", "the dog runs"], max_length=3).shape[0] == 2


@pytest.mark.parametrize("temperature", [1e-4, 8e-5, 6e-5, 5.9e-5, 5.87e-5, 5.8e-5, 1e-5, 1e-3, 0.05])
def test_the_numpy_reference_agrees_with_torchs_cross_entropy(temperature: float) -> None:
    """The float32 reference above says 'exactly 0' where torch's own cross-entropy does (at 1e-4 neither: a
    sum that adds the logit 1e4 first would round the loss 5.7e-5 away)."""
    logits = torch.tensor([[1.0, 1.0 - SATURATION_GAP]]) / torch.tensor(
        temperature, dtype=torch.float32
    )  # (1, 2)
    loss = torch.nn.functional.cross_entropy(logits, torch.tensor([0])).item()
    assert float32_loss_is_zero(temperature) == (loss == 0.0 or not math.isfinite(loss))


@settings(max_examples=200, deadline=None)
@given(losses=st.lists(st.sampled_from([0.0, 0.5, 1.3862944, 2.0794415]), min_size=1, max_size=19))
def test_a_short_run_is_said_not_to_have_learnt_exactly_when_its_loss_repeats_at_half_its_steps(
    losses: list[float],
) -> None:
    watch = LossWatch()  # 19 steps at most: never stopped, so the end of the run must say it
    for step, value in enumerate(losses, start=1):
        watch.observe(value, step)
    repeats = sum(a == b for a, b in zip(losses, losses[1:], strict=False))  # by hand
    said = watch.verdict()
    assert (said is not None) == (len(losses) >= 2 and 2 * repeats >= len(losses) - 1)
    if said is not None:
        assert f"at {repeats} of {len(losses)} steps" in said


def test_a_learning_loss_is_never_said_to_stall() -> None:
    watch = LossWatch()
    for step, value in enumerate(np.random.default_rng(0).uniform(0.1, 3.0, 500), start=1):
        watch.observe(float(value), step)
    assert watch.verdict() is None


def test_a_short_run_whose_loss_never_moves_says_so_in_its_summary(
    tiny_bert: Path, data_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys
) -> None:
    """The case the stop cannot see: copies of one sentence, no dropout, batch 4 (each epoch ends with a
    smaller batch, whose loss is another value), fewer steps than the window: exit 0, and the run's summary
    and log say the loss did not move."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the same sentence again\n" * 26, encoding="utf-8")
    sections = tiny_recipe(
        tiny_bert, data_dir, corpus, tmp_path / "run", max_steps=8, eval_steps=0, save_steps=0, batch_size=4
    )
    sections["model"]["dropout"] = 0.0
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(sections), encoding="utf-8")
    with caplog.at_level("WARNING"):
        assert main(["train", "--config", str(tmp_path / "recipe.yaml")]) == 0, capsys.readouterr().err
    summary = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    (warning,) = summary["warnings"]
    assert re.search(r"the loss did not move: .* at \d+ of [78] steps", warning), warning
    assert "the loss did not move" in caplog.text
