"""sentcl eval --pairs: a user's STS file in any language (KorSTS, Chinese STS-B), checked against scipy."""

from __future__ import annotations

import json
import logging
import unicodedata
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.stats import pearsonr, spearmanr
from transformers import BertConfig, BertModel, BertTokenizerFast

from sentcl.cli import main
from sentcl.data.readers import DataFormatError
from sentcl.data.scored_pairs import read_pairs
from sentcl.evaluation.pairs import evaluate_pairs, tokenizer_report, warn_if_mangled
from sentcl.modeling.open import load_encoder

KOREAN = [
    ("남자가 기타를 치고 있다.", "한 남자가 기타를 연주하고 있다.", 4.6),
    ("여자가 말을 타고 있다.", "한 여자가 말을 타고 있다.", 5.0),
    ("아이가 공원에서 놀고 있다.", "개가 눈 속을 달리고 있다.", 0.4),
    ("남자가 피아노를 치고 있다.", "여자가 노래를 부르고 있다.", 1.2),
    ("고양이가 자고 있다.", "고양이 한 마리가 자고 있다.", 4.2),
    ("남자가 차를 운전하고 있다.", "아이가 공원에서 놀고 있다.", 0.0),
]
CHINESE = [
    ("一个男人在弹吉他。", "一个男人在演奏吉他。", 5),
    ("一个女人在骑马。", "一个男人在骑马。", 3),
    ("一只狗在跑。", "一只猫在睡觉。", 1),
    ("孩子在公园里玩。", "一个孩子在公园玩。", 4),
    ("他在开车。", "她在唱歌。", 0),
]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def build_cjk_bert(folder: Path, strip_accents: bool | None = False) -> Path:
    """A tiny random BERT whose word pieces cover the test's Hangul syllables and Han characters.

    ``strip_accents=None`` keeps BERT's default for an uncased vocabulary (accents stripped: NFD), the pitfall.
    """
    chars = sorted({ch for s1, s2, _ in KOREAN + CHINESE for ch in s1 + s2 if not ch.isspace()})
    vocab = SPECIALS + chars + [f"##{ch}" for ch in chars]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(
        vocab=str(folder / "vocab.txt"), do_lower_case=True, strip_accents=strip_accents
    )
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def cjk_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_cjk_bert(tmp_path_factory.mktemp("cjk_bert"))


def write_korsts(path: Path, rows=KOREAN) -> Path:  # noqa: ANN001
    lines = ["genre\tfilename\tyear\tid\tscore\tsentence1\tsentence2"]
    lines += [f"main-captions\tMSRvid\t2012test\t{i:04d}\t{s}\t{a}\t{b}" for i, (a, b, s) in enumerate(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_chinese_stsb(path: Path) -> Path:
    path.write_text("".join(f"{a}\t{b}\t{s}\n" for a, b, s in CHINESE), encoding="utf-8")
    return path


def reference(model_dir: Path, pairs: list[tuple[str, str, float]]) -> tuple[float, float]:
    """Spearman and Pearson x100 by hand: one encode per sentence, numpy cosine, scipy correlations."""
    model = load_encoder(str(model_dir))
    cos = []
    for a, b, _ in pairs:
        u, v = (np.asarray(model.encode([s]))[0].astype(np.float64) for s in (a, b))
        cos.append(u @ v / (np.linalg.norm(u) * np.linalg.norm(v)))
    gold = [s for _, _, s in pairs]
    return 100 * spearmanr(cos, gold).statistic, 100 * pearsonr(cos, gold).statistic


def test_korsts_layout_detected_and_scored_like_scipy(cjk_bert: Path, tmp_path: Path) -> None:
    path = write_korsts(tmp_path / "sts-dev.tsv")
    data = read_pairs(path)
    assert data.columns == ("sentence1", "sentence2", "score")
    assert data.pairs == [(a, b, s) for a, b, s in KOREAN]  # Hangul read back unchanged
    assert data.score_range == (0.0, 5.0) and not data.range_given
    model = load_encoder(str(cjk_bert))
    result = evaluate_pairs(lambda s: model.encode(s), path)
    rho, r = reference(cjk_bert, KOREAN)
    assert result["n"] == len(KOREAN)
    assert result["spearman"] == pytest.approx(rho, abs=1e-6) and result["pearson"] == pytest.approx(
        r, abs=1e-2
    )  # the random model's cosines sit close together: batch padding moves Pearson in the 3rd decimal


def test_chinese_stsb_layout_without_header(cjk_bert: Path, tmp_path: Path) -> None:
    path = write_chinese_stsb(tmp_path / "cnsd-sts-test.txt")
    data = read_pairs(path)
    assert data.columns == ("#0", "#1", "#2") and len(data.pairs) == len(CHINESE)  # no row taken as a header
    model = load_encoder(str(cjk_bert))
    rho, _ = reference(cjk_bert, [(a, b, float(s)) for a, b, s in CHINESE])
    assert evaluate_pairs(lambda s: model.encode(s), path)["spearman"] == pytest.approx(rho, abs=1e-6)


def test_tokenizer_keeps_hangul_and_han(cjk_bert: Path) -> None:
    tokenizer = load_encoder(str(cjk_bert)).tokenizer
    assert tokenizer.tokenize("남자가 男人") == ["남", "##자", "##가", "男", "人"]  # Han split per character
    sentences = [s for a, b, _ in KOREAN + CHINESE for s in (a, b)]
    assert tokenizer_report(tokenizer, sentences) == {"unk_rate": 0.0, "hangul_decomposed": False}


def test_nfd_hangul_pitfall_is_detected_and_named(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """BERT's uncased default strips accents with NFD: Hangul syllables become jamo the vocabulary lacks."""
    tokenizer = load_encoder(str(build_cjk_bert(tmp_path / "nfd", strip_accents=None))).tokenizer
    korean = [s for a, b, _ in KOREAN for s in (a, b)]
    assert set(tokenizer.tokenize(korean[0])) <= {"[UNK]", "."}  # the mangling is real
    with caplog.at_level(logging.WARNING, logger="sentcl.evaluation.pairs"):
        report = warn_if_mangled(tokenizer, korean, "kor.tsv")
    assert report["hangul_decomposed"] and report["unk_rate"] > 0.5
    assert "kor.tsv" in caplog.text and "strip_accents=False" in caplog.text


def test_decomposed_input_file_reads_as_precomposed(tmp_path: Path) -> None:
    rows = [(unicodedata.normalize("NFD", a), b, s) for a, b, s in KOREAN]
    data = read_pairs(write_korsts(tmp_path / "nfd.tsv", rows))
    assert [p[0] for p in data.pairs] == [a for a, _, _ in KOREAN]


def test_columns_by_index_and_jsonl_and_csv(tmp_path: Path) -> None:
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text(
        "".join(json.dumps({"a": a, "b": b, "sim": s}, ensure_ascii=False) + "\n" for a, b, s in KOREAN),
        "utf-8",
    )
    assert read_pairs(jsonl, columns=["a", "b", "sim"]).pairs == KOREAN
    assert read_pairs(jsonl, columns=["0", "1", "2"]).pairs == KOREAN
    csv_path = tmp_path / "p.csv"
    csv_path.write_text('text1,text2,label\n"a, quoted",b,1\nc,"d ""x""",2\n', encoding="utf-8")
    assert read_pairs(csv_path).pairs == [("a, quoted", "b", 1.0), ("c", 'd "x"', 2.0)]
    korsts = write_korsts(tmp_path / "k.tsv")
    assert read_pairs(korsts, columns=[5, 6, 4]).pairs == KOREAN
    assert read_pairs(korsts, score_range=(0, 5)).range_given


@pytest.mark.parametrize(
    ("content", "kwargs", "error"),
    [
        ("sentence1\tsentence2\n가\t나\n", {}, r"k\.tsv:1: cannot tell which column holds the score"),
        ("가\t나\t1\n다\t라\tabc\n", {}, r"k\.tsv:2: score 'abc' is not a number"),
        ("s1\ts2\tscore\n가\t나\t1\n다\t라\tabc\n", {}, r"k\.tsv:3: score 'abc' is not a number"),
        ("s1\ts2\tscore\n가\t나\t1\n다\t라\n", {}, r"k\.tsv:3: missing column score \(score\)"),
        ("s1\ts2\tscore\n가\t나\t1\n다\t라\t7\n", {"score_range": (0, 5)}, r"k\.tsv:3: score 7 is outside"),
        ("s1\ts2\tscore\n가\t나\tnan\n다\t라\t1\n", {}, r"k\.tsv:2: score 'nan' is not a number"),
        ("s1\ts2\tscore\n가\t\t1\n다\t라\t1\n", {}, r"k\.tsv:2: sentence 2 is empty"),
        ("", {}, r"k\.tsv: the file is empty"),
        ("\n\n", {}, r"k\.tsv: the file is empty"),
        ("s1\ts2\tscore\n", {}, r"k\.tsv: .*header but no rows"),
        ("s1\ts2\tscore\n가\t나\t1\n", {}, r"at least 2 pairs"),
        ("s1\ts2\tscore\n가\t나\t1\n", {"columns": ["s1", "s2", "gold"]}, r"k\.tsv:1: no column 'gold'"),
        (b"s1\ts2\tscore\n\xff\t\xfe\t1\n", {}, r"k\.tsv:2: line is not valid UTF-8"),
    ],
)
def test_bad_pairs_file_names_file_and_line(tmp_path: Path, content, kwargs: dict, error: str) -> None:  # noqa: ANN001
    path = tmp_path / "k.tsv"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(DataFormatError, match=error):
        read_pairs(path, **kwargs)


def test_jsonl_missing_key_and_csv_unbalanced_quote(tmp_path: Path) -> None:
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text(
        '{"sentence1": "a", "sentence2": "b", "score": 1}\n{"sentence1": "c", "score": 2}\n', "utf-8"
    )
    with pytest.raises(DataFormatError, match=r"p\.jsonl:2: missing key 'sentence2'"):
        read_pairs(jsonl)
    csv_path = tmp_path / "p.csv"
    csv_path.write_text('sent1,sent2,score\na,b,1\nc,"d,2\ne,f,3\ng,h,4\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"p\.csv:3: a field runs over a line break"):
        read_pairs(csv_path)


def test_cli_eval_pairs_korean(cjk_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_korsts(tmp_path / "sts-dev.tsv")
    out = tmp_path / "r.json"
    assert main(["eval", "--model", str(cjk_bert), "--pairs", str(path), "--output", str(out)]) == 0
    result = json.loads(out.read_text())[f"pairs:{path}"]
    rho, _ = reference(cjk_bert, KOREAN)
    assert result["spearman"] == pytest.approx(rho, abs=1e-6) and result["unk_rate"] == 0.0
    assert "spearman" in capsys.readouterr().out


def test_cli_eval_bad_pairs_is_one_line(
    cjk_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.tsv"
    path.write_text("s1\ts2\tscore\n가\t나\t1\n다\t라\tfive\n", encoding="utf-8")
    assert main(["eval", "--model", str(cjk_bert), "--pairs", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"{path}:3: score 'five' is not a number" in err
