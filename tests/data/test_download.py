"""sentcl download against a real HTTP server on 127.0.0.1: resume, checksums, safe unpacking, offline errors."""

from __future__ import annotations

import functools
import hashlib
import io
import logging
import socket
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.archives import tar_archive
from helpers.http_mirror import Mirror, serving

from sentcl.cli import main
from sentcl.data import download as dl
from sentcl.data import fetch as transfer
from sentcl.data.archives import UnsafeArchiveError
from sentcl.data.download import DownloadError, Source, download

MARKER = "STS/STSBenchmark/sts-dev.csv"


@pytest.fixture()
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Mirror]:
    monkeypatch.setattr(transfer, "TIMEOUT_S", 5.0)
    monkeypatch.setattr(transfer, "CHUNK", 64)  # several reads per file, so a drop lands mid-transfer
    with serving() as mirror:
        yield mirror


def _file_source(server: Mirror, name: str, body: bytes, sha: str | None = None) -> dict[str, Source]:
    server.files[name] = body
    return {"wiki1m": Source("wiki1m", f"{server.base}/{name}", sha, f"corpora/{name}")}


_tar_gz = functools.partial(tar_archive, compression="gz")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


BODY = b"".join(f"sentence number {i} of the corpus .\n".encode() for i in range(200))


def test_plain_file_pinned_sum(server: Mirror, tmp_path: Path) -> None:
    sources = _file_source(server, "wiki.txt", BODY, _sha(BODY))
    (path,) = download(["wiki1m"], tmp_path, sources)
    assert path == tmp_path / "corpora" / "wiki.txt" and path.read_bytes() == BODY
    assert not list((tmp_path / ".downloads").glob("*.part"))
    download(["wiki1m"], tmp_path, sources)  # already there: no second request
    assert len(server.ranges) == 1


def test_checksum_mismatch_is_an_error_and_leaves_nothing(server: Mirror, tmp_path: Path) -> None:
    sources = _file_source(server, "wiki.txt", BODY, _sha(b"something else"))
    with pytest.raises(DownloadError, match=r"checksum mismatch for http://127\.0\.0\.1:\d+/wiki\.txt"):
        download(["wiki1m"], tmp_path, sources)
    assert not (tmp_path / "corpora" / "wiki.txt").exists()
    assert not list((tmp_path / ".downloads").iterdir())  # the bad bytes are not kept for a resume


def test_trust_on_first_use_records_then_checks(
    server: Mirror, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sources = _file_source(server, "wiki.txt", BODY)
    with caplog.at_level(logging.WARNING, logger="sentcl.data.download"):
        download(["wiki1m"], tmp_path, sources)
    pins = (tmp_path / ".downloads" / "SHA256SUMS").read_text()
    assert pins == f"{_sha(BODY)}  wiki.txt\n"
    assert "trust on first use" in caplog.text and _sha(BODY) in caplog.text
    server.files["wiki.txt"] = BODY + b"tampered\n"  # the file changes upstream
    with pytest.raises(DownloadError, match=r"checksum mismatch .*SHA256SUMS"):
        download(["wiki1m"], tmp_path, sources, force=True)
    assert (tmp_path / "corpora" / "wiki.txt").read_bytes() == BODY  # the installed copy is untouched


def test_killed_transfer_resumes_with_range(server: Mirror, tmp_path: Path) -> None:
    sources = _file_source(server, "wiki.txt", BODY, _sha(BODY))
    server.drop_after["wiki.txt"] = 1000
    with pytest.raises(DownloadError, match="broke off after 1000 bytes|ended at 1000 of"):
        download(["wiki1m"], tmp_path, sources)
    part = tmp_path / ".downloads" / "wiki.txt.part"
    assert part.read_bytes() == BODY[:1000]
    assert not (tmp_path / "corpora" / "wiki.txt").exists()  # nothing half-written in place
    download(["wiki1m"], tmp_path, sources)
    assert server.ranges == [None, "bytes=1000-"]
    assert (tmp_path / "corpora" / "wiki.txt").read_bytes() == BODY and not part.exists()


def test_server_ignoring_range_restarts_from_zero(server: Mirror, tmp_path: Path) -> None:
    sources = _file_source(server, "wiki.txt", BODY, _sha(BODY))
    server.mode = "norange"
    part = tmp_path / ".downloads" / "wiki.txt.part"
    part.parent.mkdir()
    part.write_bytes(b"garbage that must not be kept")
    download(["wiki1m"], tmp_path, sources)
    assert server.ranges == ["bytes=29-"]
    assert (tmp_path / "corpora" / "wiki.txt").read_bytes() == BODY  # 200 answer: written from byte 0


@pytest.mark.parametrize("kind", ["tar.gz", "zip"])
def test_archive_unpacked_into_layout(server: Mirror, tmp_path: Path, kind: str) -> None:
    members = {f"downstream/{MARKER}": b"dev\n", "downstream/SICK/SICK_trial.txt": b"sick\n"}
    server.files[f"se.{kind}"] = _tar_gz(members) if kind == "tar.gz" else _zip(members)
    sources = {"senteval": Source("senteval", f"{server.base}/se.{kind}", None, "senteval", kind, MARKER)}
    download(["senteval"], tmp_path, sources)
    assert (tmp_path / "senteval" / MARKER).read_bytes() == b"dev\n"
    assert (tmp_path / "senteval" / "SICK" / "SICK_trial.txt").read_bytes() == b"sick\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".downloads", "senteval"]  # no staging left


@pytest.mark.parametrize(
    ("kind", "make", "why"),
    [
        ("tar.gz", lambda: _tar_gz({MARKER: b"x", "../evil": b"owned"}), "'../evil' points outside"),
        ("zip", lambda: _zip({MARKER: b"x", "../evil": b"owned"}), "'../evil' points outside"),
        ("tar.gz", lambda: _tar_gz({MARKER: b"x", "/tmp/evil": b"owned"}), "'/tmp/evil' points outside"),
        ("tar.gz", lambda: _tar_gz({MARKER: b"x"}, {"STS/link": "../../../evil"}), "outside the target"),
        ("tar.gz", lambda: _tar_gz({MARKER: b"x"}, {"STS/link": "/etc/passwd"}), "absolute path"),
        ("tar.gz", lambda: _tar_gz({MARKER: b"x"}, hard={"STS/hard": "../evil"}), "outside the target"),
    ],
)
def test_malicious_archive_refused(server: Mirror, tmp_path: Path, kind: str, make, why: str) -> None:  # noqa: ANN001
    server.files[f"se.{kind}"] = make()
    data = tmp_path / "data"
    sources = {"senteval": Source("senteval", f"{server.base}/se.{kind}", None, "senteval", kind, MARKER)}
    with pytest.raises(UnsafeArchiveError, match=f"refusing the archive: .*{why}"):
        download(["senteval"], data, sources)
    assert not (tmp_path / "evil").exists() and not (data / "evil").exists()
    assert not (data / "senteval").exists()
    assert [p.name for p in data.iterdir()] == [".downloads"]
    assert not [p for p in (data / ".downloads").iterdir() if p.name != "SHA256SUMS"]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_offline_error_names_url_and_manual_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mirror = f"http://127.0.0.1:{_closed_port()}"
    code = main(["download", "nli", "--data-dir", str(tmp_path), "--mirror", mirror])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert f"cannot reach {mirror}/nli_for_simcse.csv" in err
    assert f"save it as {tmp_path / 'corpora' / 'nli_for_simcse.csv'}" in err


def test_cli_downloads_through_a_mirror(
    server: Mirror, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.files["wiki1m_for_simcse.txt"] = BODY
    assert main(["download", "wiki1m", "--data-dir", str(tmp_path / "d"), "--mirror", server.base]) == 0
    assert (tmp_path / "d" / "corpora" / "wiki1m_for_simcse.txt").read_bytes() == BODY
    assert "wiki1m:" in capsys.readouterr().out


def test_table_targets_are_what_train_and_eval_read() -> None:
    """After a download, configs/unsup_simcse_bert_base.yaml finds its training file and STS-B dev."""
    import yaml

    config = yaml.safe_load(
        (Path(__file__).parents[2] / "configs" / "unsup_simcse_bert_base.yaml").read_text()
    )
    assert dl.SOURCES["wiki1m"].target == config["data"]["train_file"]
    assert dl.SOURCES["senteval"].marker == "STS/STSBenchmark/sts-dev.csv"  # what stsb_dev reads
    assert all(s.url.startswith("https://") for s in dl.SOURCES.values())


def test_http_error_names_url_and_manual_step(server: Mirror, tmp_path: Path) -> None:
    sources = {"nli": Source("nli", f"{server.base}/missing.csv", None, "corpora/nli_for_simcse.csv")}
    with pytest.raises(
        DownloadError, match=r"missing\.csv: HTTP 404 .*save it as .*corpora/nli_for_simcse\.csv"
    ):
        download(["nli"], tmp_path, sources)
    assert not (tmp_path / "corpora").exists()


def test_offline_error_names_every_failed_download_and_the_mirror(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Offline, every named download is tried: the one error line names each that failed, and --mirror."""
    mirror = f"http://127.0.0.1:{_closed_port()}"
    code = main(["download", "nli", "wiki1m", "--data-dir", str(tmp_path), "--mirror", mirror])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "2 of 2 downloads failed" in err
    assert (
        f"cannot reach {mirror}/nli_for_simcse.csv" in err
        and f"cannot reach {mirror}/wiki1m_for_simcse.txt" in err
    )
    assert "--mirror URL" in err and "$SENTCL_DOWNLOAD_MIRROR" in err


def test_a_failed_download_does_not_stop_the_next(
    server: Mirror, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The mirror lacks nli's file (HTTP 404): wiki1m, named after it, is still installed, and the error says so."""
    server.files["wiki1m_for_simcse.txt"] = BODY
    code = main(["download", "nli", "wiki1m", "--data-dir", str(tmp_path / "d"), "--mirror", server.base])
    err = capsys.readouterr().err
    assert code == 2
    assert (tmp_path / "d" / "corpora" / "wiki1m_for_simcse.txt").read_bytes() == BODY
    assert "1 of 2 downloads failed (wiki1m installed): nli: " in err and "HTTP 404" in err
    assert not (tmp_path / "d" / "corpora" / "nli_for_simcse.csv").exists()
