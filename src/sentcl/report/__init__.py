"""``sentcl report``: a Markdown page with tables and PNG figures for several runs or models.

:func:`make_report` reads each source (run folder, model folder, offline short name), computes the
tasks results.json lacks (cached, see :mod:`sentcl.report.collect`), and writes ``report.md`` plus one
PNG per figure (6.4 x 4.8 in at 100 dpi = 640 x 480 px) into the output folder.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sentcl.defaults import ENCODE_BATCH_SIZE
from sentcl.files.output import Input, claim_folder, prepare_folder
from sentcl.files.paths import resolve_data_dir
from sentcl.report.collect import ReportSource, ensure_results, open_source, read_trajectory
from sentcl.report.markdown import render
from sentcl.report.plots import (
    PIXELS,
    plot_alignment_uniformity,
    plot_similarity_by_gold,
    plot_spectrum,
    plot_trajectory,
)

DEFAULT_TASKS = ("sts", "transfer_fast", "align_uniform", "anisotropy")
FIGURES = {
    "alignment_uniformity.png": "Alignment vs. uniformity (SimCSE Figure 3)",
    "trajectory.png": "Alignment/uniformity during training (SimCSE Figure 2)",
    "spectrum.png": "Singular spectrum (SimCSE Appendix F)",
    "similarity_by_gold.png": "Cosine similarity by gold score (SimCSE Appendix G)",
}

__all__ = ["DEFAULT_TASKS", "PIXELS", "Report", "make_report", "read_trajectory"]


@dataclass
class Report:
    markdown: Path
    figures: list[Path]
    sources: list[ReportSource]


def _unique_names(sources: list[ReportSource]) -> None:
    """Equal names (e.g. several runs' best/) get their parent folders prepended until they differ."""
    for depth in range(2, 6):
        names = [s.name for s in sources]
        dupes = {n for n in names if names.count(n) > 1}
        if not dupes:
            return
        for s in sources:
            if s.name in dupes:
                s.name = "/".join(Path(s.spec).resolve().parts[-depth:])


def make_report(
    specs: Sequence[str],
    output: str | Path,
    eval_tasks: Sequence[str] = DEFAULT_TASKS,
    data_dir: str | Path | None = None,
    batch_size: int = ENCODE_BATCH_SIZE,
    pooler: str | None = None,
) -> Report:
    """Write ``<output>/report.md`` and its figures for ``specs``; a figure whose data no source has is left out."""
    if not specs:
        raise ValueError("sentcl report needs at least one run folder, model folder or model name")
    output = Path(output)
    inputs = [Input(Path(spec), "run") for spec in specs if Path(spec).is_dir()]
    claim_folder(output, "report", "--output", inputs)  # new, empty or an earlier report; never a run's
    data = resolve_data_dir(data_dir, ["senteval"])
    sources = [open_source(spec, output / "cache", pooler) for spec in specs]
    _unique_names(sources)
    prepare_folder(output, "report", "--output", inputs)
    for source in sources:
        ensure_results(source, eval_tasks, data, batch_size)
    figures: dict[str, str] = {}
    notes: list[str] = []
    au = {s.name: s.results["align_uniform"] for s in sources if "align_uniform" in s.results}
    if au:
        plot_alignment_uniformity(
            {n: (r["alignment"], r["uniformity"]) for n, r in au.items()}, output / "alignment_uniformity.png"
        )
        figures["alignment_uniformity.png"] = FIGURES["alignment_uniformity.png"]
    tracks = {s.name: s.trajectory for s in sources if s.trajectory}
    if tracks:
        plot_trajectory(tracks, output / "trajectory.png")
        figures["trajectory.png"] = FIGURES["trajectory.png"]
    else:
        notes.append(
            "No training trajectory: no run logged alignment/uniformity (eval.track_alignment_uniformity=true)."
        )
    aniso = {s.name: s.results["anisotropy"] for s in sources if "anisotropy" in s.results}
    if aniso:
        plot_spectrum({n: r["spectrum"] for n, r in aniso.items()}, output / "spectrum.png")
        plot_similarity_by_gold(
            {n: r["similarity_by_gold"] for n, r in aniso.items()}, output / "similarity_by_gold.png"
        )
        figures["spectrum.png"] = FIGURES["spectrum.png"]
        figures["similarity_by_gold.png"] = FIGURES["similarity_by_gold.png"]
    models = [s.name for s in sources if not s.is_run]
    if models:
        notes.append(f"{', '.join(models)}: model(s), not runs, so no training trajectory or dev score.")
    output.mkdir(parents=True, exist_ok=True)
    md = output / "report.md"
    md.write_text(render(sources, figures, notes), encoding="utf-8")
    return Report(md, [output / name for name in figures], sources)
