"""The hostile matrix: every slot of the catalogue (test_slot_catalogue.py) meets every generator of its kind
(hostile.py), and every outcome is one of three: a clear one-line error naming the slot (exit 2, or HTTP
4xx with a JSON error), a correct result (exit 0 / HTTP 200 for a value that is valid), or a refusal that
docs/reliability.md documents. A traceback, a hang past the budget, a changed user file, or a bad value
accepted silently fails the case.

Four parts:

- **parse**: every option of every command with every syntactic generator of its kind, through the real
  parser (``build_parser``): refused by the option's ``type=`` reader, naming the option;
- **run**: the options of the commands cheap enough to run here (encode, search, index build and info, mine,
  eval, export, verify, serve, recipes show, train, distill-static, experiment, download, postprocess,
  build-corpus, build-nli, report, shrink: every command of the CLI) with every generator of their kind,
  file-system ones included (a FIFO, a device, a link loop, a user's file), through ``sentcl.cli.main``
  in-process with a time budget. Each command starts from valid base arguments that run in seconds (the tiny
  BERT, a few steps, a small data folder, a loopback download mirror: hostile_worlds.py), checked on their own
  to succeed;
- **config**: every configuration key (recipes and every method's options) with the generators of its kind,
  through the typed reader (``--set KEY=VALUE``);
- **http**: every field of every request schema with hostile JSON values, through the real app (TestClient).

``make test`` runs all of parse, config and a sample of run and http, chosen by a seed drawn per run and printed
in every failure (``SENTCL_HOSTILE_SEED=N`` replays it); ``make test-hostile`` (``SENTCL_HOSTILE=full``) runs
every case.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile import GENERATORS, HTTP_VALUES, SURROGATE, Gen
from hostile_worlds import LazyWorld
from test_slot_catalogue import all_cli_slots, all_config_slots, all_http_slots

from sentcl.files.slots import Slot

FULL = os.environ.get("SENTCL_HOSTILE") == "full"
# one seed a run: under pytest-xdist every worker collects the same sample from the run's shared id
_RUN_ID = os.environ.get("PYTEST_XDIST_TESTRUNUID")
SEED = int(
    os.environ.get("SENTCL_HOSTILE_SEED")
    or (int(_RUN_ID, 16) % 10**6 if _RUN_ID else random.SystemRandom().randrange(10**6))
)
# cases of the run and http parts in a make test run (SENTCL_HOSTILE_SAMPLE=N: N of each)
RUN_SAMPLE = HTTP_SAMPLE = int(os.environ.get("SENTCL_HOSTILE_SAMPLE") or 0)
RUN_SAMPLE, HTTP_SAMPLE = RUN_SAMPLE or 14, HTTP_SAMPLE or 40
BUDGET_S = 90  # a case running longer is a hang

VALID = {"count": "2", "integer": "0", "max-length": "16", "float": "0.5", "duration": "1", "probability": "0.5",
         "range": "0,1", "port": "0", "dims": "8", "text": "a man", "name": "a", "names": "a", "setting": "a.b=1",
         "url": "http://127.0.0.1:9/x", "secret": "k-1", "model": "m", "recipe": "demo"}  # fmt: skip


def _seeded(message: str) -> str:
    return f"{message}\n(hostile matrix seed {SEED}: SENTCL_HOSTILE_SEED={SEED} replays this run)"


# ---- parse -------------------------------------------------------------------------------------------------


def _required_argv(slot: Slot, slots: list[Slot]) -> list[str]:
    """The command's required options and positionals with valid values, the slot's own left out."""
    argv = list(slot.command)
    for other in slots:
        if other.command != slot.command or other is slot or other.kind == "flag":
            continue
        required = (
            other.flag is None or other.default is None and other.flag in _REQUIRED.get(slot.command, ())
        )
        if required and other.where != slot.where:
            value = other.choices[0] if other.choices else VALID.get(other.kind or "", "p")
            argv += [str(value)] if other.flag is None else [other.flag, str(value)]
    return argv


_REQUIRED: dict[tuple[str, ...], tuple[str, ...]] = {}


def parse_cases() -> list[tuple[Slot, Gen]]:
    return [(s, g) for s in all_cli_slots() for g in GENERATORS.get(s.kind or "", []) if g.syntactic]


def test_parse_matrix(tmp_path: Path) -> None:
    """Every option x every syntactic generator: exit 2 and the error names the option."""
    import argparse

    from sentcl.cli import build_parser

    parser = build_parser()
    slots = all_cli_slots()
    for action in _walk_actions(parser):
        if action[1].required and action[1].option_strings:
            _REQUIRED.setdefault(action[0], ())
            _REQUIRED[action[0]] += (action[1].option_strings[-1],)
    failures, tried = [], 0
    for slot, gen in parse_cases():
        if slot.kind == "flag":
            continue
        tried += 1
        value = gen(tmp_path).value
        argv = _required_argv(slot, slots)
        argv = [*argv, value] if slot.flag is None else [*argv, slot.flag, value]
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                parser.parse_args(argv)
                code = 0
            except SystemExit as stop:
                code = stop.code
            except argparse.ArgumentError as stop:  # pragma: no cover - exit_on_error is on
                code, _ = 2, stop
        text = err.getvalue()
        named = "argument " in text and (slot.flag is None or slot.flag in text)  # a positional: its metavar
        if code != 2 or "Traceback" in text or not named:
            failures.append(f"{slot.where} <- {gen.name} ({value!r}): exit {code}: {text.strip()[-200:]}")
    print(f"parse matrix: {tried} cases")
    assert not failures, "\n".join(failures)


def _walk_actions(parser: Any, command: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    import argparse

    for action in parser._actions:  # noqa: SLF001
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for name, sub in action.choices.items():
                yield from _walk_actions(sub, (*command, name))
        else:
            yield command, action


# ---- run ---------------------------------------------------------------------------------------------------

CHEAP = {("encode",), ("search",), ("index", "build"), ("index", "info"), ("mine",), ("eval",), ("export",),
         ("verify",), ("serve",), ("recipes", "show"), ("train",), ("distill-static",), ("experiment",),
         ("download",), ("postprocess",), ("build-corpus",), ("build-nli",), ("report",),
         ("shrink",)}  # fmt: skip


@pytest.fixture(scope="module")
def world(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LazyWorld]:
    """What the base commands read: the tiny model, a corpus, its shards and index, pairs files; the rest (a
    small data folder, a 2-step recipe, a grid, a finished run, a download mirror) on first use
    (hostile_worlds.py)."""
    from helpers.shards import encode_argv

    from sentcl.cli import main

    root = tmp_path_factory.mktemp("hostile_world")
    corpus = root / "corpus.txt"
    corpus.write_text(
        "".join(f"a man plays a guitar {i}\nthe dog runs in the garden {i}\n" for i in range(15))
    )
    assert main(encode_argv(tiny_bert, corpus, root / "sh")) == 0
    assert (
        main(
            [
                "index",
                "build",
                "--embeddings",
                str(root / "sh"),
                "--type",
                "flat",
                "--output",
                str(root / "idx"),
            ]
        )
        == 0
    )
    (root / "pairs.tsv").write_text(
        "".join(f"a man plays\ta man plays a guitar\t{i % 5}\n" for i in range(12))
    )
    (root / "pairs.csv").write_text(
        "anchor,positive\n" + "".join(f"a man {i},a dog {i}\n" for i in range(12))
    )
    made = LazyWorld(root, {"M": str(tiny_bert), "C": str(corpus), "SH": str(root / "sh"),
                            "IDX": str(root / "idx"), "TSV": str(root / "pairs.tsv"),
                            "CSV": str(root / "pairs.csv")})  # fmt: skip
    yield made
    made.close()


def _base(command: tuple[str, ...], w: dict[str, str], out: Path) -> list[tuple[str, str | None]]:
    """The command's valid arguments (option, value; a flag's value None; a positional by its dest); what
    ``w`` builds on first use (hostile_worlds.LazyWorld) is built only for the command asked."""
    d = lambda: ("--data-dir", w["DATA"])  # noqa: E731 - the small data folder, built when first asked for
    bases: dict[tuple[str, ...], Callable[[], list[tuple[str, str | None]]]] = {
        ("encode",): lambda: [("--model", w["M"]), ("--input", w["C"]), ("--output", str(out / "o.npy"))],
        ("search",): lambda: [("--model", w["M"]), ("--corpus", w["C"]), ("--query", "a man")],
        ("index", "build"): lambda: [("--embeddings", w["SH"]), ("--type", "flat"),
                                     ("--output", str(out / "idx"))],
        ("index", "info"): lambda: [("folder", w["IDX"])],
        ("mine",): lambda: [("--model", w["M"]), ("--pairs", w["CSV"]), ("--output", str(out / "m.csv"))],
        ("eval",): lambda: [("--model", w["M"]), ("--pairs", w["TSV"])],
        ("export",): lambda: [("model", w["M"]), ("out", str(out / "x"))],
        ("verify",): lambda: [("paths", w["IDX"])],
        ("serve",): lambda: [("model_path", w["M"]), ("--port", "0"), ("--keep-malloc-threshold", None)],
        ("recipes", "show"): lambda: [("name", "demo")],
        # the commands that train, distil, fetch or build data: a few steps on the tiny model, the small data
        # folder, a loopback mirror (hostile_worlds.py); each valid case runs in seconds
        ("train",): lambda: [("--config", w["RECIPE"]), d(), ("--output-dir", str(out / "run"))],
        ("distill-static",): lambda: [("teacher", w["M"]), ("output", str(out / "static")),
                                      ("--max-sentences", "60"), ("--steps", "2"), ("--batch-size", "16"),
                                      ("--dim", "8"), ("--teacher-cache", str(out / "cache")), d()],
        ("experiment",): lambda: [("grid", w["GRID"]), ("--variant", "cpu"), ("--output", str(out / "pages")),
                                  ("--runs-dir", str(out / "runs")), d()],
        ("download",): lambda: [("names", "wiki1m"), ("--data-dir", str(out / "data")),
                                ("--mirror", w["MIRROR"])],
        ("postprocess",): lambda: [("method", "whitening"), ("--model", w["M"]), ("--pooler", "avg"),
                                   ("--fit-file", w["C"]), ("--output", str(out / "pp")), ("--dim", "8")],
        ("build-corpus",): lambda: [("kind", "english"), ("--output", str(out / "c.txt")), d()],
        ("build-nli",): lambda: [d(), ("--output", str(out / "nli.csv"))],
        ("report",): lambda: [("runs", w["RUN"]), ("--output", str(out / "report")),
                              ("--eval-tasks", "stsb_dev"), d()],
        ("shrink",): lambda: [("teacher", w["M"]), ("output", str(out / "shrunk")), ("--budget", "3x"),
                              ("--pairs", w["SHRINK_PAIRS"]), ("--families", "static"),
                              ("--corpus-sentences", "60"), ("--static-steps", "2"), ("--batch-size", "16"),
                              ("--choice-texts", "16"), ("--time-texts", "16"), ("--rounds", "1"),
                              ("--min-seconds", "0.01"), ("--teacher-cache", str(out / "cache")), d()],
    }  # fmt: skip
    return bases[command]()


def _argv(command: tuple[str, ...], pairs: list[tuple[str, str | None]]) -> list[str]:
    argv = list(command)
    for k, v in pairs:
        argv += [v] if not k.startswith("-") else [k] if v is None else [k, v]  # type: ignore[list-item]
    return argv


# an option of a mutually exclusive group: its case gives it instead of the base's other one
INSTEAD = {("shrink", "--keep"): "--budget"}


def run_cases() -> list[tuple[Slot, Gen]]:
    """The run part's cases: in a sampled run only the generators the parse part cannot try (the file system's),
    in the full run every generator."""
    return [
        (s, g)
        for s in all_cli_slots()
        if s.command in CHEAP and s.kind != "flag"
        for g in GENERATORS.get(s.kind or "", [])
        if FULL or not g.syntactic
    ]


def _ids(cases: list[tuple[Slot, Gen]]) -> list[str]:
    return [f"{s.where.replace(' ', '_')}:{g.name}" for s, g in cases]


def _sample(cases: list[Any], n: int) -> list[Any]:
    return cases if FULL else random.Random(SEED).sample(cases, min(n, len(cases)))


class Hang(BaseException):
    """The case ran past its budget."""


@contextlib.contextmanager
def budget(seconds: int) -> Iterator[None]:
    def stop(signum: int, frame: Any) -> None:
        raise Hang(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _snapshot(path: Path | None) -> dict[str, bytes] | None:
    if path is None:
        return None
    if path.is_file():
        return {"": path.read_bytes()}
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


RUN = _sample(run_cases(), RUN_SAMPLE)


@pytest.mark.parametrize(("slot", "gen"), RUN, ids=_ids(RUN))
def test_run_matrix(
    slot: Slot, gen: Gen, world: dict[str, str], tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sentcl.cli.serve as serve_cli
    from sentcl.cli import main

    monkeypatch.setattr(serve_cli, "serve_on", lambda app, sock, config: None)  # the app is built, not served
    monkeypatch.delenv("SENTCL_API_KEY", raising=False)
    made = gen(tmp_path)
    before = _snapshot(made.keep)
    key = slot.flag or slot.where.split()[-1]
    pairs = [
        (k, v) for k, v in _base(slot.command, world, tmp_path) if k != INSTEAD.get((*slot.command, key))
    ]
    if any(k == key for k, _ in pairs):
        pairs = [(k, made.value if k == key else v) for k, v in pairs]
    else:
        pairs.append((key, made.value))
    argv = _argv(slot.command, pairs)
    start = time.monotonic()
    try:
        with budget(BUDGET_S):
            code = main(argv)
    except SystemExit as stop:  # argparse's refusal: its one line, exit 2
        code = stop.code
    except Hang as hang:
        pytest.fail(_seeded(f"{slot.where} <- {gen.name}: a hang ({hang})"))
    except BaseException as err:  # noqa: BLE001 - anything escaping main is a traceback
        pytest.fail(_seeded(f"{slot.where} <- {gen.name}: {type(err).__name__} escaped main: {err}"))
    out, err = capsys.readouterr()
    printed = out + err
    case = f"{slot.where} <- {gen.name} ({made.value[:60]!r}), exit {code} in {time.monotonic() - start:.1f}s"
    assert "Traceback" not in printed, _seeded(f"{case}: a traceback\n{printed[-2000:]}")
    assert _snapshot(made.keep) == before, _seeded(f"{case}: the user's {made.keep} changed")
    errors = [
        line
        for line in err.splitlines()
        if line.startswith(f"sentcl {slot.command[0]}") and ": error: " in line
    ]
    if code == 0:
        assert not gen.bad, _seeded(f"{case}: a bad value accepted silently\n{printed[-1000:]}")
        return
    assert code in (1, 2) and len(errors) == 1, _seeded(f"{case}: not one clear line\n{err[-2000:]}")
    line = errors[0]
    shown = made.value if made.value else key
    assert key in line or shown in line or str(Path(shown).name) in line or "argument" in line, _seeded(
        f"{case}: the error does not name the slot: {line}"
    )


def test_every_command_has_a_run_base() -> None:
    """A new command is in the run part from its first option: it needs a base in ``_base`` (and ``CHEAP``)."""
    commands = {s.command for s in all_cli_slots() if s.kind != "flag"}
    assert not commands - CHEAP, f"commands with no run base: {sorted(commands - CHEAP)}"


# the commands whose base arguments are checked: every one in the full run, the sample's own in a sampled one
BASES = sorted(CHEAP if FULL else {s.command for s, _ in RUN})


@pytest.mark.parametrize("command", BASES, ids="_".join)
def test_run_bases_are_valid(
    command: tuple[str, ...], world: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each command's base arguments alone succeed (exit 0), so that a refusal in the matrix is the slot's."""
    import sentcl.cli.serve as serve_cli
    from sentcl.cli import main

    monkeypatch.setattr(serve_cli, "serve_on", lambda app, sock, config: None)
    monkeypatch.delenv("SENTCL_API_KEY", raising=False)
    argv = _argv(command, _base(command, world, tmp_path))
    with budget(BUDGET_S):
        assert main(argv) == 0, argv


# ---- config ------------------------------------------------------------------------------------------------


def config_cases() -> list[tuple[Slot, Gen]]:
    return [(s, g) for s in all_config_slots() for g in GENERATORS.get(s.kind or "", []) if g.syntactic]


def _method_of(key: str) -> str | None:
    from sentcl.config.method_catalogue import option_classes
    from sentcl.config.objective import ObjectiveConfig

    name = key.removeprefix("objective.")
    if not key.startswith("objective.") or name in ObjectiveConfig.__dataclass_fields__:
        return None
    return next(m for m, cls in option_classes().items() if name in cls.__dataclass_fields__)


def _kept_bad(value: Any) -> bool:
    if isinstance(value, float):
        return value != value or value in (float("inf"), float("-inf"))
    if isinstance(value, str):
        return any(0xD800 <= ord(ch) <= 0xDFFF for ch in value)
    if isinstance(value, list | tuple):
        return any(map(_kept_bad, value))
    return False


def test_config_matrix() -> None:
    """Every configuration key x every syntactic generator of its kind, through the typed reader: a
    ConfigError naming the key, or a value that is valid (never a non-finite number or undecodable text kept)."""
    from sentcl.config.load import load_config
    from sentcl.config.sections import TrainConfig
    from sentcl.config.static_recipe import StaticRecipe, load_static_recipe

    static_keys = {s.where for s in all_config_slots() if s.where in _static_keys(StaticRecipe)}
    failures, tried = [], 0
    for slot, gen in config_cases():
        tried += 1
        value = gen(Path("/nonexistent")).value
        method = _method_of(slot.where)
        sets = ([f"objective.name={method}"] if method else []) + [f"{slot.where}={value}"]
        try:
            if slot.where in static_keys:
                cfg: Any = load_static_recipe(None, sets)
            else:
                cfg = load_config(TrainConfig, None, sets)
        except ValueError as err:
            if slot.where.split(".")[-1] not in str(err) or "\n" in str(err).strip():
                failures.append(f"{slot.where} <- {gen.name}: the error does not name the key: {err}")
            continue
        except Exception as err:  # noqa: BLE001 - a traceback for the user
            failures.append(f"{slot.where} <- {gen.name}: {type(err).__name__}: {err}")
            continue
        kept = cfg
        for part in slot.where.split("."):
            kept = getattr(kept, part, None)
        if _kept_bad(kept):
            failures.append(f"{slot.where} <- {gen.name} ({value!r}): accepted as {kept!r}")
    print(f"config matrix: {tried} cases")
    assert not failures, "\n".join(failures)


def _static_keys(cls: Any) -> set[str]:
    from sentcl.files.slots import config_slots

    return {s.where for s in config_slots(cls)}


# ---- http --------------------------------------------------------------------------------------------------

BODIES = {
    "POST /embed": {"inputs": ["a man plays"]},
    "POST /similarity": {"inputs": {"source_sentence": "a man", "sentences": ["a dog"]}},
    "POST /v1/embeddings": {"input": "a man"},
    "POST /search": {"query": "a man", "k": 2},
}


def http_cases() -> list[tuple[Slot, tuple[str, str]]]:
    return [(s, v) for s in all_http_slots() for v in HTTP_VALUES]


HTTP = _sample(http_cases(), HTTP_SAMPLE)


@pytest.fixture(scope="module")
def client(tiny_encoder: Any, index_dir: Path) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    from sentcl.serve.app import create_app
    from sentcl.serve.index import load_search_index

    index = load_search_index(index_dir, tiny_encoder.embedding_dim)
    with TestClient(create_app(tiny_encoder, index=index), base_url="http://localhost") as c:
        yield c


def _body(slot: Slot, raw: str) -> str:
    route, field = slot.where.split(" ", 2)[1:]
    body = json.loads(json.dumps(BODIES[f"POST {route}"]))
    *outer, last = field.split(".")
    target = body
    for part in outer:
        target = target[part]
    target[last] = "__HOSTILE__"
    return json.dumps(body).replace('"__HOSTILE__"', raw)


@pytest.mark.parametrize(("slot", "value"), HTTP, ids=[f"{s.where}:{v[0]}" for s, v in HTTP])
def test_http_matrix(slot: Slot, value: tuple[str, str], client: Any) -> None:
    route = slot.where.split(" ")[1]
    start = time.monotonic()
    with budget(BUDGET_S):
        answer = client.post(
            route, content=_body(slot, value[1]), headers={"content-type": "application/json"}
        )
    case = f"{slot.where} <- {value[0]}: HTTP {answer.status_code} in {time.monotonic() - start:.1f}s"
    assert answer.status_code < 500, _seeded(f"{case}: {answer.text[:500]}")
    if answer.status_code >= 400:
        assert answer.headers["content-type"].startswith("application/json"), _seeded(case)
        assert "error" in answer.json(), _seeded(f"{case}: {answer.text[:300]}")


def test_the_surrogate_is_what_argv_gives() -> None:
    assert os.fsdecode(b"for\xeat") == SURROGATE
