"""The scored-pairs training reader (CoSENT) on files written by hand, in Chinese and Korean."""

from __future__ import annotations

from pathlib import Path

import pytest

from sentcl.data.readers import DataFormatError
from sentcl.data.scored_pairs import read_scored_pairs, read_stsb_pairs
from sentcl.data.sources import read_training_data
from sentcl.files.paths import resolve_data_dir


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_chinese_tsv_without_header(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "zh.tsv",
        "一个男人在弹吉他。\t一个人在演奏乐器。\t4\n\n"
        "一只猫坐在垫子上。\t股市今天下跌了。\t0\n"
        "女孩在骑马。\t一个女孩骑着一匹马。\t5\n",
    )
    corpus = read_training_data("scored_pairs", path)
    assert corpus.examples == [
        ("一个男人在弹吉他。", "一个人在演奏乐器。", 4.0),
        ("一只猫坐在垫子上。", "股市今天下跌了。", 0.0),
        ("女孩在骑马。", "一个女孩骑着一匹马。", 5.0),
    ]


def test_korean_korsts_layout_with_header(tmp_path: Path) -> None:
    """KorSTS: genre filename year id score sentence1 sentence2, with a header; decomposed Hangul -> NFC."""
    decomposed = "\u1112\u1161\u11ab"  # 한 as three jamo
    path = _write(
        tmp_path / "korsts.tsv",
        "genre\tfilename\tyear\tid\tscore\tsentence1\tsentence2\n"
        "main-captions\tMSRvid\t2012test\t1\t5.000\t비행기가 이륙하고 있다.\t비행기가 이륙하고 있다.\n"
        f"main-captions\tMSRvid\t2012test\t4\t0.5\t{decomposed} 남자가 피리를 불고 있다.\t고양이가 잔다.\n",
    )
    corpus = read_scored_pairs(path)
    assert corpus.examples[0] == ("비행기가 이륙하고 있다.", "비행기가 이륙하고 있다.", 5.0)
    assert corpus.examples[1] == ("한 남자가 피리를 불고 있다.", "고양이가 잔다.", 0.5)
    assert read_scored_pairs(path, max_examples=1).examples == corpus.examples[:1]


def test_jsonl_and_csv(tmp_path: Path) -> None:
    jsonl = _write(
        tmp_path / "pairs.jsonl",
        '{"sentence1": "고양이가 잔다.", "sentence2": "고양이가 자고 있다.", "score": 4.5}\n'
        '{"sentence1": "我喜欢音乐。", "sentence2": "天气很冷。", "score": 0}\n',
    )
    assert read_scored_pairs(jsonl).examples == [
        ("고양이가 잔다.", "고양이가 자고 있다.", 4.5),
        ("我喜欢音乐。", "天气很冷。", 0.0),
    ]
    csv = _write(tmp_path / "pairs.csv", 'sentence1,sentence2,score\n"你好, 世界",世界你好,3.5\n猫,狗,1\n')
    assert read_scored_pairs(csv).examples == [("你好, 世界", "世界你好", 3.5), ("猫", "狗", 1.0)]


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        (
            "zh.tsv",
            "sentence1\tsentence2\tscore\n我喜欢音乐。\t我爱音乐。\t4\n猫在睡觉。\t狗在跑。\t很高\n",
            3,
        ),
        ("ko.tsv", "sentence1\tsentence2\tscore\n고양이가 잔다.\t개가 뛴다.\tnan\n한 남자.\t남자.\t2\n", 2),
        (
            "ko.jsonl",
            '{"sentence1": "가", "sentence2": "나", "score": 1}\n{"sentence1": "다", "sentence2": "라", "score": "높음"}\n',
            2,
        ),
    ],
)
def test_bad_score_names_file_and_line(tmp_path: Path, name: str, text: str, line: int) -> None:
    path = _write(tmp_path / name, text)
    with pytest.raises(DataFormatError, match=rf"{name}:{line}: score .* is not a number"):
        read_scored_pairs(path)


def test_missing_sentence_and_missing_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "short.tsv", "sentence1\tsentence2\tscore\n你好\t世界\t1\n你好\t\t2\n")
    with pytest.raises(DataFormatError, match=r"short.tsv:3: sentence 2 is empty"):
        read_scored_pairs(path)
    with pytest.raises(FileNotFoundError, match="nothing.tsv"):
        read_scored_pairs(tmp_path / "nothing.tsv")


def test_stsb_train_reads_as_the_sts_evaluator_does() -> None:
    """The real STS-B train file (TSV under a .csv name, extra columns on some lines) against the evaluator."""
    from sentcl.evaluation.senteval_readers import STSB_FILES, _read_stsb

    path = resolve_data_dir(None) / "senteval/STS/STSBenchmark" / STSB_FILES["train"]
    corpus = read_stsb_pairs(path)
    assert len(corpus) == 5749
    assert corpus.examples == [(a, b, float(s)) for a, b, s in _read_stsb(path)]
