"""JSON, JSON Lines and YAML files, one mechanism each: readers whose errors name the file and the problem, and
the strict JSON writer.

``read_json`` reads a whole-file JSON value (sentcl.json, an index's settings, a shard manifest, ...): a missing
file, bytes that are not UTF-8, text that is not JSON (line and column given) or a top level of the wrong kind
is an error naming the file. ``write_json_strict`` writes a result dict atomically (``sentcl.files.atomic``) as strict
JSON: NaN and infinities (a collapsed model's correlation) become null, numpy scalars plain numbers.
``load_npy`` reads a .npy array (an index's embeddings, a shard), memory-mapped by default, naming a missing,
empty, truncated or corrupt file. ``iter_text_lines`` reads the lines of any text file (bytes that are not UTF-8 are a ``DataFormatError`` naming
the file and line); ``iter_jsonl`` / ``parse_json_line`` read JSON Lines, one value a line, with ``path:line`` errors; ``read_yaml``
a recipe or grid file (a missing file or bad YAML names the file).
"""

from __future__ import annotations

import json
import reprlib
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from sentcl.files.atomic import atomic_write_json, json_safe  # noqa: F401 - json_safe re-exported
from sentcl.files.budget import bounded_lines
from sentcl.files.fields import Kind, check
from sentcl.files.pathcheck import check_input_file, input_file_problem
from sentcl.files.yaml_dialect import Core12Loader, find_legacy_scalar, legacy_advice

if TYPE_CHECKING:
    import numpy as np

_KINDS = {dict: "a JSON object", list: "a JSON list", str: "a JSON string"}


class DataFormatError(ValueError):
    """A data file has a malformed line; the message names file and line."""


def decode_line(raw: bytes, path: Path, lineno: int) -> str:
    """UTF-8 text of one raw line; invalid bytes are a DataFormatError naming file, line and byte. A byte-order
    mark opening line 1 is dropped (it marks the encoding; it is no character of the first sentence)."""
    try:
        text = raw.decode("utf-8")
        return text.removeprefix("\ufeff") if lineno == 1 else text
    except UnicodeDecodeError as err:
        raise DataFormatError(
            f"{path}:{lineno}: line is not valid UTF-8 (byte {err.start}: {raw[err.start : err.start + 4]!r})"
        ) from None


def iter_text_lines(path: Path, what: str = "file") -> Iterator[tuple[int, str]]:
    """(line number, text without newline) for each line; non-UTF-8 bytes are an error naming the line; a line
    over ``sentcl.files.budget.LINE_CHARS`` characters is cut to them (counted in a warning naming the file).
    The path is checked first, so a FIFO or a link loop is an error, not a hang."""
    check_input_file(Path(path), what, DataFormatError)
    with open(path, "rb") as handle:
        for lineno, raw, _ in bounded_lines(handle, path):  # a line over the input budget is cut, counted
            yield lineno, decode_line(raw, path, lineno).rstrip("\r\n")


def read_json(
    path: str | Path, expect: type = dict, what: str = "", error: type[ValueError] = ValueError
) -> Any:
    """The JSON value of ``path``, whose top level must be ``expect`` (dict or list).

    ``what`` says what the file is in the messages ("index settings"); ``error`` is the class raised for a file
    that is there but unusable (e.g. ``ModelFolderError`` for a model folder); a missing one is FileNotFoundError.
    """
    path = Path(path)
    require_regular_file(path, what)
    subject = f"{what} is " if what else ""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise error(f"{path}: {subject}not UTF-8 text ({err})") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise error(
            f"{path}: {subject}not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})"
        ) from None
    if not isinstance(value, expect):
        kind = _KINDS.get(expect, expect.__name__)
        raise error(
            f"{path}: {what or 'the file'} must be {kind} at the top level, got {type(value).__name__}"
        )
    return value


def read_typed_json(
    path: str | Path, spec: Kind, what: str = "", error: type[ValueError] = ValueError, advice: str = ""
) -> Any:
    """The JSON value of ``path`` (``read_json``), checked against ``spec`` (``sentcl.files.fields``): the one
    reader of what sentcl wrote. A field of another type or range is ``error`` naming the file (as ``what``)
    and the field, then ``advice``; a file that is not JSON names its line and column."""
    value = read_json(path, object, what, error)
    return check(value, spec, f"{path}" + (f" ({what})" if what else ""), error, advice)


def parse_json_line(
    path: Path, lineno: int, text: str, expect: type = dict, error: type[ValueError] = ValueError
) -> Any:
    """One JSONL line's value, which must be ``expect``; anything else is ``error`` naming ``path:lineno``."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise error(f"{path}:{lineno}: not valid JSON: {err.msg} (column {err.colno})") from None
    if not isinstance(value, expect):
        raise error(
            f"{path}:{lineno}: expected {_KINDS.get(expect, expect.__name__)}, got {type(value).__name__}"
        )
    return value


def iter_jsonl(
    path: Path, expect: type = dict, error: type[ValueError] = ValueError
) -> Iterator[tuple[int, Any]]:
    """(line number, value) of every non-blank line of a JSONL file; bad UTF-8 or JSON names ``path:lineno``."""
    require_regular_file(Path(path), "")
    for lineno, text in iter_text_lines(path):
        if text.strip():
            yield lineno, parse_json_line(path, lineno, text, expect, error)


#: the most YAML nodes a document may expand to (aliases counted at every use): a billion-laughs file of a
#: few hundred bytes expands to billions and is refused before it is built
YAML_MAX_NODES = 100_000
#: the phrase in every refusal of a scalar YAML 1.1 reads otherwise (``--set`` keeps such refusals as errors)
YAML_11_MARK = "YAML 1.1"
#: the longest preview of a value echoed in an error message
PREVIEW_CHARS = 80


def preview(value: Any, limit: int = PREVIEW_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters, built in bounded time (deep or huge values are elided)."""
    short = reprlib.Repr()
    short.maxlevel, short.maxstring, short.maxother = 3, limit, limit
    short.maxlist = short.maxtuple = short.maxdict = short.maxset = 8
    text = short.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def cut(text: object, limit: int = PREVIEW_CHARS) -> str:
    """``str(text)`` cut to ``limit`` characters (for names echoed as written, e.g. a key)."""
    text = str(text) if isinstance(text, str) else preview(text, limit)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _StrictLoader(Core12Loader):
    """The YAML 1.2 core loader (``sentcl.files.yaml_dialect``) that refuses a key written twice in one mapping
    (PyYAML silently keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if isinstance(key, typing.Hashable) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {preview(key)} (first at line {seen[key]})",
                    key_node.start_mark,
                )
            if isinstance(key, typing.Hashable):
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _expanded_size(root: yaml.Node, limit: int) -> int:
    """How many nodes ``root`` expands to, aliases counted at every use (memoised per node, so a bomb is
    measured without being expanded); stops once past ``limit``. A recursive alias is a ValueError."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise ValueError("a recursive alias (a node that contains itself)")
        active.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            children: list[yaml.Node] = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            children = []
        for child in children:
            total += size(child)
            if total > limit:
                break
        active.discard(key)
        sizes[key] = total
        return total

    return size(root)


def yaml_problem(err: yaml.YAMLError) -> str:
    """A YAML error as one line: ``line L, column C: what went wrong`` (PyYAML's own text spans lines)."""
    if not isinstance(err, yaml.MarkedYAMLError):
        return " ".join(str(err).split())
    mark = err.problem_mark or err.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    what = "; ".join(p for p in (err.context, err.problem) if p)
    return preview_text(where + " ".join(what.split()), 300)


def preview_text(text: str, limit: int = PREVIEW_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def load_yaml_text(text: str, source: str, error: type[ValueError] = ValueError) -> Any:
    """The YAML value of ``text`` (``source`` names it in errors: a file, or ``--set key``), read by the YAML 1.2
    core schema. Refused, as ``error``: invalid YAML, a key written twice in one mapping (its line named), a
    plain scalar that YAML 1.1 reads as another value (``010``, ``1:30``, ``yes``: key and line named), aliases
    that expand past YAML_MAX_NODES nodes, a recursive alias, nesting too deep to read."""
    try:
        loader = _StrictLoader(text)  # its reader refuses control characters and surrogates at once
    except yaml.YAMLError as err:
        raise error(f"{source} is not valid YAML: {yaml_problem(err)}") from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        nodes = _expanded_size(node, YAML_MAX_NODES)
        if nodes > YAML_MAX_NODES:
            raise error(
                f"{source}: its aliases (*name) expand to more than {YAML_MAX_NODES:,} values; refused (an "
                "alias bomb?)"
            )
        legacy = find_legacy_scalar(node)
        if legacy is not None:
            where = f"line {legacy.line}: {legacy.key}: " if legacy.key else ""
            raise error(
                f"{source}: {where}{preview(legacy.text)} is {preview(legacy.old)} in "
                f"{YAML_11_MARK} but {preview(legacy.new)} in YAML 1.2, which sentcl reads; write "
                f"{legacy_advice(legacy)}"
            )
        return loader.construct_document(node)
    except yaml.YAMLError as err:
        raise error(f"{source} is not valid YAML: {yaml_problem(err)}") from None
    except RecursionError:
        raise error(f"{source}: nested too deeply to read") from None
    except ValueError as err:
        if isinstance(err, error):
            raise
        raise error(f"{source}: {err}") from None
    finally:
        loader.dispose()


def describe_not_a_file(path: Path) -> str | None:
    """Why ``path`` cannot be read as a regular file ("is a folder", "is a FIFO", "is a symbolic link loop",
    "does not exist", ...), or None when it is one: ``sentcl.files.pathcheck``'s answer, the one home of that rule."""
    found = input_file_problem(path)
    return None if found is None else found[0]


def mend_jsonl_tail(path: Path) -> str | None:
    """A JSON Lines file that a kill cut mid-write ends in a line without its newline. That line is cut off
    when it is not JSON (returned, for the caller's warning: ``path:line``); a complete one gets its newline,
    so the next append starts a line of its own. Lines before it are not read here (``iter_jsonl`` names a bad
    one with ``path:line``)."""
    with open(path, "rb+") as handle:
        data = handle.read()
        if not data or data.endswith(b"\n"):
            return None
        start = data.rfind(b"\n") + 1
        try:
            json.loads(data[start:].decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            handle.truncate(start)
            lineno = data.count(b"\n") + 1
            torn = preview(data[start:].decode("utf-8", "replace"))
            return f"{path}:{lineno}: torn last line dropped ({torn})"
        handle.write(b"\n")
    return None


def require_regular_file(path: Path, what: str) -> None:
    """FileNotFoundError unless ``path`` is a regular file, saying what it is instead (a folder, a FIFO that
    would block the read, a symlink loop, missing)."""
    problem = describe_not_a_file(path)
    if problem is not None:
        raise FileNotFoundError(f"{what + ' ' if what else ''}{path} {problem}")


def read_yaml(path: str | Path, what: str, error: type[ValueError] = ValueError) -> Any:
    """The YAML value of ``path``, read by ``load_yaml_text``; a path that is no regular file, bytes that are
    not UTF-8, a refused document or no document at all (an empty file, or only comments: a recipe cut short
    or the wrong file, never taken as "every default") is ``error`` naming it as ``what`` (e.g. "config
    file"). The caller checks the top level's shape (its message knows the keys)."""
    path = Path(path)
    problem = describe_not_a_file(path)
    if problem is not None:
        raise error(f"{what} {path} {problem}")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        bom = (
            " (it starts with a UTF-16 byte-order mark)"
            if path.read_bytes()[:2] in (b"\xff\xfe", b"\xfe\xff")
            else ""
        )
        raise error(
            f"{what} {path} is not UTF-8 text{bom}: byte {err.start} cannot be decoded; save it as UTF-8"
        ) from None
    except OSError as err:
        raise error(f"{what} {path} cannot be read: {err.strerror or err}") from None
    value = load_yaml_text(text, f"{what} {path}", error)
    if value is None:
        raise error(f"{what} {path} holds no settings (it is empty or only comments); give a file with them")
    return value


def write_json_strict(path: str | Path, payload: Any) -> Path:
    """``payload`` as strict, indented JSON (``json_safe``), written atomically; parent folders are created."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_json(path, payload)


def load_npy(path: Path, mmap: bool = True, what: str = "") -> np.ndarray:
    """An .npy file (memory-mapped by default); a missing, special (FIFO, device, folder), empty, truncated or
    corrupt file names itself, and so does an archive, a pickle or text named .npy (``npy_problem``)."""
    from sentcl.files.arrays import npy_problem  # numpy: not imported to read text, JSON or YAML

    path = Path(path)
    label = f"{what} {path}".strip()
    found = input_file_problem(path)
    if found is not None:
        raise (FileNotFoundError if found[1] else ValueError)(f"{label} {found[0]}")
    problem = npy_problem(path)
    if problem is not None:
        raise ValueError(f"{label} {problem}; re-create it")
    import numpy as np

    try:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        objects = "pickle" in str(err) or "Python objects" in str(err)
        reason = "it holds Python objects, which sentcl never unpickles" if objects else str(err)
        raise ValueError(f"{label} is truncated or not a valid .npy array ({reason}); re-create it") from None
