"""sentcl's one YAML reader (``sentcl.files.read.load_yaml_text``): what PyYAML's safe_load reads the same, what it
refuses (duplicate keys, alias bombs, recursive aliases), and the bounded previews of echoed values."""

from __future__ import annotations

import time

import pytest
import yaml

from sentcl.files.read import YAML_MAX_NODES, load_yaml_text, mend_jsonl_tail, preview

DOCS = [
    "model: {pooler: cls}\ntraining: {seed: 1, output_dir: runs/x}\n",
    "base: &b {a: 1, b: 2}\nderived: {<<: *b, b: 3}\n",  # a merge key overridden: not a duplicate
    "list: [&x [1, 2], *x, *x]\n",
    "- {a: 1}\n- {a: 2}\n",
    "text: 'This sentence : \"[X]\" means [MASK] .'\n",
    "",
]


@pytest.mark.parametrize("text", DOCS)
def test_reads_what_safe_load_reads(text: str) -> None:
    assert load_yaml_text(text, "doc") == yaml.safe_load(text)


@pytest.mark.parametrize(
    ("text", "line"),
    [("a: 1\nb: 2\na: 3\n", 3), ("s:\n  x: {k: 1, k: 2}\n", 2), ("- {a: 1}\n- a: 1\n  b: 2\n  a: 3\n", 4)],
)
def test_duplicate_keys_name_the_line(text: str, line: int) -> None:
    with pytest.raises(ValueError, match=rf"doc is not valid YAML: line {line}, column \d+: duplicate key"):
        load_yaml_text(text, "doc")


def _chain(levels: int, width: int) -> str:
    items = ["&a0 [" + ", ".join(["x"] * width) + "]"]
    items += [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "[" + ", ".join(items) + "]"


def _nodes(levels: int, width: int) -> int:
    """Expanded nodes of ``_chain``, counted by hand: chain k has 1 + width * size(k - 1) nodes."""
    sizes = [1 + width]
    for _ in range(1, levels):
        sizes.append(1 + width * sizes[-1])
    return 1 + sum(sizes)


def test_alias_bound_is_the_expanded_size() -> None:
    small = _chain(4, 9)
    assert _nodes(4, 9) < YAML_MAX_NODES
    assert len(load_yaml_text(small, "doc")[-1]) == 9  # within the bound: read as PyYAML reads it
    assert _nodes(6, 9) > YAML_MAX_NODES
    started = time.monotonic()
    with pytest.raises(ValueError, match=r"doc: its aliases .* more than 100,000 values"):
        load_yaml_text(_chain(9, 9), "doc")  # 9**9 leaves
    with pytest.raises(ValueError, match="more than"):
        load_yaml_text(_chain(6, 9), "doc")
    assert time.monotonic() - started < 5


def test_recursive_alias_and_deep_nesting_are_refused() -> None:
    with pytest.raises(ValueError, match="recursive alias"):
        load_yaml_text("&a [*a]\n", "doc")
    with pytest.raises(ValueError, match="nested too deeply"):
        load_yaml_text("[" * 50_000 + "]" * 50_000, "doc")


def test_preview_is_bounded() -> None:
    nested: list = [1]
    for _ in range(50):
        nested = [nested] * 9  # 9**50 leaves, shared
    started = time.monotonic()
    text = preview(nested)
    assert len(text) <= 80 and time.monotonic() - started < 1
    long = preview("x" * 10_000)
    assert "..." in long and len(long) <= 80 and long.startswith("'xxx") and long.endswith("xxx'")


def test_mend_jsonl_tail(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "m.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n{"a": ', encoding="utf-8")
    assert mend_jsonl_tail(path) == f"{path}:3: torn last line dropped ('{{\"a\": ')"
    assert path.read_text(encoding="utf-8") == '{"a": 1}\n{"a": 2}\n'
    path.write_text('{"a": 1}\n{"a": 2}', encoding="utf-8")  # complete, only its newline missing
    assert mend_jsonl_tail(path) is None and path.read_text(encoding="utf-8") == '{"a": 1}\n{"a": 2}\n'


def test_json_readers_say_what_a_path_is(tmp_path) -> None:  # noqa: ANN001
    """A FIFO (whose read would block), a folder and a symlink loop are named for what they are."""
    import os

    from sentcl.files.read import iter_jsonl, read_json

    os.mkfifo(tmp_path / "fifo")
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    for name, what in (("fifo", "is a FIFO"), (".", "is a directory"), ("a", "is a symbolic link loop")):
        with pytest.raises(FileNotFoundError, match=what):
            read_json(tmp_path / name)
        with pytest.raises(FileNotFoundError, match=what):
            list(iter_jsonl(tmp_path / name))
    (tmp_path / "bad.json").write_text('{"a": 1,\n "b": }\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.json: not valid JSON \(line 2, column 7"):
        read_json(tmp_path / "bad.json")
