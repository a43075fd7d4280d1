"""STS evaluation as SentEval runs it for SimCSE ("test" mode), plus a cheap dev mode.

A pair (u, v) of sentence embeddings scores cos(u, v) = u·v / (‖u‖‖v‖); a task scores
ρ = 100 · Spearman(cos, gold). **Unit: every correlation in a result dict is in percent (×100).**

Result of :func:`evaluate_sts` (one key per task evaluated, plus ``"avg"``)::

    {"STS12": {"all": ρ_pooled, "mean": ..., "wmean": ..., "n": 3108,
               "pearson": {"all": ..., "mean": ..., "wmean": ...},
               "subsets": {"MSRpar": {"spearman": ..., "pearson": ..., "n": 750}, ...}},
     ...,
     "STSBenchmark": {"spearman": ..., "pearson": ..., "n": 1379, "split": "test"},
     "SICKRelatedness": {"spearman": ..., "pearson": ..., "n": 4927, "split": "test"},
     "avg": mean of main_score over the tasks evaluated}

STS12-16 "all" pools every subset's pairs into one Spearman (the number the SimCSE paper reports);
"mean" is the plain mean of subset Spearmans, "wmean" the mean weighted by subset size. STS-B and
SICK-R use plain cosine Spearman on one split (no trained regressor), as SimCSE's "test" mode does.
Sentences are whitespace-normalised (SentEval splits on whitespace, SimCSE's batcher re-joins with
one space). A zero vector scores cosine 0 (SentEval's ``nan_to_num``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import pearsonr, spearmanr

from sentcl.paths import data_file

STS_TASKS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness")
EncodeFn = Callable[[list[str]], np.ndarray]
Pair = tuple[str, str, float]

# SentEval's subset lists. STS13: SentEval leaves out the SMT subset (its licence forbids
# redistribution), so we do the same even where STS.gs.SMT.txt is present.
STS_YEARS: dict[str, tuple[str, tuple[str, ...]]] = {
    "STS12": ("STS12-en-test", ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews")),
    "STS13": ("STS13-en-test", ("FNWN", "headlines", "OnWN")),
    "STS14": ("STS14-en-test", ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news")),
    "STS15": ("STS15-en-test", ("answers-forums", "answers-students", "belief", "headlines", "images")),
    "STS16": (
        "STS16-en-test",
        ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
    ),
}
STSB_FILES = {"train": "sts-train.csv", "dev": "sts-dev.csv", "test": "sts-test.csv"}
SICK_FILES = {"train": "SICK_train.txt", "dev": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}
SICK_HEADER = ("pair_ID", "sentence_A", "sentence_B", "relatedness_score", "entailment_judgment")
DISPLAY_NAMES = {"STSBenchmark": "STS-B", "SICKRelatedness": "SICK-R"}


# ---------------------------------------------------------------------- readers


def _read_lines(path: Path) -> list[str]:
    """Lines of a UTF-8 file split on '\\n' (a trailing '\\r' dropped); bad UTF-8 names the line."""
    raw = path.read_bytes().split(b"\n")
    if raw and raw[-1] == b"":
        raw.pop()  # the final newline ends the last line; it does not start an empty one
    lines = []
    for lineno, line in enumerate(raw, start=1):
        try:
            lines.append(line.removesuffix(b"\r").decode("utf-8"))
        except UnicodeDecodeError as err:
            raise ValueError(f"{path}, line {lineno}: not valid UTF-8 ({err})") from err
    return lines


def _score(text: str, path: Path, lineno: int) -> float:
    """A gold score; a non-number (or nan/inf) is an error naming file and line."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ValueError(f"{path}, line {lineno}: gold score {text!r} is not a finite number")
    return value


def _norm(sentence: str) -> str:
    """SentEval tokenises with str.split(); SimCSE's batcher joins the tokens with one space."""
    return " ".join(sentence.split())


def _read_sts_subset(folder: Path, subset: str) -> list[Pair]:
    """STS.input.<subset>.txt (s1<TAB>s2) + STS.gs.<subset>.txt; a blank gold line drops its pair."""
    input_path = data_file(folder, f"STS.input.{subset}.txt")
    gold_path = data_file(folder, f"STS.gs.{subset}.txt")
    inputs, golds = _read_lines(input_path), _read_lines(gold_path)
    if len(inputs) != len(golds):
        raise ValueError(
            f"{input_path} has {len(inputs)} lines but {gold_path} has {len(golds)}: line "
            f"{min(len(inputs), len(golds)) + 1} of the longer file has no partner (they pair line by line)"
        )
    pairs: list[Pair] = []
    for lineno, (line, gold) in enumerate(zip(inputs, golds, strict=True), start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            raise ValueError(
                f"{input_path}, line {lineno}: expected 2 tab-separated sentences, got {len(fields)} fields"
            )
        if gold.strip():
            pairs.append((_norm(fields[0]), _norm(fields[1]), _score(gold.strip(), gold_path, lineno)))
    return pairs


def _read_stsb(path: Path) -> list[Pair]:
    """genre, file, year, id, score, sentence1, sentence2 [, extra columns ignored]; quotes are literal."""
    pairs: list[Pair] = []
    for lineno, line in enumerate(_read_lines(path), start=1):
        fields = line.strip().split("\t")
        if len(fields) < 7:
            raise ValueError(
                f"{path}, line {lineno}: expected at least 7 tab-separated fields, got {len(fields)}"
            )
        pairs.append((_norm(fields[5]), _norm(fields[6]), _score(fields[4], path, lineno)))
    return pairs


def _read_sick(path: Path) -> list[Pair]:
    """Header pair_ID, sentence_A, sentence_B, relatedness_score, entailment_judgment; then one pair a line."""
    lines = _read_lines(path)
    header = tuple(lines[0].strip().split("\t")) if lines else ()
    if header != SICK_HEADER:
        raise ValueError(f"{path}, line 1: expected the header {'<TAB>'.join(SICK_HEADER)}, got {header!r}")
    pairs: list[Pair] = []
    for lineno, line in enumerate(lines[1:], start=2):
        fields = line.strip().split("\t")
        if len(fields) != len(SICK_HEADER):
            raise ValueError(
                f"{path}, line {lineno}: expected {len(SICK_HEADER)} tab-separated fields, got {len(fields)}"
            )
        pairs.append((_norm(fields[1]), _norm(fields[2]), _score(fields[3], path, lineno)))
    return pairs


def load_sts_task(data_dir: Path, task: str, split: str = "test") -> dict[str, list[Pair]]:
    """Subset name -> [(s1, s2, gold)]; STS-B/SICK-R have one subset named after the split.

    Splits: STS12-16 only "test"; STS-B and SICK-R "train", "dev" (SICK: the trial file), "test".
    """
    root = Path(data_dir) / "senteval"
    if task in STS_YEARS:
        if split != "test":
            raise ValueError(f"{task} has only a 'test' split, got split={split!r}")
        folder, subsets = STS_YEARS[task]
        return {subset: _read_sts_subset(data_file(root, "STS", folder), subset) for subset in subsets}
    files = {"STSBenchmark": STSB_FILES, "SICKRelatedness": SICK_FILES}.get(task)
    if files is None:
        raise ValueError(f"unknown STS task {task!r}; valid: {', '.join(STS_TASKS)}")
    if split not in files:
        raise ValueError(f"{task} has no split {split!r}; valid: {', '.join(files)}")
    if task == "STSBenchmark":
        return {split: _read_stsb(data_file(root, "STS", "STSBenchmark", files[split]))}
    return {split: _read_sick(data_file(root, "SICK", files[split]))}


# ---------------------------------------------------------------------- scoring


def _cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """cos(a_i, b_i) for each row i: (n, D), (n, D) -> (n,); 0 where a norm is 0."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    dots = np.einsum("nd,nd->n", a, b)  # (n,)
    denom = np.sqrt(np.einsum("nd,nd->n", a, a) * np.einsum("nd,nd->n", b, b))  # (n,)
    return np.divide(dots, denom, out=np.zeros_like(dots), where=denom > 0)


def _correlations(sims: np.ndarray, gold: np.ndarray, name: str) -> dict[str, Any]:
    """{"spearman": 100·ρ, "pearson": 100·r, "n"}; constant input gives nan (scipy warns), as in SentEval."""
    sims, gold = np.asarray(sims, dtype=np.float64), np.asarray(gold, dtype=np.float64)
    if sims.shape != gold.shape or sims.ndim != 1:
        raise ValueError(
            f"{name}: predicted {sims.shape} and gold {gold.shape} must be equal-length 1-D arrays"
        )
    if len(sims) < 2:
        raise ValueError(f"{name}: a correlation needs at least 2 pairs, got {len(sims)}")
    rho = float(spearmanr(sims, gold).statistic)
    r = float(pearsonr(sims, gold).statistic)
    return {"spearman": 100.0 * rho, "pearson": 100.0 * r, "n": len(sims)}


def aggregate(subset_scores: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, Any]:
    """SentEval's STS aggregation of subset -> (predicted sims, gold), in percent.

    all = ρ(concat sims, concat gold); mean = Σ_k ρ_k / K; wmean = Σ_k n_k ρ_k / Σ_k n_k.
    """
    if not subset_scores:
        raise ValueError("aggregate needs at least one subset")
    subsets = {name: _correlations(s, g, name) for name, (s, g) in subset_scores.items()}
    sims = np.concatenate([np.asarray(s, dtype=np.float64) for s, _ in subset_scores.values()])  # (N,)
    gold = np.concatenate([np.asarray(g, dtype=np.float64) for _, g in subset_scores.values()])  # (N,)
    pooled = _correlations(sims, gold, "all")
    n = np.array([v["n"] for v in subsets.values()], dtype=np.float64)

    def means(key: str) -> tuple[float, float]:
        values = np.array([v[key] for v in subsets.values()])
        return float(values.mean()), float((values * n).sum() / n.sum())

    mean, wmean = means("spearman")
    p_mean, p_wmean = means("pearson")
    return {
        "all": pooled["spearman"],
        "mean": mean,
        "wmean": wmean,
        "n": pooled["n"],
        "pearson": {"all": pooled["pearson"], "mean": p_mean, "wmean": p_wmean},
        "subsets": subsets,
    }


def _score_task(
    encode: EncodeFn, subsets: Mapping[str, list[Pair]]
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Encode a task's unique sentences in one call; subset -> (cosines, gold)."""
    unique = list(dict.fromkeys(s for pairs in subsets.values() for p in pairs for s in p[:2]))
    emb = np.asarray(encode(unique))
    if emb.ndim != 2 or emb.shape[0] != len(unique):
        raise ValueError(f"encode returned shape {emb.shape} for {len(unique)} sentences; expected (N, D)")
    row = {s: i for i, s in enumerate(unique)}
    scores = {}
    for name, pairs in subsets.items():
        idx1 = np.array([row[p[0]] for p in pairs], dtype=np.int64)
        idx2 = np.array([row[p[1]] for p in pairs], dtype=np.int64)
        gold = np.array([p[2] for p in pairs], dtype=np.float64)
        scores[name] = (_cosine_rows(emb[idx1], emb[idx2]), gold)
    return scores


def _evaluate(encode: EncodeFn, data_dir: Path, tasks: Sequence[str], split: str) -> dict[str, Any]:
    unknown = [t for t in tasks if t not in STS_TASKS]
    if unknown:
        raise ValueError(f"unknown STS task(s) {', '.join(unknown)}; valid: {', '.join(STS_TASKS)}")
    result: dict[str, Any] = {}
    for task in tasks:
        agg = aggregate(_score_task(encode, load_sts_task(data_dir, task, split)))
        if task in STS_YEARS:
            result[task] = agg
        else:
            result[task] = {**agg["subsets"][split], "split": split}
    result["avg"] = float(np.mean([main_score(result, t) for t in tasks])) if tasks else math.nan
    return result


def evaluate_sts(
    encode: EncodeFn, data_dir: Path, tasks: Sequence[str] = STS_TASKS, split: str = "test"
) -> dict[str, Any]:
    """Score ``tasks`` on ``split`` (layout in the module docstring, percent); "avg" = mean main score."""
    return _evaluate(encode, data_dir, tuple(tasks), split)


def evaluate_sts_dev(
    encode: EncodeFn, data_dir: Path, tasks: Sequence[str] = ("STSBenchmark", "SICKRelatedness")
) -> dict[str, Any]:
    """Dev mode for training: STS-B dev and SICK-R trial (``tasks=("STSBenchmark",)`` reads and encodes only STS-B dev)."""
    bad = [t for t in tasks if t in STS_YEARS]
    if bad:
        raise ValueError(
            f"{', '.join(bad)} have no dev split; dev tasks are STSBenchmark and SICKRelatedness"
        )
    return _evaluate(encode, data_dir, tuple(tasks), "dev")


def main_score(result: Mapping[str, Any], task: str) -> float:
    """The number the paper reports: STS12-16 "all" Spearman, STS-B/SICK-R Spearman (percent)."""
    if task not in result:
        raise KeyError(
            f"task {task!r} is not in this result (it has: {', '.join(k for k in result if k != 'avg')})"
        )
    return float(result[task]["all"] if task in STS_YEARS else result[task]["spearman"])


# ---------------------------------------------------------------------- reporting


def format_sts_table(
    results: Mapping[str, Mapping[str, Any]], title_by_column: Mapping[str, str] | None = None
) -> str:
    """Markdown table: a row per task (STS12-16 "all", STS-B, SICK-R) plus Avg., a column per result.

    ``results``: column key -> evaluate_sts result; ``title_by_column`` optionally renames column headers.
    A task a result lacks shows "-". Numbers are Spearman × 100 with two decimals.
    """
    titles = [(title_by_column or {}).get(col, col) for col in results]
    lines = ["| Task | " + " | ".join(titles) + " |", "|---|" + "---:|" * len(titles)]
    for task in STS_TASKS:
        if not any(task in res for res in results.values()):
            continue
        cells = [f"{main_score(res, task):.2f}" if task in res else "-" for res in results.values()]
        lines.append(f"| {DISPLAY_NAMES.get(task, task)} | " + " | ".join(cells) + " |")
    avg = [f"{float(res['avg']):.2f}" if "avg" in res else "-" for res in results.values()]
    lines.append("| Avg. | " + " | ".join(avg) + " |")
    return "\n".join(lines)


def _json_safe(value: Any) -> Any:
    """nan/inf -> None (strict JSON has no NaN); numpy scalars -> Python numbers."""
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_json(result: Mapping[str, Any], path: str | Path) -> Path:
    """Write a result dict as strict JSON (nan -> null), creating parent folders; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_json_safe(result), indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return path
