"""The frontier page's static section: the static points timed on a realistic load, and the peers that made them.

``bench.frontier`` times every point on 500 STS-B sentences re-encoded in calls of 128, which measures a static
model's call overhead more than its encode. The section shows the committed ``bench.static_speed`` run
(thousands of distinct sentences, each library's defaults and its best batch, both references) and the committed
``bench/static_peers.py`` builds (Model2Vec's ``distill`` and tokenlearn on the same corpus and teacher, with
every package's version): the static student against tokenlearn on the recipe's whole corpus (``WHOLE``; the weighted form
in ``WEIGHTED``) and on its first sentences (``SPEED``, with Model2Vec's ``distill``), and the run that settled Model2Vec's figure (``VERSIONS``: one folder under two Model2Vec versions). Nothing here
measures: it is a function of the committed summaries.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# the student and tokenlearn on the whole corpus; the static peers on the corpus' first sentences
WHOLE = Path("bench/results/static_speed_components.json")  # the recipe and tokenlearn on its whole corpus
SPEED = Path("bench/results/static_speed_tokenlearn.json")
VERSIONS = Path("bench/results/static_speed.json")  # one Model2Vec folder under two versions' encode
WEIGHTED = Path("bench/results/static_speed_weighted.json")  # the weighted form, the recipe and tokenlearn
PEERS = Path("bench/results/static_peers.json")


def committed(root: Path, path: Path) -> dict[str, Any] | None:
    file = root / path
    return json.loads(file.read_text(encoding="utf-8")) if file.is_file() else None


def versions_line(versions: dict[str, str]) -> str:
    return ", ".join(f"{name} {version}" for name, version in sorted(versions.items()))


def peers_note(run: dict[str, Any]) -> str:
    """The peers' versions as the run recorded them (a run before they were recorded says so)."""
    peers = {n: r for n, r in run["points"].items() if r["family"] == "peer"}
    if not peers:
        return ""
    known = {n: versions_line(r["versions"]) for n, r in peers.items() if r.get("versions")}
    if not known:
        return (
            "\n\nThis run did not record its peers' versions (`bench.frontier` records them since); the "
            "static section below records Model2Vec's, tokenlearn's and sentence-transformers'."
        )
    return "\n\nThe peers' versions: " + "; ".join(f"`{n}`: {v}" for n, v in known.items()) + "."


def speed_table(run: dict[str, Any]) -> str:
    teacher = run["points"]["teacher"]["sts"]["avg"]
    lines = [
        "| point | called as | STS avg. (7 tasks) | of the teacher | sentences/s | x teacher (sentcl) | x st | "
        "CPU s per s | folder MiB |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in run["points"].items():
        avg = (row.get("sts") or {}).get("avg")
        kept = "-" if avg is None or teacher is None else f"{avg / teacher:.1%}"
        lines.append(
            f"| {name} | `{row['called']}` | {'-' if avg is None else f'{avg:.2f}'} | {kept} | "
            f"{row['sentences_per_s']:,.0f} | {row['speed_vs_teacher']:.1f}x | {row['speed_vs_st']:.1f}x | "
            f"{row['cpu_per_wall']:.2f} | "
            f"{row['size']['bytes'] / 2**20:.1f} |"
        )
    return "\n".join(lines)


def peer_versions(run: dict[str, Any]) -> str:
    """One line per set of versions, naming the peers whose workers reported it."""
    seen: dict[str, list[str]] = {}
    for name, row in run["points"].items():
        if row.get("versions") and "@" not in name:
            seen.setdefault(versions_line(row["versions"]), []).append(f"`{name}`")
    return "\n".join(f"- {', '.join(names)}: {line}" for line, names in seen.items())


def shown(folder: str) -> str:
    """A folder as the page names it: relative as recorded, else its last two parts (an installed model)."""
    path = Path(folder)
    return f".../{path.parent.name}/{path.name}" if path.is_absolute() else folder


def peers_builds(peers: list[dict[str, Any]]) -> str:
    lines = []
    for build in peers:
        steps = "; ".join(
            f"{step} {v['wall_s']:.0f} s ({v['cpu_s']:.0f} CPU-s)"
            for step, v in build["steps"].items()
            if isinstance(v, dict)
        )
        corpus = build["corpus"]
        on = f"on {corpus['sentences']:,} corpus sentences" if corpus else "distill only"
        lines.append(f"- `{build['command']}` ({on}; {versions_line(build['versions'])}): {steps}")
    return "\n".join(lines)


def model2vec_note(run: dict[str, Any], frontier_avg: float | None) -> str:
    """Why Model2Vec's figure moved: one folder scored under two Model2Vec versions' encode (the run's rows)."""
    rows = run["points"]
    older = [n for n, r in rows.items() if n.startswith("model2vec-") and "@" not in n and r.get("versions")]
    if "model2vec" not in rows or not older:
        return ""
    new, old = rows["model2vec"], rows[older[0]]
    was = "" if frontier_avg is None else f" The first table's {frontier_avg:.2f} is this older figure."
    return (
        f"\n\n**Model2Vec's quality.** `{older[0]}` is Model2Vec {old['versions']['model2vec']}'s distill of the "
        f"teacher encoded by Model2Vec {old['versions']['model2vec']}: {old['sts']['avg']:.2f}. `model2vec` is "
        f"Model2Vec {new['versions']['model2vec']}'s, distilled and encoded: {new['sts']['avg']:.2f}. The "
        "teacher's `tokenizer.json` pads to a fixed 128 tokens, the distilled folder keeps that setting, and "
        "Model2Vec 0.9's `encode` tokenises with it, so every sentence's mean takes in the `[PAD]` row up to "
        "128 tokens; 0.10 tokenises without padding. The padding also costs the older encode its speed: "
        f"{old['speed_vs_teacher']:.1f}x the teacher here against {new['speed_vs_teacher']:.1f}x, which is most "
        "of why the first table (Model2Vec 0.9, short calls) puts Model2Vec so low. The right figures are "
        f"Model2Vec 0.10's with its defaults.{was}"
        " `.venv-peer` holds Model2Vec at 0.9 (its `transformers<4.58` keeps "
        "huggingface-hub under 1.0, which Model2Vec 0.10 requires: our reading of the pins, the version was not "
        "recorded then); the static peers have their own venv (`make bench-static-peer-venv`)."
    )


def same_corpus(run: dict[str, Any]) -> dict[str, Any] | None:
    """The static student and tokenlearn's model fitted on the same corpus, from a run that has both:
    {"student": name, "peer": name, "gap": points, "corpus": sentences} (None without both)."""
    rows = {n: r for n, r in run["points"].items() if "@" not in n and (r.get("sts") or {}).get("avg")}
    students = [n for n, r in rows.items() if r.get("corpus_sentences") and r.get("family") == "sentcl"]
    peers = [n for n, r in rows.items() if n.startswith("tokenlearn") and r.get("corpus_sentences")]
    pairs = [
        (s, p) for s in students for p in peers if rows[s]["corpus_sentences"] == rows[p]["corpus_sentences"]
    ]
    if not pairs:
        return None
    # the stronger tokenlearn, then the stronger student
    student, peer = max(pairs, key=lambda pair: (rows[pair[1]]["sts"]["avg"], rows[pair[0]]["sts"]["avg"]))
    gap = rows[student]["sts"]["avg"] - rows[peer]["sts"]["avg"]
    return {"student": student, "peer": peer, "gap": gap, "corpus": rows[student]["corpus_sentences"]}


def largest_same_corpus(root: Path) -> tuple[Path, dict[str, Any]] | None:
    """The committed run whose student and tokenlearn share the most corpus sentences, and their pair."""
    found = [
        (path, same_corpus(run))
        for path in (WHOLE, SPEED, WEIGHTED)
        if (run := committed(root, path)) is not None
    ]
    pairs = [(path, pair) for path, pair in found if pair is not None]
    return max(pairs, key=lambda item: (item[1]["corpus"], item[1]["gap"])) if pairs else None


def tokenlearn_note(run: dict[str, Any]) -> str:
    """The static student against tokenlearn on the same corpus (the fair peer of a trained static model)."""
    pair = same_corpus(run)
    if pair is None:
        return ""
    rows = run["points"]
    others = [
        f"`{n}` {r['sts']['avg']:.2f}"
        for n, r in rows.items()
        if n.startswith("tokenlearn")
        and "@" not in n
        and n != pair["peer"]
        and (r.get("sts") or {}).get("avg")
    ]
    also = f" (and {', '.join(others)})" if others else ""
    return (
        f"\n\n**The same corpus.** `{pair['student']}` and `{pair['peer']}`{also} were fitted to the same "
        f"teacher's vectors of the same {pair['corpus']:,} corpus sentences: tokenlearn is Model2Vec's own "
        "training step, the fair peer of a trained static student, where `model2vec` (its `distill`) uses no "
        f"corpus. `{pair['student']}` scores {rows[pair['student']]['sts']['avg']:.2f} against "
        f"{rows[pair['peer']]['sts']['avg']:.2f}: {pair['gap']:+.2f} points."
    )


def run_text(run: dict[str, Any], path: Path) -> str:
    """One static run's table, command, source and folders."""
    return (
        f"{speed_table(run)}\n\n```bash\n{run['command']}\n```\n\n(From `{path.as_posix()}`; "
        f"{run['load']['sentences']:,} distinct sentences, {run['config']['rounds']} alternating rounds, load "
        f"average {run['machine']['loadavg_start'][0]:.1f} at the start, so each point got a share of a core: the "
        "CPU column.) The folders: "
        + ", ".join(f"`{n}` {shown(r['folder'])}" for n, r in run["points"].items() if "@" not in n)
        + ". The peers' versions, as each worker reported them:\n\n"
        + peer_versions(run)
    )


def settled_model2vec(root: Path) -> dict[str, Any] | None:
    """Model2Vec's settled point (its newest version's distill with its defaults, on the realistic load)."""
    for path in (WHOLE, SPEED, VERSIONS):
        run = committed(root, path)
        if run is not None and "model2vec" in run["points"]:
            return {**run["points"]["model2vec"], "source": path.as_posix()}
    return None


def settled_note(run: dict[str, Any], root: Path) -> str:
    """Under the first table: its Model2Vec row against the settled one, when they differ."""
    old, settled = run["points"].get("model2vec"), settled_model2vec(root)
    if old is None or settled is None or old["sts"]["avg"] == settled["sts"]["avg"]:
        return ""
    version = (settled.get("versions") or {}).get("model2vec", "?")
    return (
        f"\n\nThe `model2vec` row above ({old['sts']['avg']:.2f} at {old['speed_vs_teacher']:.2f}x) is an older "
        "Model2Vec's `encode`, which averages the tokenizer's padding rows into every sentence, timed in short "
        f"calls; it understates the peer. Model2Vec {version}'s settled point, on the realistic load below "
        f"(`{settled['source']}`): {settled['sts']['avg']:.2f} at {settled['speed_vs_teacher']:.1f}x the teacher."
    )


def static_section(root: Path, batch: int, frontier_avg: float | None = None) -> str:
    """The section's text, or nothing when no ``bench.static_speed`` run is committed."""
    whole, run, versions = committed(root, WHOLE), committed(root, SPEED), committed(root, VERSIONS)
    first = whole or run or versions
    if first is None:
        return ""
    peers = committed(root, PEERS)
    text = (
        "\n\n## Static points on a realistic load\n\n"
        f"The first table encodes the STS-B test sentences in batches of {batch} (sentcl's points), again until a "
        "second has passed; a static model's pass over them takes milliseconds, so call overhead weighs in. Here "
        "every point encodes the same thousands of distinct sentences "
        f"of the offline English corpus (mean {first['load']['mean_words']:.1f} words) in one call per pass, one "
        "thread, in alternating rounds; `x teacher` is the median per-round ratio to sentcl's PyTorch encode of "
        "the teacher (the first table's 1x), `x st` to sentence-transformers' encode of it. `NAME@all` is the "
        "same model called with one batch of every sentence (each library's documented batch-size setting). "
        "Each point is called exactly as its column says; STS is measured by `sentcl eval`'s path.\n\n"
    )
    if whole is not None:
        text += (
            "### On the recipe's whole corpus\n\n" + run_text(whole, WHOLE) + tokenlearn_note(whole) + "\n\n"
        )
    weighted = committed(root, WEIGHTED)
    if weighted is not None:
        text += (
            "### The weighted form, on the recipe's whole corpus\n\n"
            "`weighted-256` is the recipe `distill_static_weighted` (a mean whose weights come from a small "
            "attention over the rows: [static students](static-students-cpu.md)), beside the one-table recipe "
            "and tokenlearn in one run.\n\n"
            + run_text(weighted, WEIGHTED)
            + tokenlearn_note(weighted)
            + "\n\n"
        )
    if run is not None:
        if whole is not None:
            text += "### On the corpus' first sentences, with Model2Vec's `distill`\n\n"
        text += run_text(run, SPEED) + tokenlearn_note(run)
    if versions is not None:
        text += (
            "\n\n### Model2Vec 0.9 against 0.10\n\n"
            + run_text(versions, VERSIONS)
            + model2vec_note(versions, frontier_avg)
        )
    if peers:
        text += (
            f"\n\nThe peers' folders were built by `bench/static_peers.py` (from `{PEERS.as_posix()}`), one "
            f"thread:\n\n{peers_builds(peers['builds'])}"
        )
    return text
