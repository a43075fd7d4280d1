"""Streaming line corpora: train on files far larger than memory, tokenised once and cached on disk.

One pass over the file builds a line index (byte offsets of every non-empty line, int64), so line i is one
``pread``; a second, optional pass tokenises every line once into a flat token file plus offsets, so a
batch is collated from cached ids without the tokenizer. Both live under the cache folder
(``cache_dir`` argument, else ``$SENTCL_CACHE``, else ``~/.cache/sentcl``), keyed by a hash of what they
depend on — the index by (file path, size, mtime); the tokens also by (tokenizer name and a hash of its
full definition, max_length) — and are written to a temporary folder renamed into place (atomic).

Reads use ``os.pread`` rather than ``mmap``: pages of a mapped file count towards the process' resident
memory once touched, pages read through the page cache do not, so RSS stays flat over an epoch.
"""

from __future__ import annotations

import array
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np
import torch
from torch import Tensor
from transformers import PreTrainedTokenizerBase

from sentcl.data.readers import Corpus, decode_line, require_file
from sentcl.files.atomic import dumps_strict
from sentcl.files.budget import bounded_lines, bounded_texts
from sentcl.files.fingerprint import json_digest, text_sha256
from sentcl.files.paths import CACHE_ENV, cache_root  # noqa: F401 - the cache folder, one home

logger = logging.getLogger(__name__)
FORMAT_VERSION = 1
TOKENIZE_CHUNK = 4096  # lines tokenised per tokenizer call while building the cache


def file_key(path: Path) -> dict[str, Any]:
    """What the line index depends on: the file's absolute path, size and modification time."""
    stat = path.stat()
    return {"path": str(path.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def tokenizer_key(tokenizer: PreTrainedTokenizerBase) -> dict[str, str]:
    """The tokenizer's name and a hash of its whole definition (vocabulary, normaliser, special tokens)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        # truncation/padding are per-call settings the backend remembers: not part of the definition
        spec = {k: v for k, v in json.loads(backend.to_str()).items() if k not in ("truncation", "padding")}
        definition = json.dumps(spec, sort_keys=True)
    else:
        definition = json.dumps(sorted(tokenizer.get_vocab().items())) + repr(tokenizer.init_kwargs)
    return {
        "name_or_path": str(getattr(tokenizer, "name_or_path", "")),
        "class": type(tokenizer).__name__,
        "definition_sha256": text_sha256(definition),
    }


def _build_atomically(final: Path, build: Callable[[Path], None]) -> bool:
    """Run ``build(tmp)`` in a fresh temporary folder beside ``final`` and rename it into place.

    Returns False (and builds nothing) when ``final`` already exists, or when another process renamed
    its own copy into place first."""
    if final.is_dir():
        return False
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    try:
        build(tmp)
        os.rename(tmp, final)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if final.is_dir():
            return False  # lost the race to a concurrent build of the same key
        raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return True


def _iter_nonempty(path: Path) -> Iterator[tuple[int, int, int]]:
    """(line number, start byte, stop byte) of each non-empty line, stripped of surrounding whitespace;
    yields (lineno, -1, -1) for an empty line so that the caller can count it."""
    offset = 0
    with open(path, "rb") as handle:
        for lineno, raw, used in bounded_lines(handle, path):  # a line over the input budget is cut, counted
            text = decode_line(raw, path, lineno)
            stripped = text.strip()
            if stripped:
                lead = len(text) - len(text.lstrip())  # characters before the text
                start = offset + len(text[:lead].encode("utf-8"))
                yield lineno, start, start + len(stripped.encode("utf-8"))
            else:
                yield lineno, -1, -1
            offset += used


def _build_index(path: Path, key: dict[str, Any]) -> Callable[[Path], None]:
    def build(tmp: Path) -> None:
        bounds = array.array("q")
        empty = 0
        for _, start, stop in _iter_nonempty(path):
            if start < 0:
                empty += 1
            else:
                bounds.extend((start, stop))
        lines = np.frombuffer(bounds, dtype=np.int64).reshape(-1, 2)  # (N, 2): start, stop byte
        np.save(tmp / "lines.npy", lines)
        meta = {"format": FORMAT_VERSION, **key, "lines": len(lines), "empty_lines": empty}
        (tmp / "meta.json").write_text(dumps_strict(meta) + "\n", encoding="utf-8")

    return build


class _Reader:
    """A lazily (re)opened read-only file descriptor: safe across fork (DataLoader workers)."""

    def __init__(self, path: Path) -> None:
        self.path, self._fd, self._pid = path, -1, -1

    def read(self, size: int, offset: int) -> bytes:
        if self._pid != os.getpid():
            self._fd, self._pid = os.open(self.path, os.O_RDONLY), os.getpid()
        return os.pread(self._fd, size, offset)

    def close(self) -> None:
        if self._fd >= 0 and self._pid == os.getpid():
            os.close(self._fd)
        self._fd, self._pid = -1, -1

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "_fd": -1, "_pid": -1}


class TokenCache:
    """Token ids of every indexed line: a flat file of ids and (N + 1) int64 offsets into it."""

    def __init__(self, folder: Path) -> None:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        self.folder = folder
        self.dtype = np.dtype(meta["dtype"])
        self.offsets = np.load(folder / "offsets.npy", mmap_mode="r")  # (N + 1,)
        self._ids = _Reader(folder / "ids.bin")

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> list[int]:
        start, stop = int(self.offsets[i]), int(self.offsets[i + 1])
        size = self.dtype.itemsize
        raw = self._ids.read((stop - start) * size, start * size)
        return np.frombuffer(raw, dtype=self.dtype).tolist()

    def close(self) -> None:
        self._ids.close()


def _build_tokens(
    lines: LineFile, tokenizer: PreTrainedTokenizerBase, max_length: int, key: dict[str, Any]
) -> Callable[[Path], None]:
    dtype = np.dtype(np.uint16 if len(tokenizer) <= np.iinfo(np.uint16).max + 1 else np.int32)

    def build(tmp: Path) -> None:
        offsets = array.array("q", [0])
        with open(tmp / "ids.bin", "wb") as out:
            for start in range(0, len(lines.all_lines), TOKENIZE_CHUNK):
                texts = [
                    lines.all_lines[i]
                    for i in range(start, min(start + TOKENIZE_CHUNK, len(lines.all_lines)))
                ]
                ids = tokenizer(bounded_texts(texts, max_length), truncation=True, max_length=max_length)[
                    "input_ids"
                ]
                for row in ids:
                    offsets.append(offsets[-1] + len(row))
                out.write(np.fromiter((t for row in ids for t in row), dtype=dtype).tobytes())
        np.save(tmp / "offsets.npy", np.frombuffer(offsets, dtype=np.int64))
        meta = {"format": FORMAT_VERSION, **key, "dtype": dtype.name, "tokens": offsets[-1]}
        (tmp / "meta.json").write_text(dumps_strict(meta) + "\n", encoding="utf-8")

    return build


class LineFile(Sequence[str]):
    """The non-empty lines of a text file, stripped, by random access; optionally their cached token ids."""

    def __init__(
        self, path: str | Path, cache_dir: str | Path | None = None, max_examples: int | None = None
    ) -> None:
        self.path = Path(path)
        require_file(self.path)
        self.root = cache_root(cache_dir) / "streaming"
        self.key = file_key(self.path)
        folder = self.root / f"lines-{json_digest(self.key)}"
        self.built_index = _build_atomically(folder, _build_index(self.path, self.key))
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        self.empty_lines = int(meta["empty_lines"])
        self.bounds = np.load(folder / "lines.npy", mmap_mode="r")  # (N, 2): start, stop byte
        self.size = len(self.bounds) if max_examples is None else min(len(self.bounds), max_examples)
        self.all_lines = _AllLines(self)
        self._text = _Reader(self.path)
        self.tokens: TokenCache | None = None
        self.built_tokens = False

    def __len__(self) -> int:
        return self.size

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.size))]
        return self._line(self._check(i))

    def _check(self, i: int) -> int:
        if not -self.size <= i < self.size:
            raise IndexError(f"line {i} out of range: {self.path} has {self.size} non-empty lines in use")
        return i % self.size

    def _line(self, i: int) -> str:
        start, stop = (int(x) for x in self.bounds[i])
        return self._text.read(stop - start, start).decode("utf-8")

    def tokenize(self, tokenizer: PreTrainedTokenizerBase, max_length: int) -> None:
        """Attach the token cache for (tokenizer, max_length), building it on first use (every line)."""
        key = {"file": self.key, "tokenizer": tokenizer_key(tokenizer), "max_length": max_length}
        folder = self.root / f"tokens-{json_digest(key)}"
        self.built_tokens = _build_atomically(folder, _build_tokens(self, tokenizer, max_length, key))
        self.tokens = TokenCache(folder)
        if len(self.tokens) != len(self.bounds):
            raise ValueError(
                f"token cache {folder} has {len(self.tokens)} lines, the index {len(self.bounds)}"
            )

    def token_ids(self, i: int) -> list[int]:
        """Line i's token ids ([CLS] ... [SEP], truncated at max_length), from the cache."""
        if self.tokens is None:
            raise RuntimeError(f"{self.path}: call tokenize(tokenizer, max_length) before token_ids()")
        return self.tokens[self._check(i)]

    def close(self) -> None:
        self._text.close()
        if self.tokens is not None:
            self.tokens.close()


class _AllLines:
    """Every indexed line, ignoring max_examples (the token cache covers the whole file)."""

    def __init__(self, lines: LineFile) -> None:
        self.lines = lines

    def __len__(self) -> int:
        return len(self.lines.bounds)

    def __getitem__(self, i: int) -> str:
        return self.lines._line(i)


class StreamingCorpus(Corpus):
    """A Corpus whose examples are a LineFile: the loop's ``corpus.examples[i]`` reads one line from disk."""

    examples: LineFile

    def __init__(
        self, path: str | Path, cache_dir: str | Path | None = None, max_examples: int | None = None
    ) -> None:
        lines = LineFile(path, cache_dir, max_examples)
        super().__init__(lines.path, lines, {"empty_lines": lines.empty_lines})  # type: ignore[arg-type]

    def __getitem__(self, i: int) -> str:
        return self.examples[i]

    def token_ids(self, i: int) -> list[int]:
        return self.examples.token_ids(i)

    def tokenize(self, tokenizer: PreTrainedTokenizerBase, max_length: int) -> None:
        self.examples.tokenize(tokenizer, max_length)

    def token_cache(self, tokenizer: PreTrainedTokenizerBase, max_length: int) -> StreamingCorpus:
        """Tokenise every line once (cached on disk) and collate batches from the cached ids."""
        self.tokenize(tokenizer, max_length)
        built = self.examples.built_tokens
        logger.info("token ids of %s %s", self.path, "cached" if built else "read from the cache")
        return self


def pad_token_ids(rows: Sequence[Sequence[int]], tokenizer: PreTrainedTokenizerBase) -> dict[str, Tensor]:
    """Pre-tokenised rows -> the tensors the tokenizer's own padding gives: input_ids (N, L) etc."""
    if tokenizer.pad_token_id is None:
        raise ValueError(f"tokenizer {tokenizer.name_or_path!r} has no padding token")
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), tokenizer.pad_token_id, dtype=torch.long)  # (N, L)
    mask = torch.zeros((len(rows), width), dtype=torch.long)  # (N, L)
    left = tokenizer.padding_side == "left"
    for n, row in enumerate(rows):
        cols = slice(width - len(row), width) if left else slice(0, len(row))
        ids[n, cols] = torch.as_tensor(row, dtype=torch.long)
        mask[n, cols] = 1
    out = {"input_ids": ids, "attention_mask": mask}
    if "token_type_ids" in tokenizer.model_input_names:
        out["token_type_ids"] = torch.zeros_like(ids)  # (N, L): single sentences are all segment 0
    return out


def collate_cached(
    corpus: StreamingCorpus | LineFile,
    indices: Sequence[int],
    num_views: int,
    tokenizer: PreTrainedTokenizerBase,
) -> dict[str, Tensor]:
    """The batch of (s, ..., s) views from cached ids: B·V rows, example-major, as ``collate`` gives them."""
    rows = [corpus.token_ids(i) for i in indices]
    return pad_token_ids([row for row in rows for _ in range(num_views)], tokenizer)  # (B·V, L)
