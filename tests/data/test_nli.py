"""NLI readers: SimCSE's csv, SNLI jsonl, SentEval's SNLI folder, triple building and writing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sentcl.data.nli import (
    TripleStats,
    build_nli_from_senteval,
    build_triples,
    read_nli_csv,
    read_nli_jsonl,
    read_senteval_snli,
    write_nli_csv,
)
from sentcl.data.readers import DataFormatError
from sentcl.data.sources import READERS, read_training_data

E, N, C = "entailment", "neutral", "contradiction"

# 5 premises, one of each case; hypotheses named "<premise>-<label><k>" so the expected picks are readable
RECORDS = [
    ("p1", "p1-e1", E),
    ("p2", "p2-e1", E),  # p2: entailment and neutral, no contradiction
    ("p1", "p1-n1", N),
    ("p1", "p1-c1", C),
    ("p3", "p3-c1", C),  # p3: contradiction only
    ("p1", "p1-e2", E),  # a second entailment of p1: the first one wins
    ("p4", "p4-n1", N),  # p4: neutral and "-" only -> neither
    ("p4", "p4-x", "-"),
    ("p5", "p5-c1", C),  # p5: complete, contradiction first, two contradictions
    ("p5", "p5-c2", C),
    ("p5", "p5-e1", E),
    ("p2", "p2-n1", N),
    ("p3", "p3-x", "-"),
]


def test_build_triples_covers_every_case() -> None:
    triples, stats = build_triples(RECORDS)
    assert triples == [("p1", "p1-e1", "p1-c1"), ("p5", "p5-e1", "p5-c1")]
    assert stats == TripleStats(
        records=13,
        unlabelled_records=2,
        premises=5,
        triples=2,
        skipped_no_entailment=1,  # p3
        skipped_no_contradiction=1,  # p2
        skipped_neither=1,  # p4
        skipped_no_neutral=0,
    )


def test_build_triples_with_neutral_needs_a_neutral() -> None:
    triples, stats = build_triples(RECORDS, with_neutral=True)
    assert triples == [("p1", "p1-e1", "p1-c1", "p1-n1")]  # p5 has no neutral
    assert (stats.triples, stats.skipped_no_neutral, stats.premises) == (1, 1, 5)


def test_build_triples_rejects_unknown_labels() -> None:
    with pytest.raises(ValueError, match="record 1: unknown label 'entails'"):
        build_triples([("p", "h", E), ("p", "h2", "entails")])


def test_csv_reads_the_real_sample(data_dir: Path) -> None:
    path = data_dir / "corpora" / "nli_for_simcse_sample.csv"
    lines = path.read_text(encoding="utf-8").splitlines()
    # The data README says "the first 10 rows": that is the header and 9 triples (no field spans lines).
    assert lines[0] == "sent0,sent1,hard_neg" and len(lines) == 10
    corpus = read_nli_csv(path)
    assert len(corpus) == 9
    assert all(len(example) == 3 and all(example) for example in corpus.examples)
    # the first row has no quotes, so splitting on commas reads it
    assert '"' not in lines[1]
    assert corpus.examples[0] == tuple(field.strip() for field in lines[1].split(","))
    # row 6 (line 7) quotes a premise that contains commas
    assert lines[6].startswith('"But a few Christian mosaics')
    assert corpus.examples[5][0].count(",") == 3
    assert corpus.examples[5][1] == "There are a few Christian mosaics left in the building."  # stripped
    assert READERS.get("nli_csv")(path, 4).examples == corpus.examples[:4]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "premise,hyp,neg\na,b,c\n",
            r":1: header 'premise,hyp,neg' is not one of: sent0,sent1 or sent0,sent1,hard_neg",
        ),
        ("sent0,sent1,hard_neg\na,b,c\na,b\n", r":3: expected 3 fields \(sent0,sent1,hard_neg\), got 2"),
        ("sent0,sent1,hard_neg\na,b,c\na,b,c,d\n", r":3: expected 3 fields"),
        # a quoted field over a line break is refused (an unbalanced quote once swallowed later rows)
        (
            'sent0,sent1,hard_neg\n"a\nstill a",b,c\nx, ,z\n',
            r":2: a field runs over a line break into line 3",
        ),
        ("sent0,sent1,hard_neg\na,b,c\nx, ,z\n", r":3: field 'sent1' is empty"),
        ("sent0,sent1\na,\n", r":2: field 'sent1' is empty"),
        ("", r":1: header '' is not one of"),
    ],
)
def test_csv_errors_name_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataFormatError, match=str(path) + message):
        read_nli_csv(path)


def test_csv_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(b"sent0,sent1,hard_neg\na,b,c\na,b\xff,c\n")
    with pytest.raises(DataFormatError, match=rf"{path}:3: line is not valid UTF-8"):
        read_nli_csv(path)


def test_csv_pairs_neutral_column_and_blank_rows(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("sent0,sent1\na,b\n\nc,d\n", encoding="utf-8")
    corpus = read_nli_csv(pairs)
    assert corpus.examples == [("a", "b"), ("c", "d")]
    assert corpus.skipped == {"empty_lines": 1}
    quads = tmp_path / "quads.csv"
    quads.write_text('\ufeffsent0,sent1,hard_neg,neutral\n"p, q",e,c,n\n', encoding="utf-8")  # with a BOM
    assert read_nli_csv(quads).examples == [("p, q", "e", "c", "n")]


def test_write_then_read_round_trips(tmp_path: Path) -> None:
    triples = [("a, with comma", 'say "hi"', "c"), ("d", "e", "f")]
    out = tmp_path / "sub" / "nli.csv"
    write_nli_csv(triples, out)
    text = out.read_text(encoding="utf-8")
    assert text.startswith("sent0,sent1,hard_neg\n")
    assert '"a, with comma","say ""hi""",c\n' in text  # csv quoting, by hand
    assert read_nli_csv(out).examples == triples
    assert [p.name for p in out.parent.iterdir()] == ["nli.csv"]  # no temporary file left behind
    write_nli_csv([("p", "e", "c", "n")], out)
    assert out.read_text(encoding="utf-8") == "sent0,sent1,hard_neg,neutral\np,e,c,n\n"
    with pytest.raises(ValueError, match="different lengths"):
        write_nli_csv([("a", "b", "c"), ("a", "b")], out)
    with pytest.raises(ValueError, match=r"example 1: sent0 'line\\nbreak' holds a line break"):
        write_nli_csv([("a", "b", "c"), ("line\nbreak", "e", "f")], out)  # the reader refuses such fields


def test_jsonl_groups_hypotheses_by_premise(tmp_path: Path) -> None:
    path = tmp_path / "snli.jsonl"
    lines = [
        json.dumps({"sentence1": p, "sentence2": h, "gold_label": y, "pairID": i})
        for i, (p, h, y) in enumerate(RECORDS)
    ]
    path.write_text("\n".join(lines[:5]) + "\n\n" + "\n".join(lines[5:]) + "\n", encoding="utf-8")
    corpus = read_training_data("nli_jsonl", path)
    assert corpus.examples == [("p1", "p1-e1", "p1-c1"), ("p5", "p5-e1", "p5-c1")]
    assert corpus.skipped == {
        "empty_lines": 1,
        "unlabelled_records": 2,
        "skipped_no_entailment": 1,
        "skipped_no_contradiction": 1,
        "skipped_neither": 1,
        "skipped_no_neutral": 0,
    }
    assert read_nli_jsonl(path, with_neutral=True).examples == [("p1", "p1-e1", "p1-c1", "p1-n1")]
    assert read_nli_jsonl(path, max_examples=1).examples == [("p1", "p1-e1", "p1-c1")]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not valid JSON"),
        ('["a"]', "expected a JSON object, got list"),
        ('{"sentence1": "a", "gold_label": "neutral"}', "'sentence2' is missing or not a string"),
        ('{"sentence1": "a", "sentence2": "b", "gold_label": "entails"}', "unknown label 'entails'"),
        ('{"sentence1": " ", "sentence2": "b", "gold_label": "neutral"}', "empty sentence1 or sentence2"),
    ],
)
def test_jsonl_errors_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    good = json.dumps({"sentence1": "a", "sentence2": "b", "gold_label": "neutral"})
    path.write_text(f"{good}\n{line}\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=f"{path}:2: {message}"):
        read_nli_jsonl(path)


def write_senteval(folder: Path, split: str, records: list[tuple[str, str, str]]) -> None:
    folder.mkdir(exist_ok=True)
    for k, name in enumerate(("s1", "s2", "labels")):
        (folder / f"{name}.{split}").write_text("".join(f"{r[k]} \n" for r in records), encoding="utf-8")


def test_senteval_folder_reads_all_splits(tmp_path: Path) -> None:
    folder = tmp_path / "SNLI"
    write_senteval(folder, "dev", [r for r in RECORDS if r[2] != "-"][:6])
    write_senteval(folder, "test", [r for r in RECORDS if r[2] != "-"][6:])
    corpus = read_training_data("senteval_snli", folder)
    # p5's records are all in test, p1's in dev; p2 has its entailment in dev and its neutral in test
    assert corpus.examples == [("p1", "p1-e1", "p1-c1"), ("p5", "p5-e1", "p5-c1")]
    assert corpus.skipped["skipped_no_contradiction"] == 1
    assert read_senteval_snli(folder, splits=("dev",)).examples == [("p1", "p1-e1", "p1-c1")]
    out = tmp_path / "built.csv"
    stats = build_nli_from_senteval(folder, ("dev", "test"), out)
    assert stats.triples == 2 and stats.premises == 5
    assert read_nli_csv(out).examples == corpus.examples


def test_senteval_errors(tmp_path: Path) -> None:
    folder = tmp_path / "SNLI"
    write_senteval(folder, "dev", [("a", "b", E), ("a", "c", C)])
    (folder / "s2.dev").write_text("b\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"dev files have different line counts \(s1.dev: 2, s2.dev: 1"):
        read_senteval_snli(folder, splits=("dev",))
    (folder / "s2.dev").write_text("b\nc\n", encoding="utf-8")
    (folder / "labels.dev").write_text("entailment\nCONTRADICTION\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=rf"{folder / 'labels.dev'}:2: unknown label 'CONTRADICTION'"):
        read_senteval_snli(folder, splits=("dev",))
    (folder / "labels.dev").write_text("entailment\ncontradiction\n", encoding="utf-8")
    assert read_senteval_snli(folder, splits=("dev",)).examples == [("a", "b", "c")]
    with pytest.raises(FileNotFoundError, match=r"s1.test does not exist"):
        read_senteval_snli(folder)


def test_real_senteval_snli(data_dir: Path) -> None:
    folder = data_dir / "senteval" / "SNLI"
    for split, expected in (("dev", 9842), ("test", 9824)):
        for name in ("s1", "s2", "labels"):
            assert len((folder / f"{name}.{split}").read_bytes().splitlines()) == expected
    labels = (folder / "labels.dev").read_text(encoding="utf-8").split()
    assert set(labels) == {E, N, C}
    corpus = read_senteval_snli(folder)
    stats_sum = sum(v for k, v in corpus.skipped.items() if k.startswith("skipped_"))
    # every premise either gives a triple or is counted as skipped
    premises = {
        line.strip() for split in ("dev", "test") for line in (folder / f"s1.{split}").open(encoding="utf-8")
    }
    assert len(corpus) + stats_sum == len(premises)
    first = (folder / "s1.dev").open(encoding="utf-8").readline().strip()
    assert corpus.examples[0][0] == first
