"""Files sentcl wrote and a user damaged: an index's ``index.json`` and ``rows.npy``,
ids a damaged ``index.faiss`` returns, a run folder's ``results.json``, ``metrics.jsonl`` and report cache,
and a grid's run summaries. Each goes through the one typed reader (``sentcl.files.read.read_typed_json``) and
gives one error line naming the file and the field, never a traceback; the service refuses such an index at
start-up instead of answering 500s. Every row runs the real CLI in-process on the tiny random BERT."""

from __future__ import annotations

import functools
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from harness import Case, parametrize, run_case
from helpers.data import write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sentcl.cli import main
from sentcl.serve.index import load_search_index

ROOT = Path(__file__).resolve().parents[2]
ENV: dict[str, Path] = {}
BUILT: dict[str, Path] = {}


@pytest.fixture(autouse=True)
def _env(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    ENV["model"] = tiny_bert
    if "ivf" not in BUILT:  # one encode and three builds for every row (copies are damaged)
        base = tmp_path_factory.mktemp("damaged_index")
        corpus = write(
            base, "corpus.txt", "".join(f"sentence number {i} about a topic\n" for i in range(120))
        )
        shards = base / "shards"
        assert main(["encode", "--model", str(tiny_bert), "--input", str(corpus), "--output", str(shards),
                     "--shard-size", "50"]) == 0  # fmt: skip
        for kind in ("ivf", "hnsw", "flat"):
            out = base / kind
            assert (
                main(["index", "build", "--embeddings", str(shards), "--type", kind, "--output", str(out)])
                == 0
            )
            BUILT[kind] = out


def _search(folder: Path) -> list[str]:
    return ["search", "--model", str(ENV["model"]), "--index", str(folder), "--query", "a topic", "-k", "3"]


def damaged_index(kind: str, damage: Callable[[Path], None]) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        copy = folder / "idx"
        shutil.copytree(BUILT[kind], copy)
        damage(copy)
        return _search(copy)

    return setup


def meta_field(dotted: str, value: Any) -> Callable[[Path], None]:
    def damage(index: Path) -> None:
        meta = json.loads((index / "index.json").read_text())
        node = meta
        *parents, last = dotted.split(".")
        for key in parents:
            node = node[key]
        node[last] = value
        (index / "index.json").write_text(json.dumps(meta))

    return damage


def row_map(change: Callable[[np.ndarray], np.ndarray]) -> Callable[[Path], None]:
    def damage(index: Path) -> None:
        rows = np.load(index / "rows.npy")
        np.save(index / "rows.npy", change(rows))

    return damage


def inverted_list_ids(offset: int) -> Callable[[Path], None]:
    """Rewrite every id of an IVF index's inverted lists as id + offset (the codes kept), through faiss."""

    def damage(index: Path) -> None:
        import faiss

        ivf = faiss.read_index(str(index / "index.faiss"))
        lists = faiss.downcast_InvertedLists(faiss.extract_index_ivf(ivf).invlists)
        for cell in range(lists.nlist):
            n, size = lists.list_size(cell), lists.code_size
            ids = faiss.rev_swig_ptr(lists.get_ids(cell), n).copy()
            codes = faiss.rev_swig_ptr(lists.get_codes(cell), n * size).copy()
            for j in range(n):
                lists.update_entry(
                    cell, j, int(ids[j]) + offset, faiss.swig_ptr(codes[j * size : (j + 1) * size])
                )
        faiss.write_index(ivf, str(index / "index.faiss"))

    return damage


META = r"index\.json \(index metadata\): "
INDEX_CASES = [
    Case(
        "FX_nprobe_neg",
        damaged_index("ivf", meta_field("params.nprobe", -1)),
        META + r"params\.nprobe must be a whole number from 1 to \d+, got -1; rebuild",
    ),  # fmt: skip
    Case(
        "FX_nprobe_huge",
        damaged_index("ivf", meta_field("params.nprobe", 1e20)),
        META + r"params\.nprobe must be a whole number .* got a number 1e\+20",
    ),  # fmt: skip
    Case(
        "FX_nprobe_zero",
        damaged_index("ivf", meta_field("params.nprobe", 0)),
        META + r"params\.nprobe .* got 0",
    ),
    Case(
        "FX_params_list",
        damaged_index("ivf", meta_field("params", [])),
        META + r"params must be an object, got a list",
    ),  # fmt: skip
    Case(
        "FX_count_str",
        damaged_index("flat", meta_field("count", "120")),
        META + r"count must be a whole number >= 0, got text '120'",
    ),  # fmt: skip
    Case(
        "FX_ef_neg",
        damaged_index("hnsw", meta_field("params.ef_search", -5)),
        META + r"params\.ef_search .* got -5",
    ),  # fmt: skip
    Case(
        "FX_ef_zero",
        damaged_index("hnsw", meta_field("params.ef_search", 0)),
        META + r"params\.ef_search .* got 0",
    ),  # fmt: skip
    Case(
        "faiss_json_type_bool",
        damaged_index("flat", meta_field("type", True)),
        META + r"type must be one of flat, ivf, hnsw, .*, got a boolean True",
    ),  # fmt: skip
    Case(
        "FX_rows_oob",
        damaged_index("ivf", row_map(lambda r: r + 100_075)),
        r"rows\.npy: id 0 maps to row 100075, outside the corpus's 120 rows",
    ),  # fmt: skip
    Case(
        "FX_rows_neg", damaged_index("ivf", row_map(lambda r: r * 0 - 7)), r"rows\.npy: id 0 maps to row -7"
    ),
    Case(
        "rows_npy_duplicate_rows",
        damaged_index("ivf", row_map(lambda r: r * 0)),
        r"rows\.npy: row 0 is named 120 times",
    ),  # fmt: skip
    Case(
        "rows_npy_float_ids",
        damaged_index("ivf", row_map(lambda r: r.astype(np.float32))),
        r"rows\.npy holds float32 ids",
    ),  # fmt: skip
    Case(
        "FXC_ivf_ids",
        damaged_index("ivf", inverted_list_ids(10**9)),
        # the SHA-256 that index.json records catches it at open (an index without records: at search)
        r"index\.faiss (returned id 1000000\d{3}, outside its 120 vectors: the file is damaged|changed since it was written)",
    ),  # fmt: skip
    Case(
        "FXC_ivf_ids_norowmap",
        damaged_index(
            "ivf", lambda i: (inverted_list_ids(10**9)(i), (i / "rows.npy").unlink(missing_ok=True))
        ),
        r"index\.faiss (returned id 1000000\d{3}, outside its 120 vectors|changed since it was written)|rows\.npy",
    ),  # fmt: skip
]


@parametrize(INDEX_CASES)
def test_damaged_index(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_case(case, tmp_path, capsys)


@pytest.mark.parametrize(
    ("row", "kind", "damage", "message"),
    [
        ("SV_idx_rows_oob", "ivf", row_map(lambda r: r + 100_075), r"rows\.npy: id 0 maps to row 100075"),
        ("SV_idx_ef_neg", "hnsw", meta_field("params.ef_search", -5), r"params\.ef_search .* got -5"),
        ("SV_idx_nprobe_neg", "ivf", meta_field("params.nprobe", -1), r"params\.nprobe .* got -1"),
    ],
)
def test_service_refuses_a_damaged_index_at_start_up(
    row: str, kind: str, damage: Callable[[Path], None], message: str, tmp_path: Path, tiny_encoder: Any
) -> None:
    """Reliability row SV_idx_*: the service answered every /search with a 500 'internal', or poor hits."""
    copy = tmp_path / "idx"
    shutil.copytree(BUILT[kind], copy)
    damage(copy)
    with pytest.raises(ValueError, match=message):
        load_search_index(copy, tiny_encoder, str(ENV["model"]), allow_model_mismatch=True)


# ---- run folders (sentcl report)


def run_folder(
    results: Any, metrics: str | None = None, cache: str | None = None
) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        run = folder / "run"
        shutil.copytree(ENV["model"], run / "best")
        text = results if isinstance(results, str) else json.dumps(results)
        write(run, "results.json", text)
        if metrics is not None:
            write(run, "metrics.jsonl", metrics)
        if cache is not None:
            write(run, "report_cache.json", cache)
        return ["report", str(run), "--eval-tasks", "stsb_dev", "--output", str(folder / "out")]

    return setup


GOOD = {"best_step": 2, "global_step": 2, "results": {"stsb_dev": {"STSBenchmark": {"spearman": 80.0}}}}
REPORT_CASES = [
    Case(
        "R_list",
        run_folder([GOOD]),
        r"results\.json \(run results\): the top level must be an object, got a list",
    ),
    Case(
        "R_resultslist",
        run_folder({**GOOD, "results": [1, 2]}),
        r"results\.json \(run results\): results must be an object, got a list",
    ),  # fmt: skip
    Case(
        "R_trunc",
        run_folder(json.dumps(GOOD)[:30]),
        r"results\.json: run results is not valid JSON \(line 1, column \d+",
    ),  # fmt: skip
    Case(
        "results_step_bool",
        run_folder({**GOOD, "global_step": True}),
        r"global_step must be a whole number >= 0, got a boolean True",
    ),  # fmt: skip
    Case(
        "R_alignstr",
        run_folder(GOOD, '{"event": "eval", "step": 2, "alignment": "x", "uniformity": -2.0}\n'),
        r"metrics\.jsonl:1: alignment must be a number, got text 'x'",
    ),
]


@parametrize(REPORT_CASES)
def test_damaged_run_folder(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_case(case, tmp_path, capsys)


# ---- run summaries (sentcl experiment --from-summaries)

GRID = ROOT / "configs" / "experiments" / "dropout.yaml"


def summaries(damage: Callable[[Path], None]) -> Callable[[Path], list[str]]:
    """The committed dropout grid's summaries, one of them damaged, read back with --from-summaries."""

    def setup(folder: Path) -> list[str]:
        shutil.copytree(ROOT / "docs" / "results" / "dropout-cpu", folder / "out" / "dropout-cpu")
        damage(folder / "out" / "dropout-cpu" / "runs" / "0.1")
        return [
            "experiment",
            str(GRID),
            "--variant",
            "cpu",
            "--output",
            str(folder / "out"),
            "--from-summaries",
        ]

    return setup


def edit(name: str, change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        data = json.loads((run / name).read_text())
        change(data)
        (run / name).write_text(json.dumps(data))

    return damage


SUMMARY_CASES = [
    Case(
        "S_trainlist",
        summaries(edit("config.json", lambda c: c.update(training=[1]))),
        r"0\.1/config\.json \(run summary\): training must be an object, got a list",
    ),  # fmt: skip
    Case(
        "S_resultsnull",
        summaries(edit("results.json", lambda r: r.update(results=None))),
        r"0\.1/results\.json \(run results\): results must be an object, got null",
    ),  # fmt: skip
    Case(
        "S_strval",
        summaries(edit("results.json", lambda r: r["results"].update(stsb_dev="high"))),
        r"results\.stsb_dev must be an object, got text 'high'",
    ),  # fmt: skip
    Case(
        "summary_score_text",
        summaries(
            edit("results.json", lambda r: r["results"]["stsb_dev"]["STSBenchmark"].update(spearman="x"))
        ),
        r"0\.1/results\.json: results: no usable stsb_dev score",
    ),  # fmt: skip
]


@parametrize(SUMMARY_CASES)
def test_damaged_summary(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_case(case, tmp_path, capsys)


def test_damaged_report_cache_is_said_and_computed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Reliability row R_cachebad: a truncated report_cache.json stopped the report with 'Expecting value: line 2
    column 1'; it is sentcl's own cache, so it is named in a warning and computed again."""
    import sentcl.report.collect as collect

    computed: list[list[str]] = []

    def fake(model: str, tasks: list[str], *_: Any, **__: Any) -> dict[str, Any]:
        computed.append(list(tasks))
        return {t: {"STSBenchmark": {"spearman": 42.0}} for t in tasks}

    monkeypatch.setattr(collect, "compute_tasks", fake)
    run = tmp_path / "run"
    shutil.copytree(ENV["model"], run / "best")
    write(run, "results.json", json.dumps({"global_step": 2, "results": {}}))
    write(run, "report_cache.json", '{"model_fingerprint": "abc",\n')
    source = collect.open_source(str(run), tmp_path / "cache")
    collect.ensure_results(source, ["stsb_dev"], tmp_path)
    assert computed == [["stsb_dev"]]
    assert "report_cache.json: report cache is not valid JSON (line 2, column 1" in caplog.text
    rewritten = json.loads((run / "report_cache.json").read_text())
    assert rewritten["results"]["stsb_dev"]["STSBenchmark"]["spearman"] == 42.0


# ---- generated damage: every field of a real index.json and results.json swapped to another type

_any_json = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8)
_any_json = (
    _any_json | st.lists(_any_json, max_size=2) | st.dictionaries(st.text(max_size=4), _any_json, max_size=2)
)


def _paths(value: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every key path of a JSON object, objects themselves included."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append((*prefix, key))
            found += _paths(item, (*prefix, key))
    return found


def _swap(data: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(data))
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_faiss_json_field_of_another_type_opens_or_names_the_file(
    data: st.DataObject, tmp_path: Path
) -> None:
    from sentcl.index import open_index

    kind = data.draw(st.sampled_from(["ivf", "hnsw"]))
    meta = json.loads((BUILT[kind] / "index.json").read_text())
    path = data.draw(st.sampled_from(_paths(meta)))
    folder = tmp_path / f"idx-{len(list(tmp_path.iterdir()))}"
    shutil.copytree(BUILT[kind], folder)
    (folder / "index.json").write_text(json.dumps(_swap(meta, path, data.draw(_any_json)), allow_nan=True))
    try:
        index = open_index(folder)
    except (ValueError, FileNotFoundError) as err:
        assert str(folder) in str(err)  # the file (index.json, rows.npy, the shards it names) is named
        return
    scores, ids = index.search(np.ones((1, index.dim), np.float32), 3)  # opened: it searches
    assert ids.shape == (1, 3) and np.all(np.abs(scores) <= 1.0001)


@functools.cache
def _grid() -> Any:
    from sentcl.experiments.grid import load_grid

    return load_grid(GRID)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(_paths(GOOD)), value=_any_json)
def test_any_results_json_field_of_another_type_reads_or_names_the_field(
    path: tuple[str, ...], value: Any, tmp_path: Path
) -> None:
    from sentcl.experiments.runs import row_values

    results = tmp_path / "results.json"
    results.write_text(json.dumps(_swap(GOOD, path, value), allow_nan=True))
    try:
        _, score, _ = row_values(_grid(), results)
    except (ValueError, KeyError) as err:
        assert str(results) in str(err)
        return
    assert isinstance(score, float)
