"""Every JSON file sentcl writes is strict JSON: one writer (``sentcl.files.atomic.dumps_strict``), NaN and
infinities as ``null``, and a result that has no value says why in a field of its own.

Kept three ways: generated payloads (nested dicts, lists, tuples, numpy scalars, non-finite floats) parse
with a strict reader to ``json_safe``'s value; no module of ``src/`` writes ``json.dumps`` output to a file
by itself (an AST scan); and a real ``sentcl eval`` whose model gives every pair the same cosine writes
``null`` with ``"undefined": "constant predictions"`` and prints that in its table, without scipy's warnings.
"""

from __future__ import annotations

import ast
import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sentcl.cli import main
from sentcl.files.atomic import atomic_write_json, dumps_strict, json_safe

SRC = Path(__file__).resolve().parents[2] / "src" / "sentcl"


def strict_loads(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(f"not strict JSON: {name}")

    return json.loads(text, parse_constant=refuse)


numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(allow_nan=True, allow_infinity=True, width=32).map(np.float32),
    st.integers(-(2**40), 2**40).map(np.int64),
    st.integers(),
    st.booleans(),
    st.none(),
    st.text(max_size=5),
)
payloads = st.recursive(
    numbers,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=4), inner, max_size=4),
    ),
    max_leaves=20,
)


def reference(value: Any) -> Any:
    """What the strict file must hold, by hand: non-finite -> None, numpy -> Python, tuples -> lists."""
    if isinstance(value, dict):
        return {str(k): reference(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [reference(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@settings(max_examples=150, deadline=None)
@given(payloads)
def test_any_payload_is_written_as_strict_json(payload: Any) -> None:
    assert strict_loads(dumps_strict(payload)) == reference(payload) == json_safe(payload)


def test_the_file_writer_is_strict(tmp_path: Path) -> None:
    path = atomic_write_json(tmp_path / "r.json", {"spearman": math.nan, "x": [np.float32("inf"), 1.5]})
    assert strict_loads(path.read_text(encoding="utf-8")) == {"spearman": None, "x": [None, 1.5]}


def _writes_json_dumps(tree: ast.AST) -> list[int]:
    """Lines where ``json.dump(...)`` is called, or ``json.dumps(...)`` is passed to a write call."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name = node.func.attr
        if name == "dump" and isinstance(node.func.value, ast.Name) and node.func.value.id == "json":
            found.append(node.lineno)
        elif name in ("write", "write_text", "atomic_write_text", "write_bytes"):
            inner = [n for arg in node.args for n in ast.walk(arg) if isinstance(n, ast.Call)]
            if any(isinstance(c.func, ast.Attribute) and c.func.attr == "dumps" for c in inner):
                found.append(node.lineno)
    return found


def test_no_module_writes_json_but_through_the_strict_writer() -> None:
    bad = {
        str(path.relative_to(SRC)): lines
        for path in sorted(SRC.rglob("*.py"))
        if (lines := _writes_json_dumps(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert bad == {}, f"JSON written without sentcl.files.atomic.dumps_strict (NaN would be written): {bad}"


def test_the_scan_finds_a_direct_write() -> None:
    code = "import json\nPath('x').write_text(json.dumps({'a': 1}) + '\\n')\njson.dump({}, open('y', 'w'))\n"
    assert _writes_json_dumps(ast.parse(code)) == [2, 3]


def test_eval_of_constant_predictions_writes_null_with_a_reason(
    tiny_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # every pair is one sentence twice: every cosine is 1.0, so no correlation exists
    sentences = ["a man plays a guitar", "the cat sleeps", "rain falls on the town", "two dogs run", "hello"]
    pairs = tmp_path / "same.tsv"
    pairs.write_text(
        "sentence1\tsentence2\tscore\n" + "".join(f"{s}\t{s}\t{i}\n" for i, s in enumerate(sentences)),
        encoding="utf-8",
    )
    out = tmp_path / "ev.json"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = main(["eval", "--model", str(tiny_bert), "--pairs", str(pairs), "--output", str(out)])
    assert not [w for w in caught if "constant" in str(w.message).lower()], [str(w.message) for w in caught]
    printed = "".join(capsys.readouterr())
    assert code == 0, printed
    result = strict_loads(out.read_text(encoding="utf-8"))
    (scores,) = result.values()
    assert scores["spearman"] is None and scores["pearson"] is None and scores["n"] == 5
    assert scores["undefined"] == "constant predictions"
    assert "undefined (constant predictions)" in printed and "Warning" not in printed, printed
