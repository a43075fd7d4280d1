"""``sentcl build-corpus english``: per-source counts against Python sets built in the test from the files
read separately, no STS test sentence in the output with --exclude-sts-test (also where another source holds
it), first-seen order, and the same file on every run."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from sentcl.cli import main
from sentcl.data.offline_english import offline_english_sentences
from sentcl.data.readers import DataFormatError
from sentcl.evaluation.senteval_readers import BINARY_FILES

STS_TEST_SENTENCE = "a man is playing a guitar ."  # also in SNLI and in SICK train below


def _write(root: Path, rel: str, lines: list[str]) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def _stsb(a: str, b: str) -> str:
    return f"main-captions\tMSRvid\t2012test\t0001\t5.0\t{a}\t{b}"


def _small_data(root: Path) -> Path:
    """A data folder with every source the corpus reads, a few sentences each, with overlaps across sources."""
    se = "senteval/"
    _write(root, "corpora/wiki1m_prefix.txt", ["Wiki one.", "  Wiki   two. ", "", "Wiki one."])
    for split in ("dev", "test"):
        _write(root, f"{se}SNLI/s1.{split}", [f"premise {split}", STS_TEST_SENTENCE])
        _write(root, f"{se}SNLI/s2.{split}", [f"hypothesis {split}", "Wiki one."])
    for folder, *names in BINARY_FILES.values():
        for name in names:
            _write(root, f"{se}{folder}/{name}", [f"{folder} {name} a", f"{folder} shared"])
    for kind in ("binary", "fine"):
        for split in ("train", "dev", "test"):
            _write(root, f"{se}SST/{kind}/sentiment-{split}", [f"sst {split}\t1", f"sst {kind}\t0"])
    (root / se / "TREC").mkdir(parents=True)
    (root / se / "TREC/train_5500.label").write_bytes(b"DESC:manner How caf\xe9 ?\nHUM:ind Who ?\n")
    _write(root, f"{se}TREC/TREC_10.label", ["NUM:date When ?", "HUM:ind Who ?"])
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    for split in ("train", "test"):
        _write(root, f"{se}MRPC/msr_paraphrase_{split}.txt", [header, f"1\t1\t2\tmrpc {split} a\tmrpc b"])
    sick = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"
    _write(root, f"{se}SICK/SICK_train.txt", [sick, f"1\t{STS_TEST_SENTENCE}\tsick train b\t4.0\tNEUTRAL"])
    _write(root, f"{se}SICK/SICK_trial.txt", [sick, "2\tsick trial a\tsick train b\t4.0\tNEUTRAL"])
    _write(root, f"{se}SICK/SICK_test_annotated.txt", [sick, "3\tsick test a\tsick test b\t1.0\tNEUTRAL"])
    sts_b = f"{se}STS/STSBenchmark/"
    _write(root, f"{sts_b}sts-train.csv", [_stsb("stsb train a", "stsb dev a"), _stsb("stsb train b", "x")])
    _write(root, f"{sts_b}sts-dev.csv", [_stsb("stsb dev a", "stsb dev b")])
    _write(root, f"{sts_b}sts-test.csv", [_stsb("stsb test a", "stsb test b")])
    for year in range(12, 17):
        folder = f"{se}STS/STS{year}-en-test/"
        _write(root, f"{folder}STS.input.news.txt", [f"sts{year} a\t{STS_TEST_SENTENCE}"])
        _write(root, f"{folder}STS.gs.news.txt", ["3.0"])
    return root


def test_counts_and_exclusions_on_a_small_folder(tmp_path: Path) -> None:
    data = _small_data(tmp_path / "data")
    full = offline_english_sentences(data)
    assert full.sentences[:4] == ["Wiki one.", "Wiki two.", "premise dev", STS_TEST_SENTENCE]
    assert len(full.sentences) == len(set(full.sentences))
    counts = {k: (c.distinct, c.added, c.excluded) for k, c in full.counts.items()}
    assert counts["wiki"] == (2, 2, 0)
    assert counts["snli"] == (6, 5, 0)  # "Wiki one." was added by wiki
    assert counts["trec"] == (3, 3, 0)  # "How café ?" read as Latin-1, "Who ?" once
    assert counts["sst"] == (5, 5, 0)
    assert counts["sts_test"] == (10, 9, 0)  # 5 years + the guitar (shared) + STS-B test 2 + SICK test 2
    assert "How café ?" in full.sentences

    cut = offline_english_sentences(data, exclude_sts_test=True, exclude_stsb_dev=True)
    assert STS_TEST_SENTENCE not in cut.sentences  # though SNLI and SICK train hold it
    assert not {"stsb dev a", "stsb dev b", "sick test a", "sts12 a"} & set(cut.sentences)
    assert set(cut.counts) == set(full.counts) - {"sts_test", "stsb_dev"}
    assert cut.counts["snli"].excluded == 1 and cut.counts["sick"].excluded == 1
    assert cut.counts["stsb_train"].excluded == 1  # "stsb dev a" is in STS-B train too
    assert set(cut.sentences) == set(full.sentences) - {
        STS_TEST_SENTENCE, "stsb dev a", "stsb dev b", "sick test a", "sick test b", "stsb test a",
        "stsb test b", *(f"sts{y} a" for y in range(12, 17)),
    }  # fmt: skip


def test_command_writes_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _small_data(tmp_path / "data")
    out = tmp_path / "corpus.txt"
    argv = ["build-corpus", "english", "--data-dir", str(data), "--exclude-sts-test", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines == offline_english_sentences(data, exclude_sts_test=True).sentences
    assert f"{len(lines)} sentences (sources left out: sts_test)" in printed
    assert "snli" in printed and "sts_test " not in printed
    first = out.read_bytes()
    assert main([*argv, "--overwrite"]) == 0 and out.read_bytes() == first  # deterministic
    assert main(["build-corpus", "english", "--data-dir", str(tmp_path / "none"), "--out", str(out)]) == 2


# ---- the real data folder: sets built here, each file read on its own


def _lines(path: Path) -> list[str]:
    raw = path.read_bytes().removeprefix(b"\xef\xbb\xbf")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return [" ".join(line.split()) for line in text.splitlines()]


def _tsv(path: Path, cols: tuple[int, ...], header: bool) -> list[str]:
    with open(path, encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [" ".join(row[c].split()) for row in rows[1 if header else 0 :] if row for c in cols]


def test_real_data_folder(data_dir: Path) -> None:
    se = data_dir / "senteval"
    expected = {
        "wiki": set(_lines(data_dir / "corpora/wiki1m_prefix.txt")),
        "snli": {s for f in sorted((se / "SNLI").glob("s[12].*")) for s in _lines(f)},
        "mr": set(_lines(se / "MR/rt-polarity.pos")) | set(_lines(se / "MR/rt-polarity.neg")),
        "trec": {
            line.split(" ", 1)[1] for f in (se / "TREC").glob("*.label") for line in _lines(f) if " " in line
        },
        "sick": set(
            _tsv(se / "SICK/SICK_train.txt", (1, 2), True) + _tsv(se / "SICK/SICK_trial.txt", (1, 2), True)
        ),
        "stsb_train": set(_tsv(se / "STS/STSBenchmark/sts-train.csv", (5, 6), False)),
    }
    sts_test = set(_tsv(se / "STS/STSBenchmark/sts-test.csv", (5, 6), False))
    sts_test |= set(_tsv(se / "SICK/SICK_test_annotated.txt", (1, 2), True))
    for path in se.glob("STS/STS1*-en-test/STS.input.*.txt"):
        sts_test |= set(_tsv(path, (0, 1), False))
    sts_test.discard("")
    corpus = offline_english_sentences(data_dir, exclude_sts_test=True)
    for source, sentences in expected.items():
        sentences.discard("")
        assert corpus.counts[source].distinct == len(sentences), source
        assert corpus.counts[source].excluded == len(sentences & sts_test), source
    assert not sts_test & set(corpus.sentences)
    assert len(corpus.sentences) == len(set(corpus.sentences)) == sum(c.added for c in corpus.counts.values())
    assert sum(c.added for c in corpus.counts.values()) > 150_000


def test_training_reader_is_the_corpus_without_the_evaluation_sentences(tmp_path: Path) -> None:
    """``data.reader: offline_english`` with ``data.train_file: .`` trains on the corpus the command writes with
    both exclusions: the same sentences, in one fixed shuffled order (so that max_examples samples every
    source), none of the STS test sets or STS-B dev."""
    import random

    from sentcl.data.sources import read_training_data

    data = _small_data(tmp_path / "data")
    corpus = read_training_data("offline_english", data)
    cut = offline_english_sentences(data, exclude_sts_test=True, exclude_stsb_dev=True)
    order = list(cut.sentences)
    random.Random(0).shuffle(order)
    assert corpus.examples == order and corpus.examples != cut.sentences
    assert STS_TEST_SENTENCE not in corpus.examples and "stsb dev a" not in corpus.examples
    assert corpus.skipped == {"evaluation_sentences": sum(c.excluded for c in cut.counts.values())} != {}
    assert read_training_data("offline_english", data, max_examples=3).examples == order[:3]


def test_bench_corpus_is_the_offline_corpus_without_its_queries(tmp_path: Path) -> None:
    """``bench/index_corpus.py`` (the ``--real`` search bench) reads through the same gatherer: the queries are
    STS-B test's distinct sentences, and the corpus is every other sentence, the other STS test sets kept."""
    from bench.index_corpus import build

    data = _small_data(tmp_path / "data")
    corpus_path, query_path, n, q = build(data, tmp_path / "bench")
    queries = query_path.read_text(encoding="utf-8").splitlines()
    corpus = corpus_path.read_text(encoding="utf-8").splitlines()
    assert queries == ["stsb test a", "stsb test b"] and q == 2
    expected = [
        s for s in offline_english_sentences(data).sentences if s not in {"stsb test a", "stsb test b"}
    ]
    assert corpus == expected and n == len(corpus)
    assert {"sts12 a", "sick test a", "How café ?", STS_TEST_SENTENCE} <= set(corpus)


def test_a_ragged_sts_b_row_is_an_error_naming_the_file_and_line(tmp_path: Path) -> None:
    """A hand-edited STS-B test file with a row of six fields (a score lost): the corpus and the search bench's
    queries, which read it through the same code, both stop at it instead of reading a shifted column."""
    from bench.index_corpus import build

    data = _small_data(tmp_path / "data")
    sts = data / "senteval/STS/STSBenchmark/sts-test.csv"
    good = _stsb("stsb test a", "stsb test b")
    sts.write_text(good + "\n" + "main-captions\tMSRvid\t2012test\t0002\tstsb test c\tstsb test d\n", "utf-8")
    where = rf"{re.escape(str(sts))}:2: expected at least 7 tab-separated fields, got 6"
    with pytest.raises(DataFormatError, match=where):
        offline_english_sentences(data)
    with pytest.raises(DataFormatError, match=where):
        build(data, tmp_path / "bench")
    assert not (tmp_path / "bench").exists()  # nothing written before the error
