"""``sentcl verify [--full] PATH ...``: check every file that sentcl's records below each folder name against
its recorded size and SHA-256 (``sentcl.files.fingerprint.verify_artefacts``): indexes, embedding shards, ONNX
exports, run summaries, teacher caches. ``--full`` reads every byte, so bit rot that left a file's metadata
unchanged (which the fingerprint cache cannot see) is found. Writes nothing but the fingerprint cache."""

from __future__ import annotations

import argparse
import time

from sentcl.files.kinds import read_path
from sentcl.files.pathcheck import check_input_dir


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify",
        help="Check sentcl's artefacts (indexes, shards, exports, summaries, caches) against their SHA-256.",
        description="Every file that a record of sentcl's names below each folder is checked against its "
        "recorded size and SHA-256. Without --full, a file unchanged since it was last hashed (same size, "
        "mtime, ctime and inode) is taken from the fingerprint cache.",
    )
    p.add_argument("paths", nargs="+", type=read_path, metavar="PATH", help="Folders to check.")
    p.add_argument(
        "--full", action="store_true", help="Read every byte (no fingerprint cache): finds silent bit rot."
    )
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from sentcl.files.fingerprint import verify_artefacts

    damaged: list[str] = []
    for path in args.paths:
        start = time.perf_counter()
        count, size, problems = verify_artefacts(check_input_dir(path, "PATH"), full=args.full)
        how = "every byte read" if args.full else "unchanged files from the fingerprint cache"
        if not count:
            raise ValueError(_unrecorded_message(path))
        print(
            f"{path}: {count - len(problems)} of {count} recorded files ({size / 1e6:.1f} MB) as recorded, "
            f"in {time.perf_counter() - start:.2f} s ({how})"
        )
        for problem in problems:
            print(f"  damaged: {problem}")
        damaged += problems
    if damaged:
        raise ValueError(f"{len(damaged)} recorded file(s) changed since sentcl wrote them (listed above)")
    return 0


def _unrecorded_message(path: str) -> str:
    """Why ``path`` has nothing to verify: an artefact of an older sentcl (its header, no records), or none."""
    from pathlib import Path

    from sentcl.files.fingerprint import unrecorded
    from sentcl.index.format import LEGACY_ANN_FILE, META_FILE
    from sentcl.modeling.onnx_encoder import ONNX_CONFIG

    headers = {  # the header of each artefact sentcl writes, and the command that writes it again
        META_FILE: "rebuild it with sentcl index build",
        LEGACY_ANN_FILE: "rebuild it with sentcl index build",
        "manifest.json": "encode it again with sentcl encode",
        ONNX_CONFIG: "export it again with sentcl export",
    }
    for name, fix in headers.items():
        if (Path(path) / name).is_file():
            return unrecorded(str(Path(path) / name), fix)
    return f"{path} holds no files recorded by sentcl (no index, shards, export or summary)"
