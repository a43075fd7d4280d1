"""The output policy, one home: what a command may write, replace or remove. Every command that writes a
folder declares it here (``claim_folder`` / ``write_folder``), and every file output passes ``claim_file``
(``tests/reliability/test_output_policy.py`` enumerates the commands from the parser and runs each).

The rules:

* **A folder sentcl makes carries a marker**, ``.sentcl`` (JSON: ``kind``, ``format``, ``sentcl_version``).
  An existing folder is written into or replaced only when it is sentcl's own folder of the same kind: its
  marker says so, or (a folder written before markers existed) ``LEGACY`` recognises its files. A folder
  of the user's files, a model folder, or sentcl's folder of another kind is refused, naming what it holds.
  An empty folder is taken (and marked).
* **Replacing is asked for.** A command that replaces its own earlier output whole (an index, an export, a
  post-processed model) does so only with ``--overwrite``; a command that continues its own folder (a
  run's ``--resume``, a sharded encode, a report) writes into it.
* **Never onto an input.** Outputs and inputs are compared as resolved paths: an output equal to an input,
  holding an input (replacing it would delete the input), or inside an input folder (it would change that
  folder's fingerprint: a model's, a run's) is refused, unless the input allows outputs inside it
  (``Input(..., holds_outputs=True)``: an index inside its shard folder).
* **Single files** (an encode's ``.npy``, a mined or built CSV, a corpus, an evaluation's JSON or plot, a
  downloaded file) carry no marker: a ``.npy``, a CSV or a text file has no room for one that every other
  reader would ignore, and a sidecar beside it would litter the user's folder and could be copied next to an
  edited file. So an existing file is never taken as sentcl's: ``claim_file`` refuses it unless
  ``--overwrite`` is given, before any work; the file is then written whole into a temporary sibling and
  renamed over the old one (``sentcl.files.atomic``), so a failed run leaves the old file as it was.
* **A symbolic link is followed, never replaced**: ``--output LINK`` to sentcl's folder replaces the folder
  it names and keeps the link; a dangling link or a loop is refused, named as what it is.
* **Replacing keeps the user's files**: a folder written whole records the names it holds in its marker
  (``files``); ``--overwrite`` refuses a folder holding names added since (a user's notes, a data folder),
  naming them, instead of deleting them with the rest.
* **Temporaries are provably sentcl's.** A temporary folder is ``.tmp-<name>-p<pid>-<8 hex>`` and holds
  ``.sentcl-temp`` (JSON: ``pid``, ``host``, ``target``). ``remove_stale_temps`` removes a sibling only when
  it holds that file, names the same target and its process is gone; anything else with a ``.tmp-`` name
  is the user's and stays. A file temporary has no room for the record, so its name carries it
  (``sentcl.files.atomic.FILE_TEMP_RE``: pid and host tag); ``claim_file`` removes a regular file of that
  name whose process is gone, naming it and its size, and names (keeps) a temporary of the target without
  an owner in its name (an older sentcl's) or whose writer still runs.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sentcl.files.atomic import (
    atomic_dir_write,
    atomic_write_json,
    dumps_strict,
    process_alive,
    remove_stale_file_temps,
)

MARKER = ".sentcl"
TEMP_MARKER = ".sentcl-temp"
MARKER_FORMAT = 1
#: folder kinds -> the files that show a folder of that kind written before markers existed
LEGACY: dict[str, tuple[str, ...]] = {
    "index": ("faiss.json", "index.faiss"),
    "shards": ("manifest.json", "shard-00000.json"),
    "export": ("sentcl_onnx.json",),
    "run": ("metrics.jsonl", "provenance.json", "checkpoint-*", "best", "results.json"),
    "report": ("report.md", "report_cache.json"),
    "search-index": ("fingerprint.json", "embeddings.npy"),
    "experiment": (),  # an old pages folder: ``_old_pages`` (a page's .md, its .png and its runs/)
    "teacher-cache": ("teacher.json",),
    "model": (),
    "summary": ("results.json",),
    "download": (),  # the source's own marker file is passed as ``known`` (sentcl.data.download)
}
#: what each kind is called in a message
NAMES = {
    "index": "a sentcl index",
    "shards": "sentcl embedding shards",
    "export": "a sentcl ONNX export",
    "run": "a sentcl training run",
    "report": "a sentcl report",
    "search-index": "a sentcl search index",
    "experiment": "a sentcl experiment's pages",
    "teacher-cache": "a sentcl teacher cache entry",
    "model": "a model written by sentcl",
    "summary": "a sentcl run summary",
    "download": "data that sentcl downloaded",
}
#: names that show a model folder (never replaced, never written into by another kind)
MODEL_FILES = ("config.json", "model.safetensors", "pytorch_model.bin", "modules.json", "model.onnx")


class OutputRefused(ValueError):
    """An output would replace, delete or write into what the command did not make (a user error, exit 2)."""


@dataclass(frozen=True)
class Input:
    """A path a command reads: ``flag`` names it in messages; ``holds_outputs``: outputs may live inside it."""

    path: Path
    flag: str
    holds_outputs: bool = False


def model_input(model: str, flag: str = "--model") -> list[Input]:
    """The model folder a command reads, as an input (a hub id or other name that is no folder: none)."""
    from sentcl.files.paths import resolve_model_path

    folder = Path(resolve_model_path(str(model)))
    return [Input(folder, flag)] if folder.is_dir() else []


def read_marker(folder: Path) -> dict[str, Any] | None:
    """The folder's marker (a dict with ``kind``), or None when it has none or an unreadable one."""
    try:
        data = json.loads((Path(folder) / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("kind"), str) else None


def write_marker(folder: Path, kind: str, files: Sequence[str] | None = None) -> None:
    """Mark ``folder`` as sentcl's folder of ``kind``; ``files``: the names sentcl wrote at its top (a folder
    written whole), so that a later ``--overwrite`` can tell the files a user added since."""
    from sentcl.version import __version__

    record: dict[str, Any] = {"kind": kind, "format": MARKER_FORMAT, "sentcl_version": __version__}
    if files is not None:
        record["files"] = sorted(files)
    atomic_write_json(Path(folder) / MARKER, record)


def _old_pages(folder: Path) -> bool:
    """An experiment's pages written before markers: some page ``NAME.md`` beside its plot ``NAME.png`` and its
    run summaries ``NAME/runs/`` (what every older ``sentcl experiment`` wrote), not any Markdown file."""
    return any(
        (folder / f"{md.stem}.png").is_file() and (folder / md.stem / "runs").is_dir()
        for md in folder.glob("*.md")
    )


def _legacy(folder: Path, kind: str) -> bool:
    if kind == "experiment" and _old_pages(folder):
        return True
    return any(any(folder.glob(pattern)) for pattern in LEGACY.get(kind, ()))


def _shown(folder: Path) -> str:
    names = sorted(p.name for p in folder.iterdir() if p.name != MARKER)
    return ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")


def _resolved(path: Path) -> Path:
    """``path`` resolved; a symbolic-link loop (which ``resolve`` refuses) as its absolute path, so that the
    command's own check of that input names the loop."""
    try:
        return Path(path).resolve()
    except (RuntimeError, OSError):
        return Path(os.path.abspath(path))


def _inside(a: Path, b: Path) -> bool:
    return a == b or b in a.parents


def check_not_input(output: Path, inputs: Iterable[Input], flag: str) -> None:
    """Refuse an output that equals, holds or sits inside an input (module doc)."""
    out = _resolved(Path(output))
    for given in inputs:
        inp = _resolved(Path(given.path))
        if out == inp or _inside(inp, out):
            raise OutputRefused(
                f"{flag} {output} is {'the' if out == inp else 'a folder holding the'} {given.flag} "
                f"{given.path}: writing it would destroy the input; choose another {flag}"
            )
        if _inside(out, inp) and not given.holds_outputs and inp.is_dir():
            raise OutputRefused(
                f"{flag} {output} lies inside the {given.flag} folder {given.path}: writing there changes the "
                f"input; choose a {flag} outside it"
            )


def claim_folder(
    folder: Path,
    kind: str,
    flag: str,
    inputs: Sequence[Input] = (),
    *,
    replace: bool = False,
    overwrite: bool = False,
    known: Sequence[str] = (),
) -> bool:
    """Check that ``kind`` may be written at ``folder`` (module doc), before any work. ``replace``: the
    command replaces the folder whole, so an earlier one of its own needs ``overwrite``. ``known``: exact names
    that only this command's own earlier output holds (this grid's page or page folder; a download's marker
    file), any of them. Returns whether the folder exists (already sentcl's, or empty)."""
    folder = Path(folder)
    check_not_input(folder, inputs, flag)
    if replace and _inside(Path.cwd().resolve(), _resolved(folder)):
        raise OutputRefused(
            f"{flag} {folder} holds the working folder, which sentcl never replaces; choose another"
        )
    if not os.path.lexists(folder):
        _probe_folder(folder, flag, replace)
        return False
    if not folder.is_dir():
        from sentcl.files.pathcheck import input_file_problem

        found = input_file_problem(folder)
        problem = found[0] if found else "is a file, not a folder"
        raise OutputRefused(f"{flag} {folder} {problem}; choose a new folder")
    if not any(p.name != MARKER for p in folder.iterdir()):
        _probe_folder(folder, flag, replace)
        return True
    marker = read_marker(folder)
    own = (
        marker["kind"] == kind
        if marker
        else _legacy(folder, kind) or any((folder / n).exists() for n in known)
    )
    if not own:
        if marker:
            what = NAMES.get(marker["kind"], marker["kind"])
        elif any((folder / n).is_file() for n in MODEL_FILES):
            what = "a model"
        else:
            what = "files sentcl did not write"
        raise OutputRefused(
            f"{flag} {folder} holds {what} ({_shown(folder)}), not {NAMES.get(kind, kind)}; sentcl never "
            f"replaces or writes into it: choose a new or empty folder"
        )
    if replace and not overwrite:
        raise OutputRefused(
            f"{flag} {folder} holds an earlier {NAMES.get(kind, kind).removeprefix('a ')}; pass --overwrite to "
            "replace it, or choose a new folder"
        )
    added = added_since(folder, marker) if replace else []
    if added:
        shown = ", ".join(added[:5]) + (", ..." if len(added) > 5 else "")
        raise OutputRefused(
            f"{flag} {folder} holds {len(added)} file(s) sentcl did not write there ({shown}); --overwrite "
            "replaces only sentcl's own output: move them out, or choose a new folder"
        )
    _probe_folder(folder, flag, replace)
    return True


def _probe_folder(folder: Path, flag: str, replace: bool) -> None:
    """A file can be made where ``folder`` will be written (beside it when it is replaced whole, else in it or
    the nearest folder above it that exists): a read-only folder fails at the claim, before any work."""
    from sentcl.files.pathcheck import check_output_dir

    real = Path(os.path.realpath(folder)) if Path(folder).is_symlink() else Path(folder)
    check_output_dir(real, flag, whole=replace)


def added_since(folder: Path, marker: dict[str, Any] | None) -> list[str]:
    """The names at the top of ``folder`` that its marker does not list as written by sentcl (a marker
    written before the list was kept lists nothing: none)."""
    written = marker.get("files") if marker else None
    if not isinstance(written, list):
        return []
    known = {MARKER, *map(str, written)}
    return sorted(p.name + ("/" if p.is_dir() else "") for p in Path(folder).iterdir() if p.name not in known)


def prepare_folder(
    folder: Path, kind: str, flag: str, inputs: Sequence[Input] = (), known: Sequence[str] = ()
) -> Path:
    """``claim_folder`` for a folder written into piece by piece (a run, shards, a report): made and marked."""
    claim_folder(folder, kind, flag, inputs, known=known)
    Path(folder).mkdir(parents=True, exist_ok=True)
    if read_marker(folder) is None:
        write_marker(folder, kind)
    return Path(folder)


def claim_file(path: Path, flag: str, inputs: Sequence[Input] = (), *, overwrite: bool = False) -> Path:
    """Check a single-file output before any work (module doc, *single files*): never an input nor inside an
    input folder, never a folder; an existing file only with ``overwrite`` (``--overwrite``); and a file can
    be made there (``sentcl.files.pathcheck.check_output_file``: a read-only folder fails now)."""
    from sentcl.files.pathcheck import check_output_file

    path = Path(path)
    check_not_input(path, inputs, flag)
    if os.path.isdir(path):
        raise OutputRefused(f"{flag} {path} is a folder; give the name of a file to write")
    remove_stale_file_temps(path)
    if os.path.lexists(path) and not os.path.isfile(path):
        return check_output_file(path, flag)  # a FIFO, a device, a link loop: named as what it is
    if os.path.lexists(path) and not overwrite:
        raise OutputRefused(
            f"{flag} {path} exists; sentcl replaces a file only when asked: pass --overwrite to replace it, "
            "or choose a new name"
        )
    return check_output_file(path, flag)


def temp_name(target: Path) -> Path:
    """A temporary sibling of ``target``: ``.tmp-<name>-p<pid>-<8 hex>``."""
    target = Path(target)
    return target.parent / f".tmp-{target.name}-p{os.getpid()}-{uuid.uuid4().hex[:8]}"


def mark_temp(tmp: Path, target: Path) -> None:
    """Put the owner record into a temporary folder that sentcl just made."""
    record = {"pid": os.getpid(), "host": socket.gethostname(), "target": Path(target).name}
    (Path(tmp) / TEMP_MARKER).write_text(dumps_strict(record, indent=None), encoding="utf-8")


def remove_stale_temps(target: Path, log: Callable[[str], None] | None = None) -> list[Path]:
    """Remove the temporaries of ``target`` that a killed sentcl left: only those holding ``.sentcl-temp``
    for this target, on this host, whose process is gone. Returns what was removed."""
    import shutil

    target = Path(target)
    removed = []
    for tmp in sorted(target.parent.glob(f".tmp-{target.name}-*")):
        try:
            record = json.loads((tmp / TEMP_MARKER).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # not provably sentcl's: the user's, left alone
        if not isinstance(record, dict) or record.get("target") != target.name:
            continue
        pid = record.get("pid")
        if record.get("host") != socket.gethostname() or not isinstance(pid, int) or process_alive(pid):
            continue
        shutil.rmtree(tmp, ignore_errors=True)
        removed.append(tmp)
        if log is not None:
            log(f"removed {tmp}, the temporary folder of an interrupted write of {target}")
    return removed


def write_folder(
    folder: Path,
    kind: str,
    write: Callable[[Path], None],
    flag: str,
    inputs: Sequence[Input] = (),
    *,
    overwrite: bool = False,
) -> Path:
    """Write a whole folder of ``kind`` atomically (``sentcl.files.atomic.atomic_dir_write``): ``write(tmp)``
    fills a marked temporary sibling (made before the call), which then takes the folder's place. The claim
    is checked again here (the command checked it before its work; the folder may have changed since)."""
    claim_folder(folder, kind, flag, inputs, replace=True, overwrite=overwrite)
    if Path(
        folder
    ).is_symlink():  # a link to sentcl's folder (claimed above): that folder is replaced, the link kept
        folder = Path(os.path.realpath(folder))
    remove_stale_temps(folder)

    def marked(tmp: Path) -> None:
        tmp.mkdir(parents=True, exist_ok=True)
        mark_temp(tmp, folder)
        write(tmp)
        (tmp / TEMP_MARKER).unlink()
        write_marker(tmp, kind, [p.name for p in tmp.iterdir() if p.name != MARKER])

    atomic_dir_write(folder, marked, temp=temp_name(folder))
    return Path(folder)
