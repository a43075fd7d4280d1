"""I/O faults: input paths that are not regular readable files, outputs the OS
refuses, standard output closed or full, downloads that end early or resume wrong, ragged tables.

The ``Case`` rows run the real CLI in-process (``harness.py``). Rows that need the OS to refuse for real run
so: a file-size limit (``RLIMIT_FSIZE``, lowered around the call and restored; Python ignores SIGXFSZ, so a
write past it fails with EFBIG), permissions in a subprocess under ``setpriv`` without the capabilities that
let root bypass them, a closed pipe and /dev/full as a real child's standard output. Downloads go to a
local HTTP server (loopback only) with modes that cut the body without a length, ignore Range, or answer a
range past the end with an empty 206.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml
from harness import Case, parametrize, run_case
from helpers.archives import tar_archive
from helpers.data import tiny_recipe, write, write_corpus
from helpers.http_mirror import Mirror, serving

from sentcl.cli import SIGPIPE_EXIT, main
from sentcl.data import fetch as transfer
from sentcl.data.download import DownloadError, Source, download
from sentcl.data.readers import DataFormatError
from sentcl.data.scored_pairs import read_scored_pairs, read_stsb_pairs

ENV: dict[str, Path] = {}
SRC = Path(__file__).parents[2] / "src"


@pytest.fixture(autouse=True)
def _env(tiny_bert: Path, data_dir: Path) -> None:
    ENV.update(model=tiny_bert, data=data_dir)


def fifo(folder: Path, name: str) -> Path:
    os.mkfifo(folder / name)
    return folder / name


def loop(folder: Path, name: str) -> Path:
    os.symlink(name, folder / name)  # a link to itself: stat() fails with ELOOP
    return folder / name


def dangling(folder: Path, name: str) -> Path:
    (folder / name).symlink_to(folder / "nowhere.txt")
    return folder / name


def beir_with_fifo_qrels(folder: Path) -> Path:
    write(folder, "b/corpus.jsonl", '{"_id": "d1", "text": "a"}\n')
    write(folder, "b/queries.jsonl", '{"_id": "q1", "text": "a"}\n')
    (folder / "b" / "qrels").mkdir()
    fifo(folder / "b" / "qrels", "test.tsv")
    return folder / "b"


def model(*argv: str) -> list[str]:
    return [*argv, "--model", str(ENV["model"])]


def train_on(make: Callable[[Path, str], Path]) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        sections = tiny_recipe(ENV["model"], ENV["data"], make(folder, "t_fifo"), folder / "run")
        config = write(folder, "recipe.yaml", yaml.safe_dump(sections))
        return ["train", "--config", str(config)]

    return setup


def nothing_written(name: str) -> Callable[[Path, str], None]:
    def check(folder: Path, printed: str) -> None:
        assert ".tmp-" not in printed, printed  # the user's path, never a temporary name
        assert not [p for p in Path(name).parent.iterdir() if p.name.startswith(".tmp-")]

    return check


# ---------------------------------------------------------------------- inputs that are not regular files

INPUT_CASES = [
    Case(
        "F08",
        lambda f: [*model("encode"), "--input", str(fifo(f, "fifo")), "--output", str(f / "o.npy")],
        r"argument --input: .*fifo is a FIFO \(named pipe\), not a regular file",
    ),
    Case(
        "F09",
        lambda f: [*model("encode"), "--input", str(loop(f, "loop")), "--output", str(f / "o.npy")],
        r"argument --input: .*loop is a symbolic link loop",
    ),
    Case(
        "F09-dangling-link",
        lambda f: [*model("encode"), "--input", str(dangling(f, "gone")), "--output", str(f / "o.npy")],
        r"argument --input: .*gone is a symbolic link to .*nowhere\.txt, which does not exist",
    ),
    Case(
        "F08-sharded-encode",
        lambda f: [
            *model("encode"),
            "--input",
            str(fifo(f, "in")),
            "--output",
            str(f / "sh"),
            "--shard-size",
            "2",
        ],
        r"argument --input: .*in is a FIFO",
    ),
    Case(
        "F08-eval-pairs",
        lambda f: [*model("eval"), "--pairs", str(fifo(f, "p.tsv"))],
        r"p\.tsv is a FIFO",
    ),
    Case(
        "F09-eval-retrieval",
        lambda f: [*model("eval"), "--retrieval", str(loop(f, "beir"))],
        r"argument --retrieval: .*beir is a symbolic link loop",
    ),
    Case(
        "F08-eval-retrieval-qrels",
        lambda f: [*model("eval"), "--retrieval", str(beir_with_fifo_qrels(f))],
        r"qrels/test\.tsv is a FIFO",
    ),
    Case(
        "F08-search-corpus",
        lambda f: [*model("search"), "--corpus", str(fifo(f, "c.txt")), "--query", "a"],
        r"argument --corpus: .*c\.txt is a FIFO",
    ),
    Case(
        "F09-mine-pairs",
        lambda f: [*model("mine"), "--pairs", str(loop(f, "p.csv")), "--output", str(f / "o.csv")],
        r"argument --pairs: .*p\.csv is a symbolic link loop",
    ),
    Case(
        "F08-mine-corpus",
        lambda f: [
            *model("mine"),
            "--pairs",
            str(write(f, "p.csv", "anchor,positive\na b,a c\nd e,d f\n")),
            "--corpus",
            str(fifo(f, "extra.txt")),
            "--output",
            str(f / "o.csv"),
        ],
        r"extra\.txt is a FIFO",
    ),
    Case(
        "F08-index-embeddings",
        lambda f: ["index", "build", "--embeddings", str(fifo(f, "emb")), "--output", str(f / "idx")],
        r"argument --embeddings: .*emb is a FIFO \(named pipe\), not a folder",
    ),
    Case(
        "F09-index-info",
        lambda f: ["index", "info", str(loop(f, "idx"))],
        r"argument folder: .*idx is a symbolic link loop",
    ),
    Case(
        "F08-build-nli-folder",
        lambda f: ["build-nli", "--senteval-snli", str(fifo(f, "snli")), "--output", str(f / "o.csv")],
        r"argument --senteval-snli: .*snli is a FIFO",
    ),
    Case(
        "F08-report-source",
        lambda f: ["report", str(fifo(f, "run")), "--output", str(f / "rep")],
        r"argument RUN_DIR: .*run is a FIFO \(named pipe\), not a folder",
    ),
    Case("T11", train_on(fifo), r"(training file|data.train_file) .*t_fifo is a FIFO"),
    Case(
        "T11-link-loop", train_on(loop), r"(training file|data.train_file) .*t_fifo is a symbolic link loop"
    ),
    Case(
        "F08-train-config",
        lambda f: ["train", "--config", str(fifo(f, "recipe.yaml"))],
        r"recipe\.yaml is a FIFO",
    ),
    Case(
        "F12",
        lambda f: [
            *model("encode"),
            "--input",
            str(write(f, "two.txt", "a\nb\n")),
            "--output",
            "/proc/sentcl_o.npy",
        ],
        r"cannot write --output /proc/sentcl_o\.npy: No such file or directory",
        code=1,
        check=nothing_written("/proc/sentcl_o.npy"),
    ),
    Case(
        "F12-sharded",
        lambda f: [
            *model("encode"),
            "--input",
            str(write(f, "two.txt", "a\nb\n")),
            "--output",
            "/proc/sentcl_sh",
            "--shard-size",
            "1",
        ],
        r"cannot write --output /proc/sentcl_sh: ",
        code=1,
    ),
    Case(
        "F12-output-is-device",
        lambda f: [
            *model("encode"),
            "--input",
            str(write(f, "two.txt", "a\nb\n")),
            "--output",
            str(fifo(f, "o.npy")),
        ],
        r"--output .*o\.npy is a FIFO",
    ),
]


@parametrize(INPUT_CASES)
def test_input_and_output_paths(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    printed = run_case(case, tmp_path, capsys)
    assert "does not exist" not in printed or "symbolic link to" in printed  # never "missing" for what exists


# ---------------------------------------------------------------------- ragged tables


def eval_pairs(name: str, text: str) -> Callable[[Path], list[str]]:
    return lambda f: [*model("eval"), "--pairs", str(write(f, name, text))]


def eval_beir(qrels: str, corpus: str = '{"_id": "d1", "text": "a"}\n') -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        write(folder, "b/corpus.jsonl", corpus)
        write(folder, "b/queries.jsonl", '{"_id": "q1", "text": "a"}\n')
        write(folder, "b/qrels/test.tsv", "query-id\tcorpus-id\tscore\n" + qrels)
        return [*model("eval"), "--retrieval", str(folder / "b")]

    return setup


TABLE_CASES = [
    Case(
        "P01",  # an extra tab inside sentence 2 of a score-first file: it used to cut the sentence to 'A cat'
        eval_pairs(
            "p_ragged.tsv",
            "score\tsentence1\tsentence2\n4.0\tA cat sits\tA cat\tis sitting\n1.0\tA dog\tA plane\n3\ta b\ta c\n",
        ),
        r"p_ragged\.tsv:2: the row has 4 fields, the header has 3 \(a tab inside a field\?\)",
    ),
    Case(
        "P01-csv-no-header",
        eval_pairs("p.csv", "a cat,a dog,1\nthe sun,the moon,2\nred,blue,green,3\n"),
        r"p\.csv:3: the row has 4 fields, line 1 has 3 \(a comma inside a field\?\)",
    ),
    Case(
        "P01-short-row",  # a row lacking a column the reader does not use is still an error
        eval_pairs("p.tsv", "s1\ts2\tscore\tnote\na\tb\t1\tx\nc\td\t2\n"),
        r"p\.tsv:3: the row has 3 fields, the header has 4 \(a missing field\?\)",
    ),
    Case(
        "P03",
        eval_pairs(
            "p_duphdr.csv", "s1,s2,score,score\nA cat,A cat sits,4,1\nA dog,A plane,1,4\nx y,x z,3,3\n"
        ),
        r"p_duphdr\.csv:1: the header names column 'score' twice \(columns 3 and 4\)",
    ),
    Case(
        "P03-any-case",
        eval_pairs("p.tsv", "Sentence1\tsentence1\tsentence2\tscore\na\tb\tc\t1\nd\te\tf\t2\n"),
        r"p\.tsv:1: the header names column 'sentence1' twice",
    ),
    Case(
        "P03-mine-pairs",
        lambda f: [
            *model("mine"),
            "--pairs",
            str(write(f, "p.csv", "anchor,positive,Anchor\na,b,c\n")),
            "--output",
            str(f / "o.csv"),
        ],
        r"p\.csv:1: the header names column 'Anchor' twice",
    ),
    Case(
        "P01-qrels",
        eval_beir("q1\td1\t1\textra\n"),
        r"qrels/test\.tsv:2: the row has 4 fields, the header has 3",
    ),
    Case(
        "P03-jsonl-repeated-key",
        eval_beir("q1\td1\t1\n", '{"_id": "d1", "text": "first", "text": "second"}\n'),
        r"corpus\.jsonl:1: key 'text' appears twice",
    ),
]


@parametrize(TABLE_CASES)
def test_tables(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_case(case, tmp_path, capsys)


def test_scored_pairs_for_training_refuse_ragged_rows(tmp_path: Path) -> None:
    ragged = write(tmp_path, "train.tsv", "sentence1\tsentence2\tscore\na b\tc d\t1\ne f\tg\th\t2\n")
    with pytest.raises(DataFormatError, match=r"train\.tsv:3: the row has 4 fields, the header has 3"):
        read_scored_pairs(ragged)
    duplicated = write(tmp_path, "dup.csv", "sentence1,sentence2,score,score\na,b,1,2\nc,d,2,1\n")
    with pytest.raises(DataFormatError, match=r"names column 'score' twice"):
        read_scored_pairs(duplicated)


def test_stsb_layout_keeps_its_trailing_notes(tmp_path: Path) -> None:
    """STS-B's own layout carries notes after sentence 2 on some lines: still read, the sentences whole."""
    rows = [
        "g\tf\t2012\t1\t4.5\tA man plays.\tA man is playing.\tnote\tmore",
        "g\tf\t2012\t2\t1.0\tA cat.\tA dog.",
    ]
    corpus = read_stsb_pairs(write(tmp_path, "sts.csv", "\n".join(rows) + "\n"))
    assert corpus.examples == [("A man plays.", "A man is playing.", 4.5), ("A cat.", "A dog.", 1.0)]


# ---------------------------------------------------------------------- the OS refuses a write


@contextlib.contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def one_error(err: str) -> str:
    lines = [line for line in err.splitlines() if ": error: " in line]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_d07_efbig_while_writing_the_npy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = write_corpus(tmp_path / "c.txt", 300)
    out = tmp_path / "o_efbig.npy"
    with file_size_limit(16_384):  # 300 x 32 float32 = 38 400 bytes
        code = main([*model("encode"), "--input", str(corpus), "--output", str(out)])
    line = one_error(capsys.readouterr().err)
    assert code == 1 and line == f"sentcl encode: error: {out}: File too large"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt"]  # nothing half-written, no temporary
    assert main([*model("encode"), "--input", str(corpus), "--output", str(out)]) == 0
    assert np.load(out).shape == (300, 32)


def test_d08_efbig_on_a_shard_then_rerun(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = write_corpus(tmp_path / "c.txt", 300)
    out = tmp_path / "sh"
    argv = [*model("encode"), "--input", str(corpus), "--output", str(out), "--shard-size", "100"]
    with file_size_limit(8_192):  # a shard is 100 x 32 float32 = 12 800 bytes
        code = main(argv)
    line = one_error(capsys.readouterr().err)
    assert code == 1 and line == f"sentcl encode: error: {out / 'shard-00000.npy'}: File too large"
    assert not [p for p in out.iterdir() if p.name.startswith(".tmp-") or p.suffix == ".npy"]
    assert main(argv) == 0  # the rerun without the limit completes, equal to a fresh run
    assert main([*argv[:-4], "--output", str(tmp_path / "fresh"), "--shard-size", "100"]) == 0
    for shard in ("shard-00000.npy", "shard-00001.npy", "shard-00002.npy"):
        np.testing.assert_allclose(np.load(out / shard), np.load(tmp_path / "fresh" / shard), atol=1e-6)


@pytest.fixture()
def shards(tmp_path: Path) -> Path:
    corpus = write_corpus(tmp_path / "c.txt", 300)
    assert (
        main(
            [
                *model("encode"),
                "--input",
                str(corpus),
                "--output",
                str(tmp_path / "sh"),
                "--shard-size",
                "100",
            ]
        )
        == 0
    )
    return tmp_path / "sh"


def test_d09_efbig_writing_index_faiss(shards: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = shards.parent / "idx_efbig"
    capsys.readouterr()
    with file_size_limit(16_384):  # index.faiss of 300 x 32 float32 is > 38 400 bytes
        code = main(["index", "build", "--embeddings", str(shards), "--type", "flat", "--output", str(out)])
    line = one_error(capsys.readouterr().err)
    assert code == 1 and line == f"sentcl index: error: {out / 'index.faiss'}: File too large"
    assert not [p for p in shards.parent.iterdir() if "idx_efbig" in p.name or p.name.startswith(".tmp-")]


NO_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
CHILD = """
import contextlib, io, json, sys
from sentcl.cli import main
results = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:  # refused by the option's reader (argparse)
            code = exit_.code
    results.append([code, err.getvalue()])
print(json.dumps(results))
"""


def run_without_dac(argvs: list[list[str]], cwd: Path) -> list[tuple[int, str]]:
    """Run each argv through sentcl's main in one child that is root without the capabilities that bypass
    file permissions, so chmod 000 / 555 refuse for real."""
    assert shutil.which("setpriv"), "setpriv (util-linux) is needed to drop root's permission bypass"
    env = os.environ | {"PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [*NO_DAC, sys.executable, "-c", CHILD, json.dumps(argvs)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return [tuple(r) for r in json.loads(done.stdout.strip().splitlines()[-1])]


def test_permissions_f10_f11_e02_d10(shards: Path) -> None:
    folder = shards.parent
    write(folder, "two.txt", "a\nb\n")
    (folder / "unread.txt").write_text("a\n")
    (folder / "unread.txt").chmod(0o000)
    (folder / "rodir").mkdir()
    (folder / "rodir").chmod(0o555)
    tiny = str(ENV["model"])
    argvs = [
        ["encode", "--model", tiny, "--input", "unread.txt", "--output", "o.npy"],  # F10
        ["encode", "--model", tiny, "--input", "two.txt", "--output", "rodir/o.npy"],  # F11
        [
            "encode",
            "--model",
            tiny,
            "--input",
            "two.txt",
            "--output",
            "rodir/shards",
            "--shard-size",
            "1",
        ],  # E02
        ["index", "build", "--embeddings", "sh", "--type", "flat", "--output", "rodir/idx"],  # D10
        ["eval", "--model", tiny, "--pairs", "unread.txt"],  # F10 for another command
    ]
    try:
        results = run_without_dac(argvs, folder)
    finally:
        (folder / "rodir").chmod(0o755)
    lines = [(code, one_error(err)) for code, err in results]
    assert lines[0] == (
        2,
        "sentcl encode: error: argument --input: unread.txt cannot be read: permission denied",
    )
    assert lines[1] == (
        1,
        "sentcl encode: error: cannot write --output rodir/o.npy: Permission denied (in rodir)",
    )
    assert lines[2] == (
        1,
        "sentcl encode: error: cannot write --output rodir/shards: Permission denied (in rodir)",
    )
    assert lines[3] == (
        1,
        "sentcl index: error: cannot write --output rodir/idx: Permission denied (in rodir)",
    )
    assert lines[4] == (
        2,
        "sentcl eval: error: argument --pairs: unread.txt cannot be read: permission denied",
    )
    assert not list((folder / "rodir").iterdir())


# ---------------------------------------------------------------------- standard output closed or full


def sentcl_child(argv: list[str], stdout: int) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "sentcl.cli", *argv],
        stdout=stdout,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        timeout=300,
    )


@pytest.fixture()
def built_index(shards: Path) -> Path:
    assert main(["index", "build", "--embeddings", str(shards), "--type", "flat"]) == 0
    return shards / "index-flat"


@pytest.mark.slow
def test_i02_stdout_closed_early(built_index: Path) -> None:
    """``sentcl index info DIR | true``: the reader is gone before the first write (its end is closed)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = sentcl_child(["index", "info", str(built_index)], write_end)
    finally:
        os.close(write_end)
    assert done.returncode == SIGPIPE_EXIT, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert ": error: " not in done.stderr  # quiet, as `head` users expect


@pytest.mark.slow
def test_i02_head_reads_the_first_line(built_index: Path) -> None:
    env = os.environ | {"PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1"}
    shell = f"{sys.executable} -m sentcl.cli index info {built_index} 2>err.txt | head -1; echo rc=${{PIPESTATUS[0]}}"
    done = subprocess.run(
        ["bash", "-c", shell], cwd=built_index.parent, env=env, capture_output=True, text=True
    )
    assert done.stdout.splitlines()[0] == "{"
    assert done.stdout.splitlines()[-1] in ("rc=0", f"rc={SIGPIPE_EXIT}")
    assert "Traceback" not in (built_index.parent / "err.txt").read_text()


def test_i06_stdout_full(built_index: Path) -> None:
    with open("/dev/full", "w") as full:
        done = sentcl_child(["index", "info", str(built_index)], full.fileno())
    assert done.returncode == 1
    assert (
        one_error(done.stderr)
        == "sentcl index: error: cannot write to standard output: No space left on device"
    )
    assert "Exception ignored" not in done.stderr


# ---------------------------------------------------------------------- downloads


@pytest.fixture()
def mirror(monkeypatch: pytest.MonkeyPatch) -> Iterator[Mirror]:
    monkeypatch.setattr(transfer, "TIMEOUT_S", 5.0)
    with serving() as state:
        yield state


WIKI = b"".join(f"wikipedia sentence {i} of the test corpus .\n".encode() for i in range(400))
MARKER = "STS/STSBenchmark/sts-dev.csv"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pins(data_dir: Path) -> str:
    path = data_dir / ".downloads" / "SHA256SUMS"
    return path.read_text() if path.exists() else ""


GOOD_TAR = tar_archive({MARKER: b"dev\n", "SICK/SICK_trial.txt": b"sick\n", "MR/rt-polarity.pos": b"good\n"})


def test_w17_cut_without_length_is_not_installed_nor_pinned(
    mirror: Mirror, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real table (wiki1m: a text file of 1,000,000 lines) through the CLI, as a user would run it."""
    mirror.files["wiki1m_for_simcse.txt"] = WIKI
    mirror.mode = "cutnolen"
    data = tmp_path / "d_cutnolen"
    code = main(["download", "wiki1m", "--data-dir", str(data), "--mirror", mirror.base])
    line = one_error(capsys.readouterr().err)
    assert code == 2 and "is cut short: the server sent no length" in line
    assert not (data / "corpora" / "wiki1m_for_simcse.txt").exists() and pins(data) == ""


def test_w17_cut_at_a_line_end_caught_by_the_line_count(mirror: Mirror, tmp_path: Path) -> None:
    body = WIKI[: WIKI.index(b"\n", len(WIKI) // 2 - 10) + 1]  # the server's half ends on a newline
    mirror.files["w.txt"] = body + body  # the mirror cuts at len // 2: exactly ``body``
    mirror.mode = "cutnolen"
    source = {"w": Source("w", f"{mirror.base}/w.txt", None, "corpora/w.txt", lines=2 * body.count(b"\n"))}
    with pytest.raises(DownloadError, match=r"cut short: .*a text file of \d+ lines"):
        download(["w"], tmp_path, source)
    assert pins(tmp_path) == "" and not (tmp_path / "corpora" / "w.txt").exists()


def test_w17_unknown_completeness_installed_without_pin(
    mirror: Mirror, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    half = WIKI[: WIKI.index(b"\n", len(WIKI) // 2 - 10) + 1]
    mirror.files["w.txt"] = half + half
    mirror.mode = "cutnolen"
    source = {"w": Source("w", f"{mirror.base}/w.txt", None, "corpora/w.txt")}  # the table knows nothing
    with caplog.at_level("WARNING", logger="sentcl.data.download"):
        download(["w"], tmp_path, source)
    assert "cannot be verified" in caplog.text and "NOT recorded" in caplog.text
    assert pins(tmp_path) == ""  # never trusted: a later good download is not refused
    mirror.mode = "plain"
    download(["w"], tmp_path, source, force=True)
    assert (tmp_path / "corpora" / "w.txt").read_bytes() == half + half
    assert pins(tmp_path) == f"{sha(half + half)}  w.txt\n"


@pytest.mark.parametrize("mode", ["emptyrange", "plain", "norange"])
def test_w21_part_longer_than_the_file_restarts(mirror: Mirror, tmp_path: Path, mode: str) -> None:
    mirror.files["w.txt"] = WIKI
    mirror.mode = mode
    part = tmp_path / ".downloads" / "w.txt.part"
    part.parent.mkdir()
    part.write_bytes(WIKI + WIKI)  # a .part of twice the file
    source = {"w": Source("w", f"{mirror.base}/w.txt", None, "corpora/w.txt")}
    download(["w"], tmp_path, source)
    assert (tmp_path / "corpora" / "w.txt").read_bytes() == WIKI
    assert pins(tmp_path) == f"{sha(WIKI)}  w.txt\n" and not part.exists()


def senteval(mirror: Mirror, name: str, body: bytes) -> dict[str, Source]:
    mirror.files[name] = body
    return {"senteval": Source("senteval", f"{mirror.base}/{name}", None, "senteval", "tar", MARKER)}


def test_w08_refused_archive_leaves_no_pin(mirror: Mirror, tmp_path: Path) -> None:
    hostile = tar_archive({MARKER: b"x"}, {"STS/link": "../../../evil"})
    with pytest.raises(Exception, match="refusing the archive"):
        download(["senteval"], tmp_path, senteval(mirror, "se.tar", hostile))
    assert pins(tmp_path) == ""
    download(["senteval"], tmp_path, senteval(mirror, "se.tar", GOOD_TAR))  # W08: the genuine one is taken
    assert (tmp_path / "senteval" / MARKER).read_bytes() == b"dev\n"
    assert pins(tmp_path) == f"{sha(GOOD_TAR)}  se.tar\n"


def test_w15_cut_tar_is_refused_and_not_pinned(mirror: Mirror, tmp_path: Path) -> None:
    end_of_first_member = 512 + 512  # header + one block of data: a cut at a member boundary
    with pytest.raises(Exception, match=r"cut short \(no end-of-archive blocks"):
        download(["senteval"], tmp_path, senteval(mirror, "se.tar", GOOD_TAR[:end_of_first_member]))
    assert pins(tmp_path) == "" and not (tmp_path / "senteval").exists()
    assert not (tmp_path / ".downloads" / "se.tar").exists()
    download(["senteval"], tmp_path, senteval(mirror, "se.tar", GOOD_TAR))  # W15: the good archive
    assert pins(tmp_path) == f"{sha(GOOD_TAR)}  se.tar\n"


def test_w14_archive_without_marker_is_not_reused(mirror: Mirror, tmp_path: Path) -> None:
    with pytest.raises(Exception, match=r"archive has no STS/STSBenchmark/sts-dev\.csv"):
        download(["senteval"], tmp_path, senteval(mirror, "se.tar", tar_archive({"other.txt": b"x"})))
    assert not (tmp_path / ".downloads" / "se.tar").exists() and pins(tmp_path) == ""
    download(["senteval"], tmp_path, senteval(mirror, "se.tar", GOOD_TAR), force=True)
    assert (tmp_path / "senteval" / MARKER).read_bytes() == b"dev\n"


def test_w14_force_discards_a_cached_archive(mirror: Mirror, tmp_path: Path) -> None:
    cached = tmp_path / ".downloads" / "se.tar"
    cached.parent.mkdir()
    cached.write_bytes(tar_archive({"other.txt": b"x"}))  # left by an older run: no marker inside
    download(["senteval"], tmp_path, senteval(mirror, "se.tar", GOOD_TAR), force=True)
    assert (tmp_path / "senteval" / MARKER).read_bytes() == b"dev\n"


def test_pinned_sum_mismatch_says_how_to_recover(
    mirror: Mirror, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mirror.files["wiki1m_for_simcse.txt"] = WIKI
    argv = ["download", "wiki1m", "--data-dir", str(tmp_path), "--mirror", mirror.base]
    assert main(argv) == 0 and pins(tmp_path) == f"{sha(WIKI)}  wiki1m_for_simcse.txt\n"
    mirror.files["wiki1m_for_simcse.txt"] = WIKI + b"one more line .\n"  # changed upstream
    assert main([*argv, "--force"]) == 2  # --force alone still checks the recorded sum
    assert "run again with --forget-sum" in one_error(capsys.readouterr().err)
    assert main([*argv, "--forget-sum"]) == 0
    assert pins(tmp_path) == f"{sha(WIKI + b'one more line .' + bytes([10]))}  wiki1m_for_simcse.txt\n"


# ---------------------------------------------------------------------- the Korean [UNK] advice

KOREAN = [
    "한 남자가 기타를 치고 있다.",
    "한 여자가 말을 타고 있다.",
    "개가 공원에서 뛰고 있다.",
    "아이들이 축구를 하고 있다.",
    "남자가 음식을 요리하고 있다.",
    "고양이가 소파 위에서 자고 있다.",
]


def unk_share(tokenizer: object, sentences: list[str]) -> float:
    pieces = [t for s in sentences for t in tokenizer.tokenize(s)]  # type: ignore[attr-defined]
    return sum(t == tokenizer.unk_token for t in pieces) / len(pieces)  # type: ignore[attr-defined]


def advice(tokenizer: object, caplog: pytest.LogCaptureFixture) -> str:
    from sentcl.evaluation.pairs import warn_if_mangled

    caplog.clear()
    with caplog.at_level("WARNING", logger="sentcl.evaluation.pairs"):
        warn_if_mangled(tokenizer, KOREAN, "ko.tsv")
    return caplog.text


def test_korean_advice_on_minilm_is_measured(caplog: pytest.LogCaptureFixture) -> None:
    """all-MiniLM-L6-v2's vocabulary holds jamo, not syllables: strip_accents=False would make it worse."""
    from transformers import AutoTokenizer

    from sentcl.files.paths import resolve_model_path

    folder = resolve_model_path("all-MiniLM-L6-v2")
    loaded = AutoTokenizer.from_pretrained(folder)
    kept = AutoTokenizer.from_pretrained(folder, strip_accents=False)  # transformers' own way to flip it
    as_loaded, without_nfd = unk_share(loaded, KOREAN), unk_share(kept, KOREAN)
    assert as_loaded < 0.15 < 0.5 < without_nfd  # 5% -> 81% unknown tokens, on these sentences
    text = advice(loaded, caplog)
    assert f"as loaded: {100 * as_loaded:.0f}%, strip_accents=False: {100 * without_nfd:.0f}%" in text
    assert "0 pieces with Hangul syllables" in text and "Keep the tokenizer as it is" in text
    assert "Load the tokenizer with strip_accents=False" not in text


def test_korean_advice_for_a_syllable_vocabulary(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from transformers import BertTokenizerFast

    syllables = sorted({ch for s in KOREAN for ch in s if not ch.isspace()})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *syllables, *(f"##{ch}" for ch in syllables)]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    nfd = BertTokenizerFast(vocab=str(tmp_path / "vocab.txt"), do_lower_case=True)  # strips accents: NFD
    assert unk_share(nfd, KOREAN) > 0.75  # every piece but the full stops
    assert "Load the tokenizer with strip_accents=False." in advice(nfd, caplog)


def test_korean_advice_when_the_model_cannot_read_it(caplog: pytest.LogCaptureFixture) -> None:
    from transformers import AutoTokenizer

    english_only = AutoTokenizer.from_pretrained(str(ENV["model"]))  # the tiny BERT: English word pieces
    assert unk_share(english_only, KOREAN) > 0.75
    assert "this model cannot read the language" in advice(english_only, caplog)


def test_download_into_a_full_disk_names_the_file(
    mirror: Mirror, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A write refused while downloading is the disk's fault, not a broken transfer: no "resume" advice."""
    mirror.files["wiki1m_for_simcse.txt"] = WIKI
    with file_size_limit(4096):
        code = main(["download", "wiki1m", "--data-dir", str(tmp_path), "--mirror", mirror.base])
    line = one_error(capsys.readouterr().err)
    part = tmp_path / ".downloads" / "wiki1m_for_simcse.txt.part"
    assert code == 1 and line == f"sentcl download: error: {part}: File too large"
    assert pins(tmp_path) == "" and not (tmp_path / "corpora").exists()
