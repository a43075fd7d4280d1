"""STS evaluation: readers, SentEval aggregation, end-to-end scores against scipy on hand-made references."""

from __future__ import annotations

import json
import math
import os
import zlib
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

from sentcl.evaluation import (
    STS_TASKS,
    aggregate,
    evaluate_sts,
    evaluate_sts_dev,
    format_sts_table,
    load_sts_task,
    main_score,
    write_json,
)
from sentcl.files.paths import resolve_data_dir


@pytest.fixture(scope="module")
def data_dir() -> Path:
    """The real data folder ($SENTCL_DATA, which make test sets, else ../shared/data beside the
    checkout); always present in CI."""
    return resolve_data_dir(
        os.environ.get("SENTCL_DATA") or Path(__file__).resolve().parents[2].parent / "shared" / "data"
    )


# ---------------------------------------------------------------------- independent references

DIM = 97


def bow_encode(sentences: list[str]) -> np.ndarray:
    """Deterministic bag-of-words hashing vectors (integer counts, so cosines are exact to the last bit)."""
    out = np.zeros((len(sentences), DIM))
    for i, sentence in enumerate(sentences):
        for word in sentence.split():
            out[i, zlib.crc32(word.encode("utf-8")) % DIM] += 1.0
    return out


def bow_cosine(s1: str, s2: str) -> float:
    """cos of two BoW count vectors with plain Python integers: dot / sqrt(|a|²·|b|²)."""
    a, b = [0] * DIM, [0] * DIM
    for vec, sentence in ((a, s1), (b, s2)):
        for word in sentence.split():
            vec[zlib.crc32(word.encode("utf-8")) % DIM] += 1
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    sq = sum(x * x for x in a) * sum(y * y for y in b)
    return dot / math.sqrt(sq) if sq else 0.0


def raw_sts_year(data_dir: Path, folder: str, subsets: list[str]) -> dict[str, list[tuple[str, str, float]]]:
    """A separate, minimal reading of the STS files: skip pairs whose gold line is blank."""
    out = {}
    base = data_dir / "senteval" / "STS" / folder
    for subset in subsets:
        inputs = (base / f"STS.input.{subset}.txt").read_text(encoding="utf-8").split("\n")[:-1]
        golds = (base / f"STS.gs.{subset}.txt").read_text(encoding="utf-8").split("\n")[:-1]
        out[subset] = [
            (*line.split("\t"), float(g)) for line, g in zip(inputs, golds, strict=True) if g.strip() != ""
        ]
    return out


def raw_table(path: Path, c1: int, c2: int, cg: int, header: bool) -> list[tuple[str, str, float]]:
    lines = path.read_text(encoding="utf-8").splitlines()[1 if header else 0 :]
    return [(f[c1], f[c2], float(f[cg])) for f in (line.rstrip("\r").split("\t") for line in lines)]


def reference_scores(pairs: list[tuple[str, str, float]]) -> tuple[list[float], list[float]]:
    return [bow_cosine(s1, s2) for s1, s2, _ in pairs], [g for _, _, g in pairs]


# ---------------------------------------------------------------------- aggregation

SIMS_A, GOLD_A = [0.1, 0.4, 0.35, 0.8], [1.0, 2.0, 3.0, 4.0]  # hand: Σd² = 2, ρ = 1 - 6·2/(4·15) = 0.8
SIMS_B, GOLD_B = [0.9, 0.2, 0.5], [3.0, 1.0, 4.0]  # hand: Σd² = 2, ρ = 1 - 6·2/(3·8) = 0.5


def test_aggregate_matches_scipy_and_hand_computed_means() -> None:
    res = aggregate({"a": (np.array(SIMS_A), np.array(GOLD_A)), "b": (np.array(SIMS_B), np.array(GOLD_B))})
    assert res["subsets"]["a"]["spearman"] == pytest.approx(80.0)
    assert res["subsets"]["b"]["spearman"] == pytest.approx(50.0)
    assert res["subsets"]["a"]["pearson"] == pytest.approx(100 * pearsonr(SIMS_A, GOLD_A)[0])
    assert (res["subsets"]["a"]["n"], res["subsets"]["b"]["n"], res["n"]) == (4, 3, 7)
    assert res["all"] == pytest.approx(100 * spearmanr(SIMS_A + SIMS_B, GOLD_A + GOLD_B)[0])
    assert res["pearson"]["all"] == pytest.approx(100 * pearsonr(SIMS_A + SIMS_B, GOLD_A + GOLD_B)[0])
    assert res["mean"] == pytest.approx(65.0)  # (80 + 50) / 2
    assert res["wmean"] == pytest.approx(100 * 4.7 / 7)  # (4·0.8 + 3·0.5) / 7


def test_aggregate_oracle_gives_100() -> None:
    g1, g2 = np.array([0.0, 1.5, 4.2, 3.3, 5.0]), np.array([2.0, 0.4, 3.9])
    res = aggregate({"x": (g1, g1), "y": (g2, g2)})
    for key in ("all", "mean", "wmean"):
        assert res[key] == pytest.approx(100.0)
    assert res["pearson"]["all"] == pytest.approx(100.0)


def test_aggregate_rejects_bad_shapes() -> None:
    with pytest.raises(ValueError, match="at least 2 pairs"):
        aggregate({"x": (np.array([0.3]), np.array([1.0]))})
    with pytest.raises(ValueError, match="equal-length"):
        aggregate({"x": (np.array([0.3, 0.2]), np.array([1.0, 2.0, 3.0]))})


# ---------------------------------------------------------------------- readers on fake folders


def write_sts13(root: Path, files: dict[str, tuple[bytes, bytes]]) -> Path:
    """A fake STS13 folder under root/senteval; subsets not given get two valid pairs."""
    folder = root / "senteval" / "STS" / "STS13-en-test"
    folder.mkdir(parents=True)
    for subset in ("FNWN", "headlines", "OnWN"):
        inp, gold = files.get(subset, (b"x y\tx z\nu v\tu w\n", b"1.0\n2.0\n"))
        (folder / f"STS.input.{subset}.txt").write_bytes(inp)
        (folder / f"STS.gs.{subset}.txt").write_bytes(gold)
    return folder


def test_reader_skips_blank_gold_lines_and_normalises_spaces(tmp_path: Path) -> None:
    inp = b"a  b\t c\nd e\tf g\nh i\tj k\nl m\tn o\n"
    write_sts13(tmp_path, {"FNWN": (inp, b"4.5\n\n0.25\n3\n")})
    data = load_sts_task(tmp_path, "STS13")
    assert list(data) == ["FNWN", "headlines", "OnWN"]
    assert data["FNWN"] == [("a b", "c", 4.5), ("h i", "j k", 0.25), ("l m", "n o", 3.0)]  # pair 2 dropped


@pytest.mark.parametrize(
    ("inp", "gold", "message"),
    [
        (b"a\tb\n\xff\xfe\tc\n", b"1\n2\n", r"STS\.input\.FNWN\.txt, line 2: not valid UTF-8"),
        (b"a\tb\nc\td\ne\tf\tg\n", b"1\n2\n3\n", r"STS\.input\.FNWN\.txt, line 3: expected 2 tab-separated"),
        (
            b"a\tb\nc\n",
            b"1\n2\n",
            r"STS\.input\.FNWN\.txt, line 2: expected 2 tab-separated sentences, got 1",
        ),
        (
            b"a\tb\nc\td\n",
            b"1\nfive\n",
            r"STS\.gs\.FNWN\.txt, line 2: gold score 'five' is not a finite number",
        ),
        (
            b"a\tb\nc\td\ne\tf\n",
            b"1\n2\n",
            r"STS\.input\.FNWN\.txt has 3 lines but .*STS\.gs\.FNWN\.txt has 2: line 3",
        ),
    ],
)
def test_reader_errors_name_file_and_line(tmp_path: Path, inp: bytes, gold: bytes, message: str) -> None:
    write_sts13(tmp_path, {"FNWN": (inp, gold)})
    with pytest.raises(ValueError, match=message):
        load_sts_task(tmp_path, "STS13")


def test_stsb_reader_ignores_extra_columns_and_keeps_quotes(tmp_path: Path) -> None:
    folder = tmp_path / "senteval" / "STS" / "STSBenchmark"
    folder.mkdir(parents=True)
    (folder / "sts-dev.csv").write_text(
        'g\tf\t2012\t1\t2.5\ta "quoted\tb c\textra1\textra2\ng\tf\t2012\t2\t0\td\te\n', encoding="utf-8"
    )
    (folder / "sts-test.csv").write_text("g\tf\t2012\t1\t2.5\tonly six\n", encoding="utf-8")
    assert load_sts_task(tmp_path, "STSBenchmark", "dev") == {
        "dev": [('a "quoted', "b c", 2.5), ("d", "e", 0.0)]
    }
    with pytest.raises(
        ValueError, match=r"sts-test\.csv, line 1: expected at least 7 tab-separated fields, got 6"
    ):
        load_sts_task(tmp_path, "STSBenchmark", "test")


def test_sick_reader_checks_header_and_fields(tmp_path: Path) -> None:
    folder = tmp_path / "senteval" / "SICK"
    folder.mkdir(parents=True)
    header = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\r\n"
    (folder / "SICK_trial.txt").write_text(header + "1\tA b\tC d\t3.6\tNEUTRAL\r\n", encoding="utf-8")
    (folder / "SICK_train.txt").write_text("id\ta\tb\n", encoding="utf-8")
    (folder / "SICK_test_annotated.txt").write_text(header + "1\tA b\tC d\t3.6\n", encoding="utf-8")
    assert load_sts_task(tmp_path, "SICKRelatedness", "dev") == {"dev": [("A b", "C d", 3.6)]}
    with pytest.raises(ValueError, match=r"SICK_train\.txt, line 1: expected the header"):
        load_sts_task(tmp_path, "SICKRelatedness", "train")
    with pytest.raises(
        ValueError, match=r"SICK_test_annotated\.txt, line 2: expected 5 tab-separated fields, got 4"
    ):
        load_sts_task(tmp_path, "SICKRelatedness", "test")


def test_bad_task_split_and_encoder_output(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown STS task 'STS17'"):
        load_sts_task(tmp_path, "STS17")
    with pytest.raises(ValueError, match="only a 'test' split"):
        load_sts_task(tmp_path, "STS12", "dev")
    with pytest.raises(ValueError, match="no split 'val'"):
        load_sts_task(tmp_path, "STSBenchmark", "val")
    with pytest.raises(ValueError, match="no dev split"):
        evaluate_sts_dev(bow_encode, tmp_path, tasks=("STS12",))
    write_sts13(tmp_path, {})
    with pytest.raises(ValueError, match=r"encode returned shape \(3, 4\) for 4 sentences"):
        evaluate_sts(
            lambda s: np.ones((3, 4)), tmp_path, tasks=("STS13",)
        )  # 4 unique sentences over 3 subsets


# ---------------------------------------------------------------------- real data

REAL_SIZES = [
    ("STS12", "test", 3108),
    ("STS13", "test", 1500),
    ("STS14", "test", 3750),
    ("STS15", "test", 3000),
    ("STS16", "test", 1186),
    ("STSBenchmark", "train", 5749),
    ("STSBenchmark", "dev", 1500),
    ("STSBenchmark", "test", 1379),
    ("SICKRelatedness", "train", 4500),
    ("SICKRelatedness", "dev", 500),
    ("SICKRelatedness", "test", 4927),
]


@pytest.mark.parametrize(("task", "split", "size"), REAL_SIZES)
def test_real_data_pair_counts(data_dir: Path, task: str, split: str, size: int) -> None:
    """Sizes from the data README (STS12-16 count scored pairs only)."""
    data = load_sts_task(data_dir, task, split)
    assert sum(len(pairs) for pairs in data.values()) == size
    assert all(isinstance(g, float) and 0.0 <= g <= 5.0 for pairs in data.values() for _, _, g in pairs)


STS_FOLDERS = {
    "STS12": ("STS12-en-test", ["MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"]),
    "STS13": ("STS13-en-test", ["FNWN", "headlines", "OnWN"]),
    "STS14": ("STS14-en-test", ["deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"]),
    "STS15": ("STS15-en-test", ["answers-forums", "answers-students", "belief", "headlines", "images"]),
    "STS16": (
        "STS16-en-test",
        ["answer-answer", "headlines", "plagiarism", "postediting", "question-question"],
    ),
}


def test_end_to_end_bow_encoder_matches_scipy(data_dir: Path) -> None:
    calls: list[list[str]] = []

    def encode(sentences: list[str]) -> np.ndarray:
        calls.append(sentences)
        return bow_encode(sentences)

    res = evaluate_sts(encode, data_dir)
    assert len(calls) == len(STS_TASKS)  # one encode call per task
    assert all(len(set(c)) == len(c) for c in calls)  # deduplicated
    mains = []
    for task, (folder, subsets) in STS_FOLDERS.items():
        raw = raw_sts_year(data_dir, folder, subsets)
        sims, gold = [], []
        for subset, pairs in raw.items():
            s, g = reference_scores(pairs)
            assert res[task]["subsets"][subset]["spearman"] == pytest.approx(
                100 * spearmanr(s, g)[0], rel=1e-12
            )
            sims += s
            gold += g
        assert res[task]["all"] == pytest.approx(100 * spearmanr(sims, gold)[0], rel=1e-12)
        mains.append(100 * spearmanr(sims, gold)[0])
    stsb = raw_table(data_dir / "senteval/STS/STSBenchmark/sts-test.csv", 5, 6, 4, header=False)
    sick = raw_table(data_dir / "senteval/SICK/SICK_test_annotated.txt", 1, 2, 3, header=True)
    for task, pairs in (("STSBenchmark", stsb), ("SICKRelatedness", sick)):
        s, g = reference_scores(pairs)
        assert res[task]["n"] == len(pairs)
        assert res[task]["spearman"] == pytest.approx(100 * spearmanr(s, g)[0], rel=1e-12)
        assert res[task]["pearson"] == pytest.approx(100 * pearsonr(s, g)[0], rel=1e-9)
        mains.append(100 * spearmanr(s, g)[0])
    assert res["avg"] == pytest.approx(sum(mains) / 7, rel=1e-12)


def test_dev_mode_stsb_alone_reads_only_stsb_dev(data_dir: Path) -> None:
    calls: list[int] = []

    def encode(sentences: list[str]) -> np.ndarray:
        calls.append(len(sentences))
        return bow_encode(sentences)

    res = evaluate_sts_dev(encode, data_dir, tasks=("STSBenchmark",))
    pairs = raw_table(data_dir / "senteval/STS/STSBenchmark/sts-dev.csv", 5, 6, 4, header=False)
    s, g = reference_scores(pairs)
    assert set(res) == {"STSBenchmark", "avg"}
    assert len(calls) == 1 and calls[0] <= 2 * 1500
    assert (res["STSBenchmark"]["n"], res["STSBenchmark"]["split"]) == (1500, "dev")
    assert res["STSBenchmark"]["spearman"] == pytest.approx(100 * spearmanr(s, g)[0], rel=1e-12)
    assert res["avg"] == pytest.approx(res["STSBenchmark"]["spearman"])
    both = evaluate_sts_dev(bow_encode, data_dir)
    assert both["SICKRelatedness"]["n"] == 500


# ---------------------------------------------------------------------- reporting


def fake_result(base: float) -> dict:
    res: dict = {f"STS1{i}": {"all": base + i, "mean": 0.0, "wmean": 0.0} for i in range(2, 7)}
    res["STSBenchmark"] = {"spearman": base + 7, "pearson": 0.0, "n": 2}
    res["SICKRelatedness"] = {"spearman": base + 8, "pearson": 0.0, "n": 2}
    res["avg"] = base + 5.0  # (2+3+...+8)/7 = 5
    return res


def test_main_score_and_table() -> None:
    res = fake_result(60.0)
    assert main_score(res, "STS14") == 64.0 and main_score(res, "SICKRelatedness") == 68.0
    with pytest.raises(KeyError, match="'STS99'"):
        main_score(res, "STS99")
    partial = {"STSBenchmark": {"spearman": 80.123, "pearson": 0.0, "n": 2}, "avg": 80.123}
    table = format_sts_table({"start": res, "trained": partial}, {"start": "MiniLM (avg)"})
    assert table.splitlines() == [
        "| Task | MiniLM (avg) | trained |",
        "|---|---:|---:|",
        "| STS12 | 62.00 | - |",
        "| STS13 | 63.00 | - |",
        "| STS14 | 64.00 | - |",
        "| STS15 | 65.00 | - |",
        "| STS16 | 66.00 | - |",
        "| STS-B | 67.00 | 80.12 |",
        "| SICK-R | 68.00 | - |",
        "| Avg. | 65.00 | 80.12 |",
    ]


def test_write_json_is_strict_and_round_trips(tmp_path: Path) -> None:
    res = {"STSBenchmark": {"spearman": np.float64(81.5), "pearson": math.nan, "n": np.int64(3)}, "avg": 81.5}
    path = write_json(res, tmp_path / "out" / "sts.json")
    text = path.read_text(encoding="utf-8")
    assert "NaN" not in text
    assert json.loads(text) == {"STSBenchmark": {"spearman": 81.5, "pearson": None, "n": 3}, "avg": 81.5}
