"""The house's structure, checked with ``ast`` (tests/helpers/import_graph.py): no import cycle, imports only go
down the floors (but for a short allow-list, each with its reason in docs/architecture.md), every module on the
map of docs/architecture.md and nothing on it that does not exist, no function over 90 lines, at most 10 modules
at the root, no source file over 400 lines, one row normalisation (``sentcl.similarity.unit_rows``), and test
files named for what they test, not for the sweep, paper seed or issue that found a case."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest
from helpers.import_graph import (
    FLOORS,
    SRC,
    cycle_path,
    cycles,
    floor_of,
    import_graph,
    module_names,
    upward_imports,
)

MAP = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
MAX_FUNCTION_LINES = 90

#: The imports allowed to go up the floors (at most 3), each with its one-line reason, which the map repeats.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}

MAP_LINE = re.compile(r"^(?P<indent>(?:  )*)(?P<name>\S+)")


def map_modules(text: str) -> set[str]:
    """The .py files of the map (the first ``src/sentcl/`` code block: one line per module or package, indented
    two spaces per level, a package's name ending in ``/``), as paths under src/sentcl."""
    block = text.split("```text\nsrc/sentcl/\n", 1)[1].split("```", 1)[0]
    stack: list[str] = []
    found: set[str] = set()
    for line in block.splitlines():
        match = MAP_LINE.match(line)
        if match is None:
            continue
        depth, name = len(match["indent"]) // 2, match["name"]
        del stack[depth:]
        if name.endswith("/"):
            stack.append(name.rstrip("/"))
        elif name.endswith(".py"):
            found.add("/".join([*stack, name]))
    return found


def long_functions(src: Path = SRC, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """``path:line name (N lines)`` of every function or method longer than ``limit`` lines."""
    found = []
    for path in sorted(src.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = node.end_lineno - start + 1  # type: ignore[operator]
                if length > limit:
                    found.append(f"{path.relative_to(src.parent)}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_the_import_graph_has_no_cycle() -> None:
    graph = import_graph()
    found = [" -> ".join(cycle_path(graph, component)) for component in cycles(graph)]
    assert not found, "import cycles:\n" + "\n".join(found)


def test_imports_go_down_the_floors_but_for_the_allowed_few() -> None:
    assert len(ALLOWED_UPWARD) <= 3
    upward = upward_imports(import_graph())
    unexpected = [f"{a} -> {b}" for a, b in upward if (a, b) not in ALLOWED_UPWARD]
    assert not unexpected, "imports up the floors (move the helper down):\n" + "\n".join(unexpected)
    stale = [f"{a} -> {b}" for a, b in ALLOWED_UPWARD if (a, b) not in upward]
    assert not stale, "allowed upward imports that no longer exist (remove them):\n" + "\n".join(stale)


def test_every_allowed_upward_import_is_explained_on_the_map() -> None:
    text = MAP.read_text(encoding="utf-8")
    for (a, b), reason in ALLOWED_UPWARD.items():
        assert f"`{a}` → `{b}`: {reason}" in text, (a, b)


def test_every_module_stands_on_a_floor() -> None:
    for module in module_names():
        floor_of(module)  # raises naming the module
    assert [len(keys) > 0 for keys in FLOORS] == [True] * len(FLOORS)


def test_the_map_names_every_module_and_nothing_else() -> None:
    on_map = map_modules(MAP.read_text(encoding="utf-8"))
    on_disk = {str(p.relative_to(SRC)) for p in SRC.rglob("*.py")}
    assert sorted(on_disk - on_map) == [], "modules missing from docs/architecture.md"
    assert sorted(on_map - on_disk) == [], "docs/architecture.md names modules that do not exist"


def test_no_function_is_over_90_lines() -> None:
    assert long_functions() == []


# ---------------------------------------------------------------- the checks themselves, on a made-up package


def write_package(root: Path, files: dict[str, str]) -> Path:
    src = root / "sentcl"
    for name, text in files.items():
        path = src / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return src


def test_the_graph_counts_function_imports_and_skips_type_checking(tmp_path: Path) -> None:
    src = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "files.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from sentcl.cli import x\n",
            "data/__init__.py": "",
            "data/a.py": "def f():\n    from sentcl.training import b\n",
            "training/__init__.py": "",
            "training/b.py": "from sentcl.data import a\nimport sentcl.files\n",
            "cli/__init__.py": "from . import helper\n",
            "cli/helper.py": "from ..files import *\n",
        },
    )
    graph = import_graph(src)
    assert graph["sentcl.files"] == set()  # the TYPE_CHECKING import does not count
    assert graph["sentcl.data.a"] == {"sentcl.training.b"}  # a function-level import does
    assert graph["sentcl.training.b"] == {"sentcl.data.a", "sentcl.files"}
    assert graph["sentcl.cli"] == {"sentcl.cli.helper"} and graph["sentcl.cli.helper"] == {"sentcl.files"}
    assert cycles(graph) == [["sentcl.data.a", "sentcl.training.b"]]
    assert cycle_path(graph, ["sentcl.data.a", "sentcl.training.b"]) == [
        "sentcl.data.a",
        "sentcl.training.b",
        "sentcl.data.a",
    ]
    assert upward_imports(graph) == [("sentcl.data.a", "sentcl.training.b")]


def test_the_map_reader_and_the_length_check(tmp_path: Path) -> None:
    text = "```text\nsrc/sentcl/\na.py   one\npkg/  a package\n  __init__.py\n  b.py  two\n  sub/\n    d.py\nc.py\n```\n"
    assert map_modules(text) == {"a.py", "pkg/__init__.py", "pkg/b.py", "pkg/sub/d.py", "c.py"}
    body = "\n".join(f"    x{i} = {i}" for i in range(89))
    src = write_package(tmp_path, {"m.py": f"def ok():\n{body}\n\n\n@staticmethod\ndef long():\n{body}\n"})
    assert long_functions(src) == ["sentcl/m.py:94 long (91 lines)"]


@pytest.mark.parametrize("module", ["sentcl.rng", "sentcl.data.readers", "sentcl.cli.train", "sentcl"])
def test_floors_are_ordered_bottom_first(module: str) -> None:
    expected = {"sentcl.rng": 0, "sentcl.data.readers": 1, "sentcl.cli.train": 7, "sentcl": 7}[module]
    assert floor_of(module) == expected


MAX_ROOT_MODULES = 10


def test_the_root_is_thin() -> None:
    """The package root holds its face and a few primitives; every other module lives in a room (a package)."""
    root = sorted(p.name for p in SRC.glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, f"{len(root)} modules at the root of src/sentcl: {root}"


MAX_FILE_LINES = 400
#: Files allowed over the limit, each with its reason (none: config/method_options.py went into the methods'
#: own packages, sentcl/methods/<name>/options.py).
LONG_FILES_ALLOWED: set[str] = set()


def long_files(src: Path = SRC, limit: int = MAX_FILE_LINES) -> list[str]:
    """``path (N lines)`` of every source file over ``limit`` lines."""
    found = []
    for path in sorted(src.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found.append(f"{path.relative_to(src)} ({lines} lines)")
    return found


def test_no_source_file_is_over_400_lines() -> None:
    over = [f for f in long_files() if f.split(" ")[0] not in LONG_FILES_ALLOWED]
    assert over == [], "split these by idea: " + ", ".join(over)
    stale = sorted(
        name for name in LONG_FILES_ALLOWED if not any(f.startswith(name + " ") for f in long_files())
    )
    assert stale == [], f"no longer over {MAX_FILE_LINES} lines (remove from LONG_FILES_ALLOWED): {stale}"


def test_the_file_length_check(tmp_path: Path) -> None:
    src = write_package(tmp_path, {"short.py": "x = 1\n" * 400, "pkg/long.py": "x = 1\n" * 401})
    assert long_files(src) == ["pkg/long.py (401 lines)"]


# ---------------------------------------------------------------- one row normalisation (sentcl.similarity.unit_rows)

NORM_HOME = "similarity.py"
NORM_CALLS = {"norm", "vector_norm", "matrix_norm"}


def _dotted(node: ast.AST) -> str:
    """``a.b.c`` of a Name/Attribute chain ('' for anything else)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def _has_norm_call(node: ast.AST, norm_names: set[str]) -> bool:
    """Whether ``node`` computes or names a vector norm (a call to ``*.norm``, or a name bound to one)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and _dotted(sub.func).split(".")[-1] in NORM_CALLS:
            return True
        if isinstance(sub, ast.Name) and sub.id in norm_names:
            return True
    return False


def _norm_names(tree: ast.AST) -> set[str]:
    """Names assigned from an expression holding a norm (``norms = np.linalg.norm(x, ...)``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        if value is not None and _has_norm_call(value, set()):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[union-attr]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def row_normalisations(src: Path = SRC) -> list[str]:
    """``path:line`` of every row normalisation written outside similarity.py: a division by a norm (``/``,
    ``/=``, ``np.divide``) or a call of torch's ``functional.normalize``."""
    found = []
    for path in sorted(src.rglob("*.py")):
        if path.relative_to(src).as_posix() == NORM_HOME:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        norm_names = _norm_names(tree)
        for node in ast.walk(tree):
            divisor: ast.AST | None = None
            if isinstance(node, ast.BinOp | ast.AugAssign) and isinstance(node.op, ast.Div):
                divisor = node.right if isinstance(node, ast.BinOp) else node.value
            elif isinstance(node, ast.Call):
                name = _dotted(node.func)
                if name.endswith("functional.normalize") or name == "F.normalize":
                    found.append(f"{path.relative_to(src.parent)}:{node.lineno}")
                    continue
                if name.split(".")[-1] in ("divide", "true_divide", "div") and len(node.args) >= 2:
                    divisor = node.args[1]
            if divisor is not None and _has_norm_call(divisor, norm_names):
                found.append(f"{path.relative_to(src.parent)}:{node.lineno}")
    return sorted(set(found))


def test_one_row_normalisation() -> None:
    """Rows are made unit length in one place, ``sentcl.similarity.unit_rows`` (numpy and torch)."""
    assert row_normalisations() == [], "use sentcl.similarity.unit_rows"


def test_the_normalisation_check(tmp_path: Path) -> None:
    src = write_package(
        tmp_path,
        {
            "similarity.py": "def unit_rows(x):\n    return x / np.linalg.norm(x, axis=-1, keepdims=True)\n",
            "a.py": "def f(x):\n    n = np.linalg.norm(x, axis=1, keepdims=True)\n    return x / n\n",
            "b.py": "def f(x):\n    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)\n",
            "c.py": "def f(x):\n    norms = np.linalg.norm(x, axis=1)\n    return np.divide(x, norms, where=norms > 0)\n",
            "d.py": "from torch.nn import functional as F\ndef f(x):\n    return F.normalize(x, dim=-1)\n",
            "e.py": "import torch\ndef f(x):\n    return torch.nn.functional.normalize(x, dim=-1)\n",
            "g.py": "def f(x):\n    return x / x.norm(dim=-1, keepdim=True)\n",
            "fine.py": "def f(x, y):\n    d = np.linalg.norm(x - y, axis=1)\n    return d.mean() / 2, x / y.sum()\n",
        },
    )
    assert row_normalisations(src) == [
        "sentcl/a.py:3",
        "sentcl/b.py:2",
        "sentcl/c.py:3",
        "sentcl/d.py:3",
        "sentcl/e.py:3",
        "sentcl/g.py:2",
    ]


# ---------------------------------------------------------------- test files named for what they test

TESTS = Path(__file__).resolve().parent
#: Words that name when or by whom a case was found, not what a test checks.
TEST_NAME_JARGON = re.compile(r"sweep|seed_?0\d\d|issue_?\d+", re.IGNORECASE)


def jargon_test_files(tests: Path = TESTS) -> list[str]:
    """Test files whose name says where a case came from (a sweep, a seed paper, an issue) instead of its subject."""
    return sorted(str(p.relative_to(tests)) for p in tests.rglob("*.py") if TEST_NAME_JARGON.search(p.name))


def test_test_files_are_named_for_what_they_test() -> None:
    assert jargon_test_files() == [], "rename for the behaviour they check"


def test_the_test_name_check(tmp_path: Path) -> None:
    for name in [
        "test_outside_sweep_a.py",
        "sub/test_Sweep_b.py",
        "test_seed003_c.py",
        "test_issue_15.py",
        "test_d.py",
    ]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")
    assert jargon_test_files(tmp_path) == [
        "sub/test_Sweep_b.py",
        "test_issue_15.py",
        "test_outside_sweep_a.py",
        "test_seed003_c.py",
    ]


# ---------------------------------------------------------------- one home for digests

DIGEST_HOME = "sentcl/files/fingerprint.py"
DIGEST_NAME = re.compile(r"fingerprint|digest|sha256", re.IGNORECASE)
#: ``path:function name`` (or ``path:import hashlib``) of a digest that must stay outside sentcl.files.fingerprint,
#: with the reason. None today.
DIGEST_ALLOWED: dict[str, str] = {}


def digests_outside_home(src: Path = SRC) -> list[str]:
    """``path:line what`` of every use of ``hashlib`` (an import of it: no digest can be made without one) and
    every function or method named for a fingerprint, digest or SHA-256, outside ``files/fingerprint.py``."""
    found = []
    for path in sorted(src.rglob("*.py")):
        where = path.relative_to(src.parent).as_posix()
        if where == DIGEST_HOME:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            what = ""
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "hashlib" for a in node.names):
                what = "import hashlib"
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "hashlib":
                what = "from hashlib import"
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and DIGEST_NAME.search(node.name):
                what = f"def {node.name}"
            if what and f"{where}:{what.removeprefix('def ')}" not in DIGEST_ALLOWED:
                found.append(f"{where}:{node.lineno} {what}")
    return found


def test_every_digest_is_made_in_the_fingerprint_module() -> None:
    """Content fingerprints, digests and SHA-256 sums are written in ``sentcl.files.fingerprint`` alone, so a
    stored digest (a manifest's, a cache key's, a download's check) has one definition."""
    assert digests_outside_home() == [], "use (or add) a helper of sentcl.files.fingerprint"


def test_the_digest_check(tmp_path: Path) -> None:
    src = write_package(
        tmp_path,
        {
            "files/fingerprint.py": "import hashlib\ndef file_sha256(p):\n    return hashlib.sha256(p)\n",
            "a.py": "import hashlib\ndef f(b):\n    return hashlib.md5(b).hexdigest()\n",
            "b.py": "from hashlib import blake2b\n",
            "c.py": "import hashlib as h, os\n",
            "d.py": "class K:\n    def digest(self):\n        return 1\n",
            "e.py": "def shards_Fingerprint(m):\n    pass\nasync def sha256_of(p):\n    pass\n",
            "fine.py": "from sentcl.files.fingerprint import file_sha256\ndef check(p):\n    return file_sha256(p)\n",
        },
    )
    assert digests_outside_home(src) == [
        "sentcl/a.py:1 import hashlib",
        "sentcl/b.py:1 from hashlib import",
        "sentcl/c.py:1 import hashlib",
        "sentcl/d.py:2 def digest",
        "sentcl/e.py:1 def shards_Fingerprint",
        "sentcl/e.py:3 def sha256_of",
    ]


# ---------------------------------------------------------------- no process words in the code

#: Words that record how the work was organised, not what the code does: an issue of the project, a sweep's rows,
#: the ``rooms`` of a review's metaphor, a development machine's absolute paths. A paper repository's "GitHub issue
#: #3" is a citation, not a process word.
PROCESS_WORDS = re.compile(
    r"(?<!GitHub )\bissues?\b(?! #)|\b(?:reliability|second|third) sweep\b|\bsweep'?s? rows?\b|\brooms\s*="
    r"|/w[o]rk/|/home/\w|/Users/\w",  # [o]: the pattern itself names no machine's folder
    re.IGNORECASE,
)
#: the checks that hold these words as their data
PROCESS_WORD_CHECKERS = {"test_architecture.py", "test_docs_site.py", "config/test_builtin_recipes.py"}


def process_words(roots: tuple[Path, ...] = (SRC, TESTS)) -> list[str]:
    """``path:line word`` of every process word in the Python files under ``roots``."""
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if path.relative_to(root).as_posix() in PROCESS_WORD_CHECKERS:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                match = PROCESS_WORDS.search(line)
                if match:
                    found.append(f"{path.relative_to(root.parent)}:{number} {match.group(0)!r}")
    return found


def test_no_process_words_in_the_code() -> None:
    assert process_words() == [], "say what the code or the test does, not how the work was organised"


def test_the_process_word_check(tmp_path: Path) -> None:
    src = write_package(
        tmp_path,
        {
            "a.py": '"""Second reliability sweep, rows C02-C07."""\n',
            "b.py": "# the issue's setting\nf(x, rooms=True)\n",
            "c.py": 'DATA = "/' + 'work/shared/reports/x.md"\n',  # a folder of the development machines
            "fine.py": '"""The authors\' GitHub issue #3 reports 65; a --truncate-dims sweep; no room for one."""\n',
        },
    )
    assert process_words((src,)) == [
        "sentcl/a.py:1 'reliability sweep'",
        "sentcl/b.py:1 'issue'",
        "sentcl/b.py:2 'rooms='",
        "sentcl/c.py:1 '/" + "work/'",
    ]
