"""Provenance of a run: what produced it, written atomically to ``<output_dir>/provenance.json`` at run start.

Holds the resolved config, the command line, the versions of sentcl/torch/transformers (and a few more), the
git commit of the sentcl checkout when it is one (with a ``dirty`` flag), the seed and the hardware. A
``--resume`` keeps the earlier starts in ``previous_starts``.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from sentcl.files.atomic import atomic_write_json

PROVENANCE_FILE = "provenance.json"
PACKAGES = ("sentcl", "torch", "transformers", "tokenizers", "numpy", "sentence-transformers")


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def git_info(where: Path | None = None) -> dict[str, Any] | None:
    """{commit, dirty} of the git checkout holding sentcl's source; None when it is not in one (or no git)."""
    where = where or Path(__file__).resolve().parent
    try:

        def git(*args: str) -> str:
            return subprocess.run(
                ["git", "-C", str(where), *args], capture_output=True, text=True, check=True, timeout=10
            ).stdout.strip()

        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": dirty}


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else what ``platform`` knows; shared with bench/common.py."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags(wanted: Sequence[str] | None = None) -> list[str]:
    """The CPU's feature flags (/proc/cpuinfo's first ``flags`` line; none elsewhere), those of ``wanted`` only
    when given; shared with bench/common.py and the int8 export's choice of kernel."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
    except OSError:
        return []
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    flags = line.split(":", 1)[-1].split()
    return flags if wanted is None else [f for f in flags if f in wanted]


def hardware(device: str | torch.device | None = None) -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": cpu_model(),
        "logical_cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "device": str(device) if device is not None else None,
    }
    with contextlib.suppress(ValueError, OSError):
        info["memory_gib"] = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    if torch.cuda.is_available():
        info["cuda"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return info


def provenance(config: dict[str, Any], seed: int, device: str | torch.device | None = None) -> dict[str, Any]:
    return {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "argv": list(sys.argv),
        "python": platform.python_version(),
        "versions": {p: _version(p) for p in PACKAGES},
        "git": git_info(),
        "seed": seed,
        "hardware": hardware(device),
        "config": config,
    }


def write_provenance(
    run_dir: Path, config: dict[str, Any], seed: int, device: str | torch.device | None = None
) -> Path:
    """Write ``run_dir/provenance.json`` atomically (temporary file + rename); returns its path."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    target = run_dir / PROVENANCE_FILE
    record = provenance(config, seed, device)
    if target.is_file():
        try:
            old = json.loads(target.read_text(encoding="utf-8"))
            record["previous_starts"] = [*old.pop("previous_starts", []), old]
        except json.JSONDecodeError:
            pass  # a hand-damaged file is replaced
    return atomic_write_json(target, record, default=str)
