"""Bad data files: NLI csv, ``build-nli --output``, ``sentcl download``,
and the user's own evaluation sets (``eval --pairs`` / ``--retrieval``, ``eval.dev_task: pairs:FILE``).

Each row writes its bad input in its folder and runs the real CLI in-process on the tiny random BERT: one
clear error line naming the file (and line) and the problem, no traceback, nothing half-written.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from harness import Case, parametrize, run_case
from helpers.data import write_corpus

ENV: dict[str, Path] = {}

NLI_ROWS = [f"premise {i},entailment {i},contradiction {i}" for i in range(40)]


@pytest.fixture(autouse=True)
def _env(tiny_bert: Path, data_dir: Path) -> None:
    ENV.update(model=tiny_bert, data=data_dir)


def write(name: str, text: str) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return make


def train_sup(csv_text: str) -> Callable[[Path], list[str]]:
    """Supervised SimCSE on an nli_for_simcse-style csv written in the row's folder."""

    def setup(folder: Path) -> list[str]:
        path = write("nli.csv", csv_text)(folder)
        recipe = {
            "model": {"name_or_path": str(ENV["model"]), "max_length": 16},
            "data": {"data_dir": str(ENV["data"]), "train_file": str(path)},
            "objective": {"name": "sup_simcse"},
            "training": {
                "output_dir": str(folder / "run"),
                "batch_size": 8,
                "max_steps": 1,
                "progress": False,
            },
        }
        (folder / "r.yaml").write_text(yaml.safe_dump(recipe), encoding="utf-8")
        return ["train", "--config", str(folder / "r.yaml")]

    return setup


def build_nli(output: Callable[[Path], Path]) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        snli = folder / "SNLI"
        snli.mkdir()
        (snli / "s1.dev").write_text("a man plays\na man plays\n")
        (snli / "s2.dev").write_text("someone plays\nnobody plays\n")
        (snli / "labels.dev").write_text("entailment\ncontradiction\n")
        return ["build-nli", "--senteval-snli", str(snli), "--splits", "dev", "--output", str(output(folder))]

    return setup


def a_folder(name: str) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        (folder / name).mkdir()
        return folder / name

    return make


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def download(name: str, data_dir: Callable[[Path], Path] | None = None) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        target = data_dir(folder) if data_dir else folder / "data"
        mirror = f"http://127.0.0.1:{closed_port()}"
        return ["download", name, "--data-dir", str(target), "--mirror", mirror]

    return setup


def eval_pairs(text: str, *extra: str, name: str = "pairs.tsv") -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        return ["eval", "--model", str(ENV["model"]), "--pairs", str(write(name, text)(folder)), *extra]

    return setup


def eval_retrieval(
    qrels: str, corpus: str = '{"_id": "d1", "text": "a dog"}\n'
) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        write("beir/corpus.jsonl", corpus)(folder)
        write("beir/queries.jsonl", '{"_id": "q1", "text": "a cat"}\n')(folder)
        write("beir/qrels/test.tsv", "query-id\tcorpus-id\tscore\n" + qrels)(folder)
        return ["eval", "--model", str(ENV["model"]), "--retrieval", str(folder / "beir")]

    return setup


def train_dev_task(dev: str, pairs_text: str | None = None) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        if pairs_text is not None:
            write("dev.tsv", pairs_text)(folder)
        corpus = write_corpus(folder / "corpus.txt", 16)
        recipe = {
            "model": {"name_or_path": str(ENV["model"])},
            "data": {"data_dir": str(ENV["data"]), "train_file": str(corpus)},
            "training": {
                "output_dir": str(folder / "run"),
                "batch_size": 8,
                "max_steps": 1,
                "progress": False,
            },
            "eval": {"dev_task": dev.replace("FOLDER", str(folder))},
        }
        (folder / "r.yaml").write_text(yaml.safe_dump(recipe), encoding="utf-8")
        return ["train", "--config", str(folder / "r.yaml")]

    return setup


def no_training(folder: Path, printed: str) -> None:
    metrics = folder / "run" / "metrics.jsonl"
    assert not metrics.exists() or '"train"' not in metrics.read_text()


def nothing_downloaded(folder: Path, printed: str) -> None:
    data = folder / "data"
    assert not (data / "corpora").exists() and not list(data.glob("**/*.part"))


def build_nli_writes_csv(folder: Path, printed: str) -> None:
    assert (folder / "out" / "nli.csv").read_text().splitlines() == [
        "sent0,sent1,hard_neg",
        "a man plays,someone plays,nobody plays",
    ]


UNBALANCED = "sent0,sent1,hard_neg\n" + "\n".join(NLI_ROWS[:5] + ['p,e,"c'] + NLI_ROWS[6:]) + "\n"

CASES = [
    # an unbalanced quote opening the last field swallowed the rest of the file (3 of 40 rows read)
    Case(
        "nli_csv_unbalanced_quote",
        train_sup(UNBALANCED),
        r"nli\.csv:7: a field runs over a line break",
        check=no_training,
    ),
    Case(
        "nli_csv_quote_at_eof",
        train_sup("sent0,sent1,hard_neg\n" + "\n".join(NLI_ROWS[:3]) + '\np,e,"c'),
        r"nli\.csv:5: malformed csv",
        check=no_training,
    ),
    Case(
        "nli_csv_stray_quote_mid_field",
        train_sup('sent0,sent1,hard_neg\na,b "quoted" c,d\nx,"y"z,w\n'),
        r"nli\.csv:3: malformed csv: ',' expected after '\"'",
        check=no_training,
    ),
    # build-nli --output that is a directory (an IsADirectoryError traceback before)
    Case(
        "build_nli_output_is_directory",
        build_nli(a_folder("out")),
        r"--output .*/out is a folder; give the name of a file to write",
    ),
    Case(
        "build_nli_output_under_a_file",
        build_nli(lambda f: write("afile", "x")(f) / "nli.csv"),
        r"cannot write --output .*afile/nli\.csv: .*afile is not a folder",
    ),
    Case("build_nli_good", build_nli(lambda f: f / "out" / "nli.csv"), None, check=build_nli_writes_csv),
    # sentcl download
    Case(
        "download_offline",
        download("wiki1m"),
        r"cannot reach http://127\.0\.0\.1:\d+/wiki1m_for_simcse\.txt .*save it as .*corpora/wiki1m_for_simcse\.txt",
        check=nothing_downloaded,
    ),
    Case(
        "download_offline_archive",
        download("senteval"),
        r"cannot reach .*/senteval\.tar .*unpack it so that .*senteval/STS/STSBenchmark/sts-dev\.csv exists",
        check=nothing_downloaded,
    ),
    Case(
        "download_data_dir_is_a_file", download("nli", write("afile", "x")), r"--data-dir: .*afile is a file"
    ),
    # sentcl eval --pairs
    Case(
        "pairs_missing_score_column",
        eval_pairs("sentence1\tsentence2\na\tb\nc\td\n"),
        r"pairs\.tsv:1: .*holds the score",
    ),
    Case(
        "pairs_score_not_a_number",
        eval_pairs("s1\ts2\tscore\na\tb\t1\nc\td\tfive\n"),
        r"pairs\.tsv:3: score 'five' is not a number",
    ),
    Case(
        "pairs_row_missing_a_column",
        eval_pairs("s1\ts2\tscore\na\tb\t1\nc\td\n"),
        r"pairs\.tsv:3: missing column score",
    ),
    Case("pairs_empty_file", eval_pairs(""), r"pairs\.tsv: the file is empty"),
    Case(
        "pairs_header_only", eval_pairs("s1\ts2\tscore\n"), r"pairs\.tsv: the file has a header but no rows"
    ),
    Case(
        "pairs_out_of_range",
        eval_pairs("s1\ts2\tscore\na\tb\t1\nc\td\t9\n", "--score-range", "0,5"),
        r"pairs\.tsv:3: score 9 is outside",
    ),
    Case(
        "pairs_bad_range_option",
        eval_pairs("s1\ts2\tscore\na\tb\t1\nc\td\t2\n", "--score-range", "5,0"),
        r"--score-range: expected LO,HI with LO < HI",
    ),
    Case(
        "pairs_constant_scores",
        eval_pairs("s1\ts2\tscore\na\tb\t1\nc\td\t1\n"),
        r"pairs\.tsv: every score is 1",
    ),
    Case(
        "pairs_named_column_missing",
        eval_pairs("s1\ts2\tscore\na\tb\t1\nc\td\t2\n", "--columns", "s1,s2,gold"),
        r"pairs\.tsv:1: no column 'gold'",
    ),
    Case(
        "pairs_csv_unbalanced_quote",
        eval_pairs('s1,s2,score\na,b,1\nc,"d,2\ne,f,3\n', name="p.csv"),
        r"p\.csv:3: a field runs over a line break",
    ),
    Case(
        "pairs_jsonl_not_an_object",
        eval_pairs('{"s1": "a", "s2": "b", "score": 1}\n[1, 2]\n', name="p.jsonl"),
        r"p\.jsonl:2: expected a JSON object",
    ),
    Case(
        "pairs_missing_file",
        lambda f: ["eval", "--model", str(ENV["model"]), "--pairs", str(f / "nope.tsv")],
        r"nope\.tsv does not exist",
    ),
    Case(
        "columns_without_pairs",
        lambda f: ["eval", "--model", str(ENV["model"]), "--columns", "0,1,2"],
        r"--columns, --score-range and --format describe a --pairs file",
    ),
    # sentcl eval --retrieval
    Case(
        "retrieval_unknown_document",
        eval_retrieval("q1\td9\t1\n"),
        r"qrels/test\.tsv:2: corpus-id 'd9' is not in corpus\.jsonl",
    ),
    Case(
        "retrieval_score_not_integer",
        eval_retrieval("q1\td1\tyes\n"),
        r"qrels/test\.tsv:2: score 'yes' is not a whole number",
    ),
    Case(
        "retrieval_corpus_missing_text",
        eval_retrieval("q1\td1\t1\n", '{"_id": "d1"}\n'),
        r"corpus\.jsonl:1: missing key 'text'",
    ),
    Case(
        "retrieval_no_folder",
        lambda f: ["eval", "--model", str(ENV["model"]), "--retrieval", str(f / "nope")],
        r"nope does not exist or is not a folder",
    ),
    # eval.dev_task on the user's data: validated before any training step
    Case(
        "dev_task_pairs_missing_file",
        train_dev_task("pairs:FOLDER/nope.tsv"),
        r"nope\.tsv not found",
        check=no_training,
    ),
    Case(
        "dev_task_pairs_bad_score",
        train_dev_task("pairs:FOLDER/dev.tsv", "s1\ts2\tscore\na\tb\t1\nc\td\tx\n"),
        r"dev\.tsv:3: score 'x' is not a number",
        check=no_training,
    ),
    Case(
        "dev_task_empty_path",
        train_dev_task("pairs:"),
        r"eval\.dev_task='pairs:' needs a path",
        check=no_training,
    ),
]


@parametrize(CASES)
def test_data_reliability(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_case(case, tmp_path, capsys)


def test_nli_csv_all_forty_rows_read_when_well_formed(tmp_path: Path) -> None:
    """The same 40-row file without the stray quote reads every row (the fix does not drop good rows)."""
    from sentcl.data.nli import read_nli_csv

    path = tmp_path / "nli.csv"
    path.write_text("sent0,sent1,hard_neg\n" + "\n".join(NLI_ROWS) + "\n", encoding="utf-8")
    corpus = read_nli_csv(path)
    assert len(corpus) == 40 and corpus.examples[39] == ("premise 39", "entailment 39", "contradiction 39")
    assert json.dumps(corpus.skipped) == '{"empty_lines": 0}'
