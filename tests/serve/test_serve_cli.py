"""``sentcl serve``'s wiring: options reach the app (``serve_on``, which runs uvicorn on the bound socket, is
replaced to capture it), the default bind address is 127.0.0.1, and a user's mistakes end as one line with
exit status 2."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sentcl.cli import main

LOCAL = "http://localhost"  # a Host the service answers (TestClient's default "testserver" is refused)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def captured(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    import sentcl.cli.serve as serve_cli

    seen: dict[str, Any] = {}

    def capture(app: Any, sock: socket.socket, config: dict[str, Any]) -> None:
        host, port = sock.getsockname()[:2]
        seen.update(app=app, host=host, port=port, **config)

    monkeypatch.setattr(serve_cli, "serve_on", capture)
    monkeypatch.delenv("SENTCL_API_KEY", raising=False)
    return seen


def test_options_reach_the_service(captured: dict[str, Any], tiny_bert: Path, index_dir: Path) -> None:
    argv = ["serve", str(tiny_bert), "--pooler", "avg", "--index", str(index_dir), "--api-key", "abc"]
    argv += ["--keep-malloc-threshold"]  # leave this process's allocator as it is
    port = free_port()
    assert main([*argv, "--max-client-batch", "2", "--max-length", "16", "--port", str(port)]) == 0
    assert (captured["host"], captured["port"]) == ("127.0.0.1", port)
    auth = {"Authorization": "Bearer abc"}
    with TestClient(captured["app"], base_url=LOCAL) as c:
        info = c.get("/info", headers=auth).json()
        assert info["limits"]["max_client_batch"] == 2 and info["max_length"] == 16
        assert info["index"]["size"] == 12 and info["pooler"] == "avg"
        assert c.post("/search", json={"query": "a dog"}).status_code == 401
        assert c.post("/embed", json={"inputs": ["a", "b", "c"]}, headers=auth).status_code == 413
        hits = c.post("/search", json={"query": "a dog", "k": 3}, headers=auth).json()
        assert len(hits) == 3


def test_user_errors_are_one_line(
    captured: dict[str, Any], tiny_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve"]) == 2
    assert capsys.readouterr().err.strip() == "sentcl serve: error: no model: give MODEL or --model"
    assert (
        main(["serve", str(tiny_bert), "--index", str(tmp_path / "missing"), "--keep-malloc-threshold"]) == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.startswith("sentcl serve: error: index folder") and "\n" not in err
    (tmp_path / "not_index").mkdir()
    assert (
        main(["serve", str(tiny_bert), "--index", str(tmp_path / "not_index"), "--keep-malloc-threshold"])
        == 2
    )
    assert "not_index is not an index folder" in capsys.readouterr().err
    for value, problem in [("0", "must be positive, got 0"), ("-5", "must be positive, got -5")] + [
        (v, f"expected a whole number, got {v!r}") for v in ("32.5", "lots", "")
    ]:  # hand-typed mistakes: argparse's exit 2 and a last line naming the option, nothing loaded
        with pytest.raises(SystemExit) as exit_:
            main(["serve", str(tiny_bert), "--release-budget-mb", value])
        assert exit_.value.code == 2
        assert capsys.readouterr().err.strip().splitlines()[-1] == (
            f"sentcl serve: error: argument --release-budget-mb: {problem}"
        )
    assert main(["serve", str(tiny_bert), "--header-timeout", "0", "--keep-malloc-threshold"]) == 2
    assert capsys.readouterr().err.startswith(
        "sentcl serve: error: --header-timeout must be a number of seconds"
    )
    for option, value in [("--body-timeout", "nan"), ("--header-timeout", "inf")]:  # refused by the reader
        with pytest.raises(SystemExit) as exit_:
            main(["serve", str(tiny_bert), option, value, "--keep-malloc-threshold"])
        assert exit_.value.code == 2
        assert capsys.readouterr().err.strip().splitlines()[-1] == (
            f"sentcl serve: error: argument {option}: must be a finite number, got {value!r}"
        )
    assert "app" not in captured


def test_allowed_hosts(captured: dict[str, Any], tiny_bert: Path) -> None:
    """--allowed-hosts (repeated, comma-separated, *.suffix) reaches the Host check; bound to 0.0.0.0, any IP
    address is answered but names are still checked."""
    argv = ["serve", str(tiny_bert), "--port", "0", "--keep-malloc-threshold"]
    argv += ["--allowed-hosts", "a.example,*.corp.example", "--allowed-hosts", "b.example:8443"]
    assert main(argv) == 0
    answered = {"a.example", "b.example", "x.corp.example", "localhost", "127.0.0.1:1234", "[::1]"}
    refused = {"corp.example", "evil.example", "a.example.evil.example", "192.0.2.7", "[::2]"}
    for host in answered | refused:
        with TestClient(captured["app"], base_url=f"http://{host}") as c:
            status = c.get("/health").status_code
        assert status == (200 if host in answered else 400), host
    assert main(["serve", str(tiny_bert), "--host", "0.0.0.0", "--port", "0", "--keep-malloc-threshold"]) == 0
    for host, status in [("192.0.2.7:8080", 200), ("[2001:db8::1]", 200), ("evil.example", 400)]:
        with TestClient(captured["app"], base_url=f"http://{host}") as c:
            assert c.get("/health").status_code == status, host


def test_two_services_started_at_once_on_one_port() -> None:
    """Both bind (SO_REUSEADDR allows it while neither listens); the second learns at listen() that the port
    is taken, and says so as a user error, instead of uvicorn failing after the model loaded."""
    from sentcl.serve.server import bind, listen

    first = bind("127.0.0.1", 0)
    port = first.getsockname()[1]
    second = bind("127.0.0.1", port)
    try:
        listen(first, "127.0.0.1")
        with pytest.raises(
            ValueError, match=f"cannot listen on 127.0.0.1:{port}: the address is already in use"
        ):
            listen(second, "127.0.0.1")
        with pytest.raises(ValueError, match="already in use"):
            bind("127.0.0.1", port)
    finally:
        first.close()
        second.close()


def test_connections_fit_the_open_file_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The open-file limit is faked (a process cannot raise its hard limit back after lowering it)."""
    import resource

    from sentcl.serve.server import FD_MARGIN, fit_connections

    limits = {"soft": 512, "hard": 512}

    def setrlimit(kind: int, value: tuple[int, int]) -> None:
        assert kind == resource.RLIMIT_NOFILE
        if value[1] != limits["hard"] or value[0] > value[1]:
            raise ValueError("not allowed")
        limits["soft"] = value[0]

    monkeypatch.setattr(resource, "getrlimit", lambda kind: (limits["soft"], limits["hard"]))
    monkeypatch.setattr(resource, "setrlimit", setrlimit)
    assert fit_connections(1000) == 512 - FD_MARGIN  # soft = hard: nothing to raise to
    assert fit_connections(100) == 100
    limits.update(soft=256, hard=4096)  # raised toward the hard limit where needed
    assert fit_connections(300) == 300 and limits["soft"] == 300 + FD_MARGIN


def test_free_memory_is_released_after_passes(captured: dict[str, Any], tiny_bert: Path) -> None:
    """By default every pass ends with ``PeriodicRelease.maybe`` (free heap pages back to the system once a
    second; also once the resident set grew by ``--release-budget-mb`` where given); ``--keep-malloc-threshold``
    leaves the allocator alone."""
    from sentcl.training.allocator import PeriodicRelease

    assert main(["serve", str(tiny_bert), "--pooler", "avg", "--port", "0", "--keep-malloc-threshold"]) == 0
    assert captured["app"].state.service.after_pass is None
    assert main(["serve", str(tiny_bert), "--pooler", "avg", "--port", "0"]) == 0
    release = captured["app"].state.service.after_pass.__self__
    assert isinstance(release, PeriodicRelease) and release.interval_s == 1.0 and release.last is None
    assert release.budget_bytes is None
    with TestClient(captured["app"], base_url=LOCAL) as c:
        assert c.post("/embed", json={"inputs": ["a dog", "the cat sits"]}).status_code == 200
    assert release.last is not None, "the pass ran the release"
    assert main(["serve", str(tiny_bert), "--pooler", "avg", "--port", "0", "--release-budget-mb", "8"]) == 0
    release = captured["app"].state.service.after_pass.__self__
    assert release.budget_bytes == 8 * 2**20
    with TestClient(captured["app"], base_url=LOCAL) as c:
        assert c.post("/embed", json={"inputs": ["a dog"]}).status_code == 200
    assert release.floor is not None and release.floor > 0, "the resident set was read after the release"


@pytest.mark.parametrize(("threads", "workers", "per_worker"), [("4", "2", 2), ("2", None, 1), ("3", "1", 3)])
def test_workers_share_the_threads(
    captured: dict[str, Any], tiny_bert: Path, threads: str, workers: str | None, per_worker: int
) -> None:
    """``--workers`` encode threads (default one per ``--threads``), PyTorch set to each one's share."""
    import torch

    before = torch.get_num_threads()
    argv = ["serve", str(tiny_bert), "--pooler", "avg", "--keep-malloc-threshold", "--port", "0"]
    argv += ["--threads", threads, *(["--workers", workers] if workers else [])]
    try:
        assert main(argv) == 0
        assert torch.get_num_threads() == per_worker
    finally:
        torch.set_num_threads(before)
    with TestClient(captured["app"], base_url=LOCAL) as c:
        assert c.get("/info").json()["limits"]["workers"] == int(workers or threads)
        assert c.post("/embed", json={"inputs": ["a dog", "the cat sits"]}).status_code == 200


def test_idle_connections_are_held_longer_than_clients_pools_hold_them(
    captured: dict[str, Any], tiny_bert: Path
) -> None:
    """The client closes an idle kept-alive connection first, so no request is sent into a server's close
    (one request of 4,500 got no answer when both sides idled out at 5 s): the default outlasts httpx's pool."""
    import httpx

    assert main(["serve", str(tiny_bert), "--port", "0", "--keep-malloc-threshold"]) == 0
    assert captured["timeout_keep_alive"] > httpx.Limits().keepalive_expiry + 10
