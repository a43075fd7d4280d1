"""A first run that works anywhere: the quickstart's command block run verbatim in an empty folder, and
``make demo``'s data step, both against a download mirror on 127.0.0.1 that serves a copy of the data folder's
files; the one path resolver (working folder first, then the data folder) and the missing-data errors that name
the ``sentcl download`` command."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from helpers.http_mirror import Mirror, serving
from hypothesis import given, settings
from hypothesis import strategies as st

from sentcl.config import TrainConfig, load_config
from sentcl.config.builtin import resolve_recipe
from sentcl.data.download import SOURCES
from sentcl.files.paths import DOWNLOAD_TARGETS, DataNotFoundError, data_file, download_command, user_file

ROOT = Path(__file__).resolve().parents[1]
EXTRA_LINES = b"".join(b"a later sentence of the full file %d.\n" % i for i in range(200))


def _senteval_tar(folder: Path) -> bytes:
    """The data folder's senteval/ as the tar SimCSE publishes: STS/, SICK/, ... at its top."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for child in sorted(folder.iterdir()):
            archive.add(child, arcname=child.name)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def mirror(data_dir: Path) -> Iterator[Mirror]:
    """The data folder's files under the names ``sentcl download`` asks for: the wiki1m file (its real prefix
    and more lines after it, as the 1M-line original has) and senteval.tar."""
    prefix = (data_dir / DOWNLOAD_TARGETS["wiki1m_prefix"]).read_bytes()
    with serving() as served:
        served.files["wiki1m_for_simcse.txt"] = prefix + EXTRA_LINES
        served.files["senteval.tar"] = _senteval_tar(data_dir / "senteval")
        yield served


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SENTCL_DATA", "SENTCL_DOWNLOAD_MIRROR")}
    pythonpath = os.pathsep.join(p for p in (str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH")) if p)
    return {**env, "PYTHONPATH": pythonpath, "OMP_NUM_THREADS": "1", "COLUMNS": "100", **extra}


def _make_demo_data(data: Path, mirror_url: str) -> subprocess.CompletedProcess[str]:
    """``make demo-data`` with the installed sentcl (``-o install``: the venv step is not run)."""
    command = [
        "make", "-s", "-C", str(ROOT), "-o", "install", "demo-data",
        f"SENTCL={sys.executable} -m sentcl.cli", f"SENTCL_DATA={data}",
    ]  # fmt: skip
    env = _env(SENTCL_DOWNLOAD_MIRROR=mirror_url)
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_data_step_fetches_what_the_demo_reads(
    tmp_path: Path, mirror: Mirror, data_dir: Path
) -> None:
    data = tmp_path / "fresh-data"
    done = _make_demo_data(data, mirror.base)
    assert done.returncode == 0, done.stderr
    cfg = load_config(TrainConfig, resolve_recipe("demo"))
    corpus = data / cfg.data.train_file
    assert (
        corpus.read_bytes() == (data_dir / DOWNLOAD_TARGETS["wiki1m_prefix"]).read_bytes()
    )  # the prefix only
    for rel in ("STS/STSBenchmark/sts-dev.csv", "SICK/SICK_test_annotated.txt", "STS/STS12-en-test"):
        original, fetched = data_dir / "senteval" / rel, data / "senteval" / rel
        assert fetched.exists(), rel
        if original.is_file():
            assert fetched.read_bytes() == original.read_bytes(), rel
    asked = len(mirror.ranges)
    again = _make_demo_data(data, mirror.base)
    assert again.returncode == 0 and len(mirror.ranges) == asked  # all there: nothing fetched again


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_data_offline_stops_with_one_line_naming_the_file_and_the_command(tmp_path: Path) -> None:
    data = tmp_path / "fresh-data"
    done = _make_demo_data(data, "http://127.0.0.1:9")  # the discard port: nothing listens
    assert done.returncode != 0
    ours = [line for line in done.stderr.splitlines() if line.startswith("sentcl")]
    assert len(ours) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert str(data / "corpora" / "wiki1m_prefix.txt") in ours[0]
    assert "sentcl download wiki1m_prefix" in ours[0]


def _quickstart_block() -> str:
    page = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    return re.search(r"```bash\n(.*?)```", page, re.S).group(1)


def _setup_blocks() -> dict[str, str]:
    """Each tutorial's block that makes the quickstart's model where it is missing (``[ -d ... ] ||``)."""
    found = {}
    for page in sorted((ROOT / "docs" / "tutorials").glob("*.md")):
        for block in re.findall(r"```bash\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
            if re.search(r"^\[ -d runs/quick/best \] \|\|", block, re.M):
                found[page.name] = block
    return found


@pytest.mark.slow
def test_quickstart_command_block_runs_verbatim_in_an_empty_folder(tmp_path: Path, mirror: Mirror) -> None:
    bin_dir, work = tmp_path / "bin", tmp_path / "empty"
    bin_dir.mkdir()
    work.mkdir()
    launcher = bin_dir / "sentcl"  # the installed command, for this checkout
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m sentcl.cli "$@"\n', encoding="utf-8")
    launcher.chmod(0o755)
    env = _env(SENTCL_DOWNLOAD_MIRROR=mirror.base, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(
        ["bash", "-e", "-c", _quickstart_block()],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (work / "sentcl-data" / "corpora" / "wiki1m_prefix.txt").is_file()
    assert np.load(work / "emb.npy").shape == (4, 384)
    hits = [line for line in done.stdout.splitlines() if "A man plays the guitar." in line or "music" in line]
    assert hits and "A man plays the guitar." in hits[0], done.stdout[-2000:]
    # then each tutorial's first step, verbatim, in a new shell in the same folder: it finds the quickstart's
    # model and sentences and makes nothing again (in an empty folder its lines are the quickstart's own)
    made = {p: p.stat().st_mtime_ns for p in (work / "runs/quick/results.json", work / "sentences.txt")}
    setups = _setup_blocks()
    assert len(setups) >= 5, setups
    for page, block in setups.items():
        again = subprocess.run(
            ["bash", "-e", "-c", block], cwd=work, env=env, capture_output=True, text=True, timeout=120
        )
        assert again.returncode == 0, f"{page}: {again.stderr[-2000:]}"
        assert "sentcl-data/senteval" in again.stdout, page
    assert {p: p.stat().st_mtime_ns for p in made} == made


def test_demo_recipe_reads_a_file_that_sentcl_download_provides() -> None:
    cfg = load_config(TrainConfig, resolve_recipe("demo"))
    assert download_command(cfg.data.train_file) == "sentcl download wiki1m_prefix"
    for name, source in SOURCES.items():  # one table: the downloader writes where the errors say
        assert DOWNLOAD_TARGETS[name] == source.target
    assert set(SOURCES) == set(DOWNLOAD_TARGETS)


@given(
    name=st.sampled_from(sorted(DOWNLOAD_TARGETS)),
    below=st.lists(
        st.from_regex(r"[A-Za-z0-9_.-]{1,8}", fullmatch=True).filter(lambda s: s not in (".", "..")),
        max_size=3,
    ),
)
def test_download_command_names_the_item_that_holds_a_path(name: str, below: list[str]) -> None:
    target = DOWNLOAD_TARGETS[name]
    inside = Path(target, *below) if not below or Path(target).suffix == "" else Path(target)
    assert download_command(inside) == f"sentcl download {name}"
    assert download_command(Path("elsewhere", *below)) is None


def test_a_missing_data_file_names_its_download_command(tmp_path: Path) -> None:
    for parts, name in (
        (("senteval", "STS", "STSBenchmark", "sts-dev.csv"), "senteval"),
        (("corpora", "wiki1m_prefix.txt"), "wiki1m_prefix"),
        (("corpora", "nli_for_simcse.csv"), "nli"),
    ):
        with pytest.raises(DataNotFoundError) as err:
            data_file(tmp_path, *parts)
        message = str(err.value)
        assert str(tmp_path.joinpath(*parts)) in message
        assert f"sentcl download {name} --data-dir {tmp_path}" in message
        assert "get_transfer_data" not in message and "\n" not in message


@settings(max_examples=30, deadline=None)
@given(
    rel=st.lists(st.from_regex(r"[a-z0-9_]{1,8}", fullmatch=True), min_size=1, max_size=3),
    in_work=st.booleans(),
    in_data=st.booleans(),
)
def test_a_relative_file_is_looked_up_in_the_working_folder_first(
    tmp_path_factory: pytest.TempPathFactory, rel: list[str], in_work: bool, in_data: bool
) -> None:
    """Against the rule written out by hand: working folder if it is there, else the data folder."""
    root = tmp_path_factory.mktemp("lookup")
    work, data = root / "work", root / "data"
    for base, present in ((work, in_work), (data, in_data)):
        base.mkdir()
        if present:
            (base / Path(*rel)).parent.mkdir(parents=True, exist_ok=True)
            (base / Path(*rel)).write_text(base.name, encoding="utf-8")
    old = Path.cwd()
    os.chdir(work)
    try:
        found = user_file(Path(*rel), data)
        expected = Path(*rel) if in_work else data / Path(*rel)
        assert found == expected
        if in_work or in_data:
            assert found.read_text(encoding="utf-8") == ("work" if in_work else "data")
        assert user_file(".", data) == data  # "." is the data folder, never the working folder
        assert user_file(work / Path(*rel), data) == work / Path(*rel)  # absolute: as given
    finally:
        os.chdir(old)


def test_wiki1m_prefix_from_a_server_that_ignores_range_reads_only_the_prefix(
    tmp_path: Path, data_dir: Path
) -> None:
    """A mirror that answers 200 with the whole file: only the prefix's bytes are read, and they are checked
    against the pinned sum (a different file is refused)."""
    from sentcl.data.download import DownloadError, download, with_mirror

    prefix = (data_dir / DOWNLOAD_TARGETS["wiki1m_prefix"]).read_bytes()
    with serving() as served:
        served.mode = "norange"
        served.files["wiki1m_for_simcse.txt"] = prefix + EXTRA_LINES
        (path,) = download(["wiki1m_prefix"], tmp_path / "a", with_mirror(SOURCES, served.base))
        assert path.read_bytes() == prefix
        served.files["wiki1m_for_simcse.txt"] = b"x" + prefix
        with pytest.raises(DownloadError, match="checksum mismatch"):
            download(["wiki1m_prefix"], tmp_path / "b", with_mirror(SOURCES, served.base))
    assert not (tmp_path / "b" / DOWNLOAD_TARGETS["wiki1m_prefix"]).exists()


def test_sentcl_experiment_writes_docs_results_only_in_a_checkout(tmp_path: Path) -> None:
    from sentcl.cli.experiment import default_output

    assert default_output(ROOT) == Path("docs/results")
    assert default_output(tmp_path) == Path("results")  # an empty folder: never ./docs
    (tmp_path / "docs" / "results").mkdir(parents=True)
    assert default_output(tmp_path) == Path("results")  # a docs/ of the user's own is not sentcl's checkout


def test_a_missing_data_folder_names_the_one_download_command_for_what_the_run_reads(tmp_path: Path) -> None:
    from sentcl.training.validation import check_files

    missing = tmp_path / "no-data"
    cfg = load_config(TrainConfig, resolve_recipe("demo"), [f"data.data_dir={missing}"])
    with pytest.raises(DataNotFoundError) as err:
        check_files(cfg)
    assert f"sentcl download wiki1m_prefix senteval --data-dir {missing};" in str(err.value)
    (tmp_path / "mine.txt").write_text("a sentence.\n", encoding="utf-8")
    old = Path.cwd()
    os.chdir(tmp_path)
    try:  # the corpus is in the working folder: only the evaluation files are named
        cfg = load_config(
            TrainConfig, resolve_recipe("demo"), [f"data.data_dir={missing}", "data.train_file=mine.txt"]
        )
        with pytest.raises(DataNotFoundError, match=r"sentcl download senteval --data-dir"):
            check_files(cfg)
    finally:
        os.chdir(old)


def test_without_sentcl_data_the_data_folder_is_the_users_cache_folder(
    tmp_path: Path, mirror: Mirror
) -> None:
    """The default data folder was ../shared/data relative to the working folder (this repository's layout):
    it is $XDG_CACHE_HOME/sentcl/data, else ~/.cache/sentcl/data, whatever the working folder."""
    home, xdg, here, there = tmp_path / "home", tmp_path / "xdg", tmp_path / "a", tmp_path / "b"
    for folder in (home, here, there):
        folder.mkdir()
    sentcl = [sys.executable, "-m", "sentcl.cli"]
    env = _env(SENTCL_DOWNLOAD_MIRROR=mirror.base, HOME=str(home))
    env.pop("XDG_CACHE_HOME", None)
    done = subprocess.run(
        [*sentcl, "download", "wiki1m_prefix"], cwd=here, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    placed = home / ".cache" / "sentcl" / "data" / DOWNLOAD_TARGETS["wiki1m_prefix"]
    assert placed.is_file() and f"wiki1m_prefix: {placed}" in done.stdout
    found = subprocess.run(
        [*sentcl, "download", "wiki1m_prefix"], cwd=there, env=env, capture_output=True, text=True
    )
    assert found.returncode == 0 and "already there" in found.stderr  # another working folder, the same data
    with_xdg = {**env, "XDG_CACHE_HOME": str(xdg)}
    done = subprocess.run(
        [*sentcl, "download", "wiki1m_prefix"], cwd=here, env=with_xdg, capture_output=True, text=True
    )
    assert done.returncode == 0 and (xdg / "sentcl" / "data" / DOWNLOAD_TARGETS["wiki1m_prefix"]).is_file()
    chosen = {**with_xdg, "SENTCL_DATA": str(tmp_path / "mine")}  # $SENTCL_DATA still wins
    done = subprocess.run(
        [*sentcl, "download", "wiki1m_prefix"], cwd=here, env=chosen, capture_output=True, text=True
    )
    assert done.returncode == 0 and (tmp_path / "mine" / DOWNLOAD_TARGETS["wiki1m_prefix"]).is_file()
