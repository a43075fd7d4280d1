"""A small offline reader of the Princeton WordNet 3.0 database files (wndb(5) format).

Only what synonym replacement needs: ``index.<pos>`` (lemma -> synset offsets), ``data.<pos>``
(offset -> synset words) and the morphology of morphy(7) (``<pos>.exc`` exception lists and suffix
detachment rules). The dict folder comes from the ``wordnet_dir`` argument, else ``$SENTCL_WORDNET``,
else ``/usr/share/wordnet`` (Debian/Ubuntu package ``wordnet-base``).

Synonyms of a word w: syn(w) = union over synsets S containing a base form of w of words(S) minus {w}.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

WORDNET_ENV = "SENTCL_WORDNET"
DEFAULT_WORDNET_DIR = Path("/usr/share/wordnet")
POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
INSTALL_HELP = (
    "Install the WordNet 3.0 database with `apt-get install --no-install-recommends wordnet-base` "
    "(Debian/Ubuntu; files land in /usr/share/wordnet), or pass wordnet_dir / set SENTCL_WORDNET to a "
    "folder holding WordNet's index.<pos> and data.<pos> files."
)
# morphy(7) detachment rules: (suffix, ending) pairs tried in order for each part of speech.
DETACHMENT_RULES: dict[str, tuple[tuple[str, str], ...]] = {
    "n": (
        ("s", ""),
        ("ses", "s"),
        ("xes", "x"),
        ("zes", "z"),
        ("ches", "ch"),
        ("shes", "sh"),
        ("men", "man"),
        ("ies", "y"),
    ),
    "v": (
        ("s", ""),
        ("ies", "y"),
        ("es", "e"),
        ("es", ""),
        ("ed", "e"),
        ("ed", ""),
        ("ing", "e"),
        ("ing", ""),
    ),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}
_ADJ_MARKER = re.compile(r"\((a|p|ip)\)$")


class WordNetNotFoundError(FileNotFoundError):
    """The WordNet folder or one of its files is missing; the message says how to install it."""


class WordNetFormatError(ValueError):
    """A WordNet file has a line that does not follow wndb(5); the message names file and line."""


@dataclass(frozen=True)
class Synset:
    """One synset: its byte offset in ``data.<pos>``, its type (n, v, a, s, r) and its words."""

    offset: int
    pos: str
    words: tuple[str, ...]


def resolve_wordnet_dir(wordnet_dir: str | os.PathLike[str] | None = None) -> Path:
    """The WordNet dict folder: argument, else $SENTCL_WORDNET, else /usr/share/wordnet."""
    if wordnet_dir is not None:
        path, source = Path(wordnet_dir), "the wordnet_dir argument"
    elif os.environ.get(WORDNET_ENV):
        path, source = Path(os.environ[WORDNET_ENV]), f"${WORDNET_ENV}"
    else:
        path, source = DEFAULT_WORDNET_DIR, f"the default {DEFAULT_WORDNET_DIR}"
    if not path.is_dir():
        raise WordNetNotFoundError(f"WordNet folder {path} (from {source}) does not exist. {INSTALL_HELP}")
    return path


class WordNet:
    """Lemma -> synsets -> synonyms over the WordNet files of the parts of speech in ``pos``."""

    def __init__(
        self, wordnet_dir: str | os.PathLike[str] | None = None, pos: Sequence[str] = ("n", "v", "a", "r")
    ) -> None:
        self.path = resolve_wordnet_dir(wordnet_dir)
        unknown = [p for p in pos if p not in POS_FILES]
        if unknown or not pos:
            raise ValueError(f"pos must be a non-empty subset of {sorted(POS_FILES)}, got {list(pos)}")
        self.pos = tuple(pos)
        for p in self.pos:
            for kind in ("index", "data"):
                file = self.path / f"{kind}.{POS_FILES[p]}"
                if not file.is_file():
                    raise WordNetNotFoundError(f"missing WordNet file {file}. {INSTALL_HELP}")
        self._index: dict[str, dict[str, tuple[int, ...]]] = {}
        self._exceptions: dict[str, dict[str, tuple[str, ...]]] = {}

    # ------------------------------------------------------------------ files

    def index(self, pos: str) -> dict[str, tuple[int, ...]]:
        """``index.<pos>`` as lemma -> synset offsets (read once, on first use)."""
        if pos not in self._index:
            self._index[pos] = _read_index(self.path / f"index.{POS_FILES[pos]}")
        return self._index[pos]

    def exceptions(self, pos: str) -> dict[str, tuple[str, ...]]:
        """``<pos>.exc`` as inflected form -> base forms; an absent file means no exceptions."""
        if pos not in self._exceptions:
            file = self.path / f"{POS_FILES[pos]}.exc"
            table: dict[str, tuple[str, ...]] = {}
            if file.is_file():
                for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
                    fields = line.split()
                    if len(fields) < 2:
                        raise WordNetFormatError(
                            f"{file}, line {number}: expected 'inflected base...', got {line!r}"
                        )
                    table[fields[0]] = tuple(fields[1:])
            self._exceptions[pos] = table
        return self._exceptions[pos]

    def synset(self, pos: str, offset: int) -> Synset:
        """Read the synset at byte ``offset`` of ``data.<pos>``."""
        return _read_synset(self.path / f"data.{POS_FILES[pos]}", offset)

    # ------------------------------------------------------------------ queries

    def morphy(self, word: str, pos: str) -> list[str]:
        """Base forms of ``word`` in ``index.<pos>``: itself, exception-list bases, then suffix rules."""
        word = word.lower().replace(" ", "_")
        index = self.index(pos)
        candidates = [word, *self.exceptions(pos).get(word, ())]
        candidates += [
            word[: -len(suffix)] + ending for suffix, ending in DETACHMENT_RULES[pos] if word.endswith(suffix)
        ]
        return list(dict.fromkeys(c for c in candidates if c and c in index))

    def synsets(self, word: str, pos: str | None = None) -> list[Synset]:
        """Synsets of every base form of ``word`` (all loaded parts of speech unless ``pos`` is given)."""
        parts = self.pos if pos is None else (pos,)
        if pos is not None and pos not in self.pos:
            raise ValueError(f"part of speech {pos!r} is not loaded; loaded: {list(self.pos)}")
        found: dict[tuple[str, int], Synset] = {}
        for p in parts:
            for lemma in self.morphy(word, p):
                for offset in self.index(p)[lemma]:
                    found.setdefault((p, offset), self.synset(p, offset))
        return list(found.values())

    def synonyms(self, word: str, pos: str | None = None) -> list[str]:
        """Sorted synonyms of ``word`` (underscores -> spaces), without ``word`` itself or its base forms."""
        own = {
            word.lower(),
            *(b for p in (self.pos if pos is None else (pos,)) for b in self.morphy(word, p)),
        }
        words = {w.replace("_", " ") for s in self.synsets(word, pos) for w in s.words}
        return sorted(w for w in words if w.lower() not in own and w.lower().replace(" ", "_") not in own)


def _read_index(file: Path) -> dict[str, tuple[int, ...]]:
    """Parse ``lemma pos synset_cnt p_cnt [ptr_symbol]*p_cnt sense_cnt tagsense_cnt [offset]*synset_cnt``."""
    table: dict[str, tuple[int, ...]] = {}
    with file.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.startswith(" ") or not line.strip():
                continue  # the licence header: lines that begin with two spaces
            fields = line.split()
            try:
                synset_cnt, p_cnt = int(fields[2]), int(fields[3])
                if len(fields) != 6 + p_cnt + synset_cnt:
                    raise ValueError(f"expected {6 + p_cnt + synset_cnt} fields, found {len(fields)}")
                table[fields[0]] = tuple(int(o) for o in fields[6 + p_cnt :])
            except (IndexError, ValueError) as err:
                raise WordNetFormatError(
                    f"{file}, line {number}: not a WordNet index line ({err}): {line.rstrip()!r}"
                ) from err
    return table


@lru_cache(maxsize=65536)
def _read_synset(file: Path, offset: int) -> Synset:
    """Parse ``offset lex_filenum ss_type w_cnt(hex) [word lex_id]*w_cnt ...`` at byte ``offset``."""
    with file.open("rb") as handle:
        handle.seek(offset)
        line = handle.readline().decode("utf-8")
    fields = line.split()
    try:
        if int(fields[0]) != offset:
            raise ValueError(f"the line at this byte offset starts with {fields[0]!r}")
        w_cnt = int(fields[3], 16)
        words = tuple(_ADJ_MARKER.sub("", w) for w in fields[4 : 4 + 2 * w_cnt : 2])
        if len(words) != w_cnt or w_cnt == 0:
            raise ValueError(f"expected {w_cnt} words")
    except (IndexError, ValueError) as err:
        raise WordNetFormatError(
            f"{file}, byte offset {offset}: not a WordNet data line ({err}): {line.rstrip()!r}"
        ) from err
    return Synset(offset=offset, pos=fields[2], words=words)
