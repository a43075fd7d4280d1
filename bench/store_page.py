"""Rebuild docs/results/store-cpu.md's measured table from the committed ``bench/results/store_*.json``.

python -m bench.store_page        # from the repository root
"""

from __future__ import annotations

import json
from pathlib import Path

PAGE = Path("docs/results/store-cpu.md")
BEGIN, END = "<!-- store table: begin -->", "<!-- store table: end -->"


def table(results: list[Path]) -> str:
    head = (
        "| data | engine | setting | recall@10 | QPS 1 query | QPS batch 64 | × faiss, 1 | × faiss, 64 | build s "
        "| RSS growth MB | disk MB |\n|---|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = []
    for path in results:
        res = json.loads(path.read_text(encoding="utf-8"))
        lines.append(head)
        for r in res["rows"]:
            setting = f"efSearch {r['setting']}" if "hnsw" in r["engine"] else f"nprobe {r['setting']}"
            lines.append(
                f"| {res['n']:,} ({path.name}) | {r['engine']} | {setting} | {r['recall_at_10']:.3f} "
                f"| {r['qps_one_query']:.1f} | {r['qps_batch64']:.1f} | {r.get('x_faiss_one_query', '')} "
                f"| {r.get('x_faiss_batch64', '')} | {r['build_s']} | {r['rss_growth_mb']} | {r['disk_mb']} |"
            )
        versions = res["machine"]["versions"]
        lines.append("")
        lines.append(
            f"{path.name}: {res['data']}; load average at start {res['machine']['loadavg_start'][0]:.1f}; "
            + ", ".join(f"{k} {v}" for k, v in versions.items() if v)
        )
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    results = sorted(Path("bench/results").glob("store_*.json"))
    text = PAGE.read_text(encoding="utf-8")
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    PAGE.write_text(text[:start] + "\n" + table(results) + text[end:], encoding="utf-8")
    print(f"wrote {PAGE} from {len(results)} result file(s)")


if __name__ == "__main__":
    main()
