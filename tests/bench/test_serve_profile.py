"""bench/serve_profile's buckets on hand-written py-spy stacks (the parent's frame first, then the child's), and
the shares of the serving samples against a hand count."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = 'process 1:"python -m bench.serve_load --rounds 1"'
SERVICE = f'{BENCH};process 2:"python -m sentcl.cli serve all-MiniLM-L6-v2 --port 1"'
MAIN = "thread (2): MainThread;_run_module_as_main (<frozen runpy>:198);<module> (sentcl/cli/__main__.py:5)"


@pytest.fixture(autouse=True)
def _bench_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


def test_buckets_and_shares() -> None:
    from bench.serve_profile import aggregate, bucket

    stacks = {
        f"{SERVICE};thread (5): sentcl-encode_0;_worker;SentenceEncoder.forward (sentcl/modeling/encoder.py:242)": 6,
        f"{SERVICE};thread (5): sentcl-encode_0;_worker;length_sorted_batches (sentcl/modeling/batching.py:27)": 1,
        f"{SERVICE};thread (5): sentcl-encode_0;_worker;encode_ids (sentcl/serve/passes.py:58);"
        "packed_encode (sentcl/modeling/packed.py:204)": 3,
        f"{SERVICE};thread (6): sentcl-count_0;_worker;Service._token_ids (sentcl/serve/service.py:80)": 1,
        f"{SERVICE};{MAIN};serve_on (sentcl/serve/server.py:57);Service.token_ids (sentcl/serve/service.py:170);"
        "Service._token_ids (sentcl/serve/service.py:150);_encode_plus (transformers/tokenization_utils.py:1)": 2,
        f"{SERVICE};{MAIN};serve_on (sentcl/serve/server.py:57);embed (sentcl/serve/routes.py:97);"
        "dumps (json/__init__.py:231);iterencode (json/encoder.py:258)": 1,
        f"{SERVICE};{MAIN};serve_on (sentcl/serve/server.py:57);handle (uvicorn/protocols/http/h11_impl.py:1)": 1,
        f"{SERVICE};{MAIN};<module> (sentcl/evaluation/sts.py:32)": 5,  # an import: start-up
        f"{BENCH};thread (1): MainThread;main (bench/serve_load.py:232);in_process (bench/serve_load.py:172)": 7,
        f"{BENCH};thread (1): MainThread;main (bench/serve_load.py:230);drive.<locals>.worker (x.py:1)": 2,
    }
    assert bucket(next(iter(stacks))) == "service encode thread: forward pass"
    raw = "\n".join(f"{stack} {n}" for stack, n in stacks.items())
    res = aggregate(raw)
    assert res["samples"] == {
        "bench: in-process encode": 7,
        "service encode thread: forward pass": 9,
        "service start-up (imports, model load)": 5,
        "bench: HTTP clients (httpx, JSON parsing)": 2,
        "service loop: tokenise to count (small requests)": 2,
        "service encode thread: tokenise, sort, pool": 1,
        "service counting thread: tokenise to count": 1,
        "service loop: JSON out": 1,
        "service loop: HTTP (uvicorn, h11, starlette, fastapi)": 1,
    }
    serving = 9 + 1 + 1 + 2 + 1 + 1 + 2  # neither start-up nor the in-process encode
    assert res["serving_share"]["service encode thread: forward pass"] == round(9 / serving, 4)
    assert sum(res["serving_share"].values()) == pytest.approx(1, abs=1e-3)
