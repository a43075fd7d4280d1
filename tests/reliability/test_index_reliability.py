"""Bad indexes, bad encoding inputs and the large-corpus commands' bad inputs: sharded
``encode``, ``index build``, ``search --index`` on a built index, ``mine``.

Each row writes its bad input in its folder and runs the real CLI in-process on the tiny random BERT: one
clear error line naming the file (and line) and the problem, or, for the search cache, a rebuild whose
result equals a fresh search. No traceback, nothing half-written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import yaml
from harness import Case, parametrize, run_case
from helpers.data import write

from sentcl.cli import main

ENV: dict[str, Path] = {}
CORPUS = ["a man plays the guitar", "the dog runs", "stock price falls", "a bird sits in a tree", "a cat"]


@pytest.fixture(autouse=True)
def _env(tiny_bert: Path, data_dir: Path) -> None:
    ENV.update(model=tiny_bert, data=data_dir)


def search_args(folder: Path, *extra: str) -> list[str]:
    corpus = folder / "corpus.txt"
    return [
        "search",
        "--model",
        str(ENV["model"]),
        "--corpus",
        str(corpus),
        "--query",
        "a man",
        "-k",
        "2",
        *extra,
    ]


def cached_search(damage: Callable[[Path], None]) -> Callable[[Path], list[str]]:
    """Build a search cache, damage one of its files, and search again with it (must rebuild)."""

    def setup(folder: Path) -> list[str]:
        write(folder, "corpus.txt", "\n".join(CORPUS) + "\n")
        assert main([*search_args(folder, "--json"), "--index", str(folder / "cache")]) == 0
        damage(folder / "cache")
        return [*search_args(folder, "--json"), "--index", str(folder / "cache")]

    return setup


def same_as_fresh(folder: Path, printed: str) -> None:
    """The damaged cache was rebuilt: hits equal a search without cache, and the cache is valid again."""
    import contextlib
    import io

    from sentcl.index.exact import load_index

    hits = json.JSONDecoder().raw_decode(printed[printed.index("[") :])[0]
    fresh = io.StringIO()
    with contextlib.redirect_stdout(fresh):
        assert main(search_args(folder, "--json")) == 0
    assert hits == json.loads(fresh.getvalue())
    assert len(load_index(folder / "cache")) == len(CORPUS)


def encode(text: str | bytes | None, output: str, *extra: str) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        src = folder / "in.txt"
        if text is None:
            src.mkdir()
        else:
            src.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
        return [
            "encode",
            "--model",
            str(ENV["model"]),
            "--input",
            str(src),
            "--output",
            str(folder / output),
            *extra,
        ]

    return setup


def shards(folder: Path, lines: int = 6, shard_size: int = 4) -> Path:
    write(folder, "corpus.txt", "\n".join(f"sentence number {i}" for i in range(lines)) + "\n")
    out = folder / "emb"
    argv = [
        "encode",
        "--model",
        str(ENV["model"]),
        "--input",
        str(folder / "corpus.txt"),
        "--output",
        str(out),
    ]
    assert main([*argv, "--shard-size", str(shard_size)]) == 0
    return out


def index_build(damage: Callable[[Path], None]) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        emb = shards(folder)
        damage(emb)
        return ["index", "build", "--embeddings", str(emb), "--type", "flat", "--output", str(folder / "idx")]

    return setup


def built_index_search(damage: Callable[[Path], None], dim: int | None = None) -> Callable[[Path], list[str]]:
    """Build a flat index (from the tiny model, or from dim-wide stand-in vectors) and search it."""

    def setup(folder: Path) -> list[str]:
        if dim is None:
            emb = shards(folder)
        else:
            from sentcl.data.shards import encode_shards

            class Fixed:
                embedding_dim, pooler = dim, "avg"

                def encode(self, texts: list[str], **_: object) -> np.ndarray:
                    return np.ones((len(texts), dim), np.float32)

            write(folder, "corpus.txt", "a\nb\nc\n")
            emb = folder / "emb"
            encode_shards(Fixed(), folder / "corpus.txt", emb, 2, model_name="other-model")
        assert (
            main(
                [
                    "index",
                    "build",
                    "--embeddings",
                    str(emb),
                    "--type",
                    "flat",
                    "--output",
                    str(folder / "idx"),
                ]
            )
            == 0
        )
        damage(folder / "idx")
        return ["search", "--model", str(ENV["model"]), "--index", str(folder / "idx"), "--query", "a man"]

    return setup


def mine(pairs_name: str, pairs_text: str | None) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        pairs = folder / pairs_name
        if pairs_text is None:
            pairs.mkdir()
        else:
            write(folder, pairs_name, pairs_text)
        return [
            "mine",
            "--model",
            str(ENV["model"]),
            "--pairs",
            str(pairs),
            "--output",
            str(folder / "out.csv"),
        ]

    return setup


def no_output(name: str) -> Callable[[Path, str], None]:
    def check(folder: Path, printed: str) -> None:
        assert not (folder / name).exists(), f"{name} was written"

    return check


def train_on_directory(folder: Path) -> list[str]:
    (folder / "corpus_dir").mkdir()
    recipe = {
        "model": {"name_or_path": str(ENV["model"])},
        "data": {"data_dir": str(ENV["data"]), "train_file": str(folder / "corpus_dir")},
        "training": {"output_dir": str(folder / "run"), "batch_size": 8, "max_steps": 1, "progress": False},
    }
    write(folder, "r.yaml", yaml.safe_dump(recipe))
    return ["train", "--config", str(folder / "r.yaml")]


def rewrite(name: str, data: bytes | Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def damage(target: Path) -> None:
        path = target / name
        path.write_bytes(data(path.read_bytes()) if callable(data) else data)

    return damage


def fewer_rows(cache: Path) -> None:
    emb = np.load(cache / "embeddings.npy")
    np.save(cache / "embeddings.npy", emb[:3])
    meta = json.loads((cache / "index.json").read_text())
    (cache / "index.json").write_text(json.dumps({**meta, "size": 3, "count": 3}))


def other_dim(cache: Path) -> None:
    np.save(cache / "embeddings.npy", np.ones((len(CORPUS), 8), np.float32))
    meta = json.loads((cache / "index.json").read_text())
    (cache / "index.json").write_text(json.dumps({**meta, "dim": 8}))


def set_manifest(**changes: object) -> Callable[[Path], None]:
    def damage(emb: Path) -> None:
        manifest = json.loads((emb / "manifest.json").read_text())
        (emb / "manifest.json").write_text(json.dumps({**manifest, **changes}))

    return damage


CASES = [
    # the search cache and saved indexes
    Case("search-cache-row-count", cached_search(fewer_rows), None, check=same_as_fresh),
    Case("search-cache-dim", cached_search(other_dim), None, check=same_as_fresh),
    Case(
        "search-cache-truncated-npy",
        cached_search(rewrite("embeddings.npy", lambda b: b[:200])),
        None,
        check=same_as_fresh,
    ),
    Case(
        "search-cache-garbage-index-json",
        cached_search(rewrite("index.json", b"{not json")),
        None,
        check=same_as_fresh,
    ),
    Case("search-cache-empty-npy", cached_search(rewrite("embeddings.npy", b"")), None, check=same_as_fresh),
    Case(
        "search-index-is-a-file",
        lambda f: (
            [*search_args(f), "--index", str(write(f, "cache", "x"))] if write(f, "corpus.txt", "a\n") else []
        ),
        r"--index .*cache is a file",
    ),
    Case(
        "encode-empty-file",
        encode("", "out.npy"),
        r"in\.txt is empty: nothing to encode",
        check=no_output("out.npy"),
    ),
    Case(
        "encode-output-without-npy",
        encode("a\n", "adir"),
        r"--output .*adir must end in \.npy",
        check=no_output("adir.npy"),
    ),
    Case("encode-input-is-directory", encode(None, "out.npy"), r"argument --input: .*in\.txt is a directory"),
    Case(
        "train-file-is-directory",
        train_on_directory,
        r"training file .*corpus_dir is a directory, not a file",
    ),
    # sharded encode
    Case("encode-shards-empty-file", encode("", "emb", "--shard-size", "4"), r"in\.txt is empty"),
    Case(
        "encode-shards-output-is-file",
        encode("a\n", "in.txt", "--shard-size", "4"),
        r"--output .*in\.txt is a file",
    ),
    Case(
        "encode-shards-resume-other-settings",
        lambda f: encode("a\nb\n", "emb", "--shard-size", "5")(f) if shards(f, 3, 4) else [],
        r"emb holds shards of another encode \(.*shard_size: 4 -> 5",
    ),
    Case(
        "encode-shards-bad-utf8",
        encode(b"ok\n\xff\xfe\n", "emb", "--shard-size", "1"),
        r"in\.txt:2: line is not valid UTF-8",
    ),
    # index build
    Case(
        "index-build-garbage-manifest",
        index_build(rewrite("manifest.json", b"[1, 2")),
        r"manifest\.json: shard manifest is not valid JSON",
    ),
    Case(
        "index-build-manifest-not-sentcl",
        index_build(rewrite("manifest.json", b'{"a": 1}')),
        r"manifest\.json: not a sentcl shard manifest",
    ),
    Case(
        "index-build-unfinished-encode",
        index_build(set_manifest(complete=False)),
        r"manifest\.json: the encode is not finished",
    ),
    Case(
        "index-build-truncated-shard",
        index_build(rewrite("shard-00001.npy", lambda b: b[:100])),
        r"shard-00001\.npy is truncated",
    ),
    Case(
        "index-build-wrong-shard-shape",
        index_build(lambda e: np.save(e / "shard-00000.npy", np.ones((4, 5), np.float32))),
        r"shard-00000\.npy: holds .* shape \(4, 5\)",
    ),
    Case(
        "index-build-embeddings-is-file",
        lambda f: ["index", "build", "--embeddings", str(write(f, "e", "x"))],
        r"e is a file, not a folder",
    ),
    # search on a built index
    Case(
        "search-index-dim-mismatch",
        built_index_search(lambda i: None, dim=16),
        r"16-dimensional .*'other-model'.* 32-dimensional",
    ),
    Case(
        "search-index-garbage-meta",
        built_index_search(rewrite("index.json", b"nope")),
        r"index\.json: index metadata is not valid JSON",
    ),
    Case(
        "search-index-truncated-faiss",
        built_index_search(rewrite("index.faiss", lambda b: b[: len(b) // 2])),
        r"index\.faiss is truncated: it holds \d+ bytes, .*index\.json records \d+; rebuild the index",
    ),
    Case(
        "search-index-count-mismatch",
        built_index_search(
            lambda i: (i / "index.json").write_text(
                json.dumps({**json.loads((i / "index.json").read_text()), "count": 99})
            )
        ),
        r"index\.faiss holds 6 x 32 .* says 99 x 32",
    ),
    Case(
        "search-without-corpus-or-index",
        lambda f: ["search", "--model", str(ENV["model"]), "--query", "a"],
        r"--corpus is required unless --index",
    ),
    # mine
    Case(
        "mine-pairs-missing-column",
        mine("p.csv", "anchor,other\na,b\n"),
        r"p\.csv:1: no positive column",
        check=no_output("out.csv"),
    ),
    Case("mine-pairs-short-row", mine("p.csv", "anchor,positive\na,b\nc\n"), r"p\.csv:3: expected 2 fields"),
    Case(
        "mine-pairs-unbalanced-quote",
        mine("p.csv", 'anchor,positive\n"a,b\nc,d\n'),
        r"p\.csv:2: a field runs over a line break",
    ),
    Case(
        "mine-pairs-bad-jsonl",
        mine("p.jsonl", '{"anchor": "a", "positive": "b"}\n{oops\n'),
        r"p\.jsonl:2: not valid JSON",
    ),
    Case("mine-pairs-empty", mine("p.tsv", ""), r"p\.tsv: the file is empty"),
    Case("mine-pairs-is-directory", mine("p.csv", None), r"argument --pairs: .*p\.csv is a directory"),
    Case(
        "mine-window-too-small",
        lambda f: [*mine("p.csv", "anchor,positive\na,b\n")(f), "--range-min", "3", "--range-max", "4"],
        r"--range-max 4 leaves fewer than --num-negatives 3",
    ),
]


@parametrize(CASES)
def test_index_reliability(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_case(case, tmp_path, capsys)


@pytest.mark.parametrize(
    ("damage", "error"),
    [
        (rewrite("embeddings.npy", lambda b: b[:200]), r"embeddings\.npy is truncated"),
        (rewrite("embeddings.npy", b""), r"embeddings\.npy is empty \(0 bytes\)"),
        (rewrite("index.json", b"{not json"), r"index\.json: index metadata is not valid JSON"),
        (rewrite("index.json", b"[]"), r"index\.json: index metadata must be a JSON object"),
        (fewer_rows, r"texts\.jsonl has 5 texts for the 3 rows of .*embeddings\.npy"),
    ],
)
def test_load_index_names_the_bad_file(tmp_path: Path, damage: Callable[[Path], None], error: str) -> None:
    """What the search cache logs before rebuilding: load_index's error names the file."""
    from sentcl.index.exact import ExactIndex, load_index

    ExactIndex(np.random.default_rng(0).standard_normal((5, 4)), texts=CORPUS).save(tmp_path / "i")
    damage(tmp_path / "i")
    with pytest.raises(ValueError, match=error):
        load_index(tmp_path / "i")
