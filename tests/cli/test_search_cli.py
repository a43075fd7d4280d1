"""sentcl search: exact top-k against a hand-written cosine loop, --index reuse, rebuild on a changed corpus/model."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from helpers.tiny_bert import build_tiny_bert

from sentcl.cli import main
from sentcl.index.search import run_search
from sentcl.modeling.encoder import SentenceEncoder

CORPUS = [
    "a man plays the guitar",
    "the woman is playing the piano",
    "a dog runs in the garden",
    "",  # blank: skipped, line numbers still count it
    "the cat sits on the old car",
    "a child is reading near the river",
    "the stock price falls",
    "the bank said the market rises",
    "a horse is running on the road",
    "the young team wins the game",
    "a bird sits in the green tree",
]
QUERIES = ["a man is playing music", "the market fell"]
POOLER = "avg"


def write_corpus_file(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def brute_force(model: Path, corpus: list[str], queries: list[str], k: int) -> list[list[tuple[int, float]]]:
    """(1-based line, cosine) of the k best lines per query: every sentence encoded alone, a Python loop.

    Mean pooling: the random tiny BERT's [CLS] (with or without the tanh head) gives cosines within 1e-5 of
    each other, too close to rank reliably; mean pooling spreads them by ~1e-3 (batching noise is ~3e-8).
    """
    encoder = SentenceEncoder.from_pretrained(str(model), pooler=POOLER)
    rows = [(i + 1, encoder.encode(text).tolist()) for i, text in enumerate(corpus) if text.strip()]
    result = []
    for query in queries:
        q = encoder.encode(query).tolist()
        scored = []
        for line, c in rows:
            dot = sum(a * b for a, b in zip(q, c, strict=True))
            scored.append((dot / (math.sqrt(sum(a * a for a in q)) * math.sqrt(sum(b * b for b in c))), line))
        scored.sort(key=lambda t: (-t[0], t[1]))
        result.append([(line, score) for score, line in scored[:k]])
    return result


def check_hits(hits: list[dict], expected: list[tuple[int, float]], corpus: list[str]) -> None:
    assert [h["line"] for h in hits] == [line for line, _ in expected]
    assert [h["rank"] for h in hits] == list(range(1, len(expected) + 1))
    for hit, (line, score) in zip(hits, expected, strict=True):
        assert hit["text"] == corpus[line - 1]
        assert hit["score"] == pytest.approx(score, abs=1e-4)


def test_search_cli_returns_the_exact_top_k(
    tmp_path: Path, tiny_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_corpus_file(tmp_path / "corpus.txt", CORPUS)
    (tmp_path / "queries.txt").write_text(QUERIES[1] + "\n", encoding="utf-8")
    args = ["search", "--model", str(tiny_bert), "--pooler", POOLER, "--corpus", str(corpus), "-k", "3"]
    assert main([*args, "--query", QUERIES[0], "--queries", str(tmp_path / "queries.txt"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    expected = brute_force(tiny_bert, CORPUS, QUERIES, 3)
    assert [o["query"] for o in out] == QUERIES
    for result, exp in zip(out, expected, strict=True):
        check_hits(result["hits"], exp, CORPUS)
    assert main([*args, "--query", QUERIES[0]]) == 0  # the readable table
    table = capsys.readouterr().out
    line, score = expected[0][0]
    assert f"query: {QUERIES[0]}" in table
    assert f"   1  {score:>7.4f}  {line:>6}  {CORPUS[line - 1]}" in table


def test_index_is_reused_and_rebuilt_when_corpus_or_model_change(tmp_path: Path, tiny_bert: Path) -> None:
    corpus = write_corpus_file(tmp_path / "corpus.txt", CORPUS)
    index = tmp_path / "index"
    first, built = run_search(str(tiny_bert), corpus, QUERIES, k=4, index_dir=index, pooler=POOLER)
    assert built and (index / "fingerprint.json").is_file() and (index / "embeddings.npy").is_file()
    again, built = run_search(str(tiny_bert), corpus, QUERIES, k=4, index_dir=index, pooler=POOLER)
    assert not built
    assert [[(h.rank, h.line, h.text) for h in r] for r in again] == [
        [(h.rank, h.line, h.text) for h in r] for r in first
    ]
    assert [h.score for r in again for h in r] == pytest.approx([h.score for r in first for h in r], abs=1e-6)
    expected = brute_force(tiny_bert, CORPUS, QUERIES, 4)
    for hits, exp in zip(again, expected, strict=True):
        check_hits([h.__dict__ for h in hits], exp, CORPUS)

    changed = [*CORPUS, "a man is playing music"]  # an exact copy of query 0 joins the corpus
    write_corpus_file(corpus, changed)
    hits, built = run_search(str(tiny_bert), corpus, QUERIES, k=4, index_dir=index, pooler=POOLER)
    assert built and hits[0][0].line == len(changed) and hits[0][0].score == pytest.approx(1.0, abs=1e-5)

    other = build_tiny_bert(tmp_path / "other_bert", seed=1)  # same files, other weights
    hits, built = run_search(str(other), corpus, QUERIES, k=4, index_dir=index, pooler=POOLER)
    assert built
    for got, exp in zip(hits, brute_force(other, changed, QUERIES, 4), strict=True):
        check_hits([h.__dict__ for h in got], exp, changed)
    _, built = run_search(str(other), corpus, QUERIES, k=4, index_dir=index, pooler=POOLER)
    assert not built


def test_search_errors_name_the_problem(
    tmp_path: Path, tiny_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none.txt"
    assert main(["search", "--model", str(tiny_bert), "--corpus", str(missing), "--query", "x"]) == 2
    assert f"corpus file {missing} does not exist" in capsys.readouterr().err
    corpus = write_corpus_file(tmp_path / "c.txt", CORPUS)
    assert main(["search", "--model", str(tiny_bert), "--corpus", str(corpus)]) == 2
    assert "no query" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["search", "report", "experiment"])
def test_new_commands_have_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    assert f"usage: sentcl {command}" in capsys.readouterr().out
