"""Every command block of a user page reads only what it creates: each path a ``sentcl`` command reads (a model,
a corpus, a pairs file, an index, a run folder) is written by an earlier command of the same page, or is a
built-in (an offline model's short name, a hub id, a recipe, a ``sentcl download`` item), or the page names,
in a paragraph that links to it, the page whose commands create it.

The page's ``bash`` blocks are read in order as a shell would split them (``shlex``); which arguments of each
command are inputs and which outputs is the table below, one row per option, not a case per page.
"""

from __future__ import annotations

import functools
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from test_docs_site import ROOT, user_pages

from sentcl.config.builtin import recipe_names, resolve_recipe
from sentcl.files.paths import DOWNLOAD_TARGETS, OFFLINE_MODELS, download_command

#: the argparse destinations (of ``sentcl.cli``'s own parser) that are paths the command reads, and writes
READS = {"model", "model_path", "input", "corpus", "pairs", "retrieval", "embeddings", "fit_files", "queries",
         "api_key_file", "runs", "folder", "teacher", "config", "student", "unlabelled"}  # fmt: skip
WRITES = {"output", "out", "output_dir", "plot", "store"}
#: ``--set`` keys whose value is a path: read, written; a dev task's path follows its ``pairs:``/``retrieval:``
SET_INPUTS, SET_OUTPUTS = {"data.train_file", "eval.dev_task"}, {"training.output_dir"}
#: the data folder, however a page writes it
DATA_DIR = re.compile(r"^(?:\$\{?SENTCL_DATA\}?|~/sentcl-data|\$PWD/sentcl-data|sentcl-data)/")
HUB_ID = re.compile(r"^[A-Za-z][\w.-]*/[\w.-]+$")  # owner/name, as the hub spells it
HUB_OWNERS = {"sentence-transformers", "princeton-nlp", "BAAI", "intfloat", "thenlper", "minishlab"}
HUB_MODELS = {
    "bert-base-uncased",
    "bert-large-uncased",
    "roberta-base",
    "roberta-large",
    "distilbert-base-uncased",
}


@dataclass
class Command:
    """One command of a page: what it reads and what it writes."""

    line: str
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    problem: str = ""  # sentcl's parser refuses the command (a placeholder such as `...`, a wrong option)
    guard: str = ""  # `[ -d PATH ] || command`: the command runs only where PATH is missing


#: `[ -d PATH ]`, `[ -f PATH ]`, `[ -e PATH ]`, `test -d PATH`: a test that a path is there
GUARD = re.compile(r"^(?:\[ -[def] (\S+) \]|test -[def] (\S+))$")


def _norm(path: str) -> str:
    path = path.strip().rstrip("/")
    return path[2:] if path.startswith("./") else path


def _recipe_output(name: str) -> str | None:
    if name not in recipe_names():
        return None
    return (
        yaml.safe_load(Path(resolve_recipe(name)).read_text(encoding="utf-8"))
        .get("training", {})
        .get("output_dir")
    )


def _paths(value: object) -> list[str]:
    if value is None or value is False:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _sentcl(args: list[str], command: Command) -> None:
    """What ``sentcl ARGS`` reads and writes: the arguments as sentcl's own parser reads them (a command the
    parser refuses fails the test), their destinations sorted by the tables above."""
    import contextlib
    import io

    from sentcl.cli import build_parser

    with contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            parsed = vars(build_parser().parse_args(args))
        except SystemExit:
            command.problem = err.getvalue().strip().splitlines()[-1]
            return
    sub = parsed["command"]
    for dest, value in parsed.items():
        if dest in READS:
            command.reads += _paths(value)
        elif dest in WRITES:
            command.writes += _paths(value)
    if parsed.get("index"):  # search with --corpus keeps an index folder there; otherwise it reads one
        (command.writes if sub == "search" and parsed.get("corpus") else command.reads).append(
            str(parsed["index"])
        )
    for override in parsed.get("overrides") or []:
        key, setting = override.split("=", 1)
        if key in SET_INPUTS and (key != "eval.dev_task" or re.match(r"^(?:pairs|retrieval):", setting)):
            command.reads.append(re.sub(r"^(?:pairs|retrieval):", "", setting))
        elif key in SET_OUTPUTS:
            command.writes.append(setting)
    if sub == "train" and not command.writes:
        output = _recipe_output(parsed.get("config") or "")
        command.writes += [output] if output else []
    if parsed.get("index_command") == "build" and not parsed.get("output"):  # beside them: EMB/index-TYPE
        command.writes.append(f"{_norm(str(parsed['embeddings']))}/index-{parsed['type']}")
    if sub == "download":
        command.writes += [DOWNLOAD_TARGETS[item] for item in parsed["names"] if item in DOWNLOAD_TARGETS]


@functools.cache  # a page's blocks are read again for every page that links to it: parse each once
def commands(block: str) -> tuple[Command, ...]:
    """The commands of a bash block, in order: continuations joined, comments and here-document bodies dropped,
    ``&&`` ``|`` ``;`` ``&`` split; ``VAR=value`` prefixes, ``torchrun ... -m sentcl.cli``, ``> FILE`` and ``mkdir``
    understood."""
    found, heredoc, guard = [], "", ""
    for line in block.replace("\\\n", " ").splitlines():
        if heredoc:  # a here-document's body (a Python script, say) is not shell
            heredoc = "" if line.strip() == heredoc else heredoc
            continue
        tag = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line)
        heredoc = tag.group(1) if tag else ""
        tokens = shlex.split(line[: tag.start()] if tag else line, comments=True)
        part: list[str] = []
        for token in [*tokens, ";"]:
            if token not in ("&&", "||", "|", ";", "&"):
                part.append(token)
                continue
            tested = GUARD.match(" ".join(part))
            if tested and token == "||":  # what follows runs only where the path is missing
                guard, part = _norm(tested.group(1) or tested.group(2)), []
                continue
            command, guard = Command(line, guard=guard), ""
            while part and re.match(r"^\w+=", part[0]):  # VAR=value before a command
                part.pop(0)
            for i, token_ in enumerate(part):  # > FILE, >> FILE
                if token_ in (">", ">>") and i + 1 < len(part):
                    command.writes.append(part[i + 1])
            words = [
                w
                for i, w in enumerate(part)
                if w not in (">", ">>") and (i == 0 or part[i - 1] not in (">", ">>"))
            ]
            if words[:1] == ["torchrun"] and "sentcl.cli" in words:
                words = ["sentcl", *words[words.index("sentcl.cli") + 1 :]]
            if words[:1] == [
                "mkdir"
            ]:  # a folder (and with -p its parents) that a later step, a script, fills
                for folder in (w for w in words[1:] if not w.startswith("-")):
                    parts = Path(_norm(folder)).parts
                    command.writes += [str(Path(*parts[: i + 1])) for i in range(len(parts))]
            elif words[:1] in (["cp"], ["mv"]) and len(words) > 2:
                command.writes.append(words[-1])
            elif words[:1] == ["sentcl"] and len(words) > 1:
                _sentcl(words[1:], command)
            elif words[:2] in (["python", "-m"], ["python3", "-m"]) and "--student" in words:
                command.reads.append(words[words.index("--student") + 1])  # python -m bench.distill_speed
            if command.reads or command.writes or command.problem:
                found.append(command)
            part = []
    return tuple(found)


def built_in(path: str) -> bool:
    """A name that is not a file of the user's: an offline model, a hub id, a recipe, a download item."""
    if path in OFFLINE_MODELS or path in HUB_MODELS or path in recipe_names():
        return True
    owner = path.split("/", 1)[0]
    if HUB_ID.match(path) and owner in HUB_OWNERS:
        return True
    inside = DATA_DIR.sub("", path)
    return inside != path and download_command(inside) is not None or download_command(path) is not None


def _created(path: str, made: set[str]) -> bool:
    path = _norm(path)
    return any(path == m or path.startswith(m + "/") for m in made)


def _page_blocks(page: Path) -> tuple[list[str], list[str]]:
    """A page's bash blocks and its prose paragraphs."""
    text = page.read_text(encoding="utf-8")
    blocks = re.findall(r"^```bash\n(.*?)^```", text, re.S | re.M)
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return blocks, re.split(r"\n\s*\n", prose)


@functools.cache
def _user_pages() -> frozenset[Path]:
    return frozenset(p.resolve() for p in user_pages())


def outputs(page: Path, seen: frozenset[Path] = frozenset()) -> set[str]:
    """Every path a page's commands write, and what the pages it names as a source give it."""
    blocks, _ = _page_blocks(page)
    made = prerequisites(page, seen)
    for block in blocks:
        for command in commands(block):
            made |= {_norm(w) for w in command.writes}
    return made


def prerequisites(page: Path, seen: frozenset[Path] = frozenset()) -> set[str]:
    """Paths a page takes from another: backticked in a paragraph that links to the page whose commands make
    them (checked: the linked page does write them)."""
    if page in seen:
        return set()
    _, paragraphs = _page_blocks(page)
    given_: set[str] = set()
    for paragraph in paragraphs:
        named = {_norm(p) for p in re.findall(r"`([^`\s]+)`", paragraph)}
        for link in re.findall(r"\]\(([^)#\s]+\.md)", paragraph):
            source = (page.parent / link).resolve()
            if named and source in _user_pages() and source != page:
                theirs = outputs(source, seen | {page})
                given_ |= {p for p in named if _created(p, theirs)}
    return given_


def unmade_inputs(page: Path, alone: bool = False) -> list[str]:
    """The inputs of a page's commands that nothing earlier made and that are not built in; ``alone``: the
    page run by itself in an empty folder, nothing taken from the pages it links to."""
    blocks, _ = _page_blocks(page)
    made, missing = (set() if alone else prerequisites(page)), []
    for block in blocks:
        for command in commands(block):
            if command.problem:
                missing.append(f"{page.relative_to(ROOT)}: `{command.line.strip()}`: {command.problem}")
            missing += [
                f"{page.relative_to(ROOT)}: {path!r} in `{command.line.strip()}`"
                for path in command.reads
                if not built_in(path) and not _created(path, made)
            ]
            made |= {_norm(w) for w in command.writes}
    return missing


def test_every_command_on_a_user_page_reads_only_what_an_earlier_step_made() -> None:
    pages = [page for page in user_pages() if "```bash" in page.read_text(encoding="utf-8")]
    assert len(pages) >= 10
    missing = [item for page in pages for item in unmade_inputs(page)]
    assert not missing, "\n".join(missing)


def test_the_parser_reads_inputs_and_outputs_as_the_commands_take_them() -> None:
    block = (
        "export SENTCL_DATA=$PWD/sentcl-data\n"
        "sentcl train --config demo --set data.train_file=mine.txt --output-dir runs/q   # a comment\n"
        "sentcl export --format onnx runs/q/best runs/q/onnx && sentcl serve runs/q/onnx --index emb/index-ivf\n"
        "torchrun --nproc_per_node 2 -m sentcl.cli encode --model M --input big.txt \\\n    --output emb/\n"
        "sentcl recipes show demo > mine.yaml\n"
        "sentcl index build --embeddings emb/ --type ivf\n"
        "sentcl search --model M --corpus s.txt --query 'a dog' --index runs/idx\n"
        "sentcl train --config distill_minilm_l3 --set eval.dev_task=pairs:/abs/dev.tsv\n"
        "mkdir -p beir/qrels\npython3 - <<'PY'\nprint('sentcl eval --model nowhere')\nPY\n"
        "sentcl eval --model M --retrieval beir\n"
    )
    found = [(c.reads, c.writes) for c in commands(block)]
    assert found == [
        (["demo", "mine.txt"], ["runs/q"]),
        (["runs/q/best"], ["runs/q/onnx"]),
        (["runs/q/onnx", "emb/index-ivf"], []),
        (["M", "big.txt"], ["emb"]),
        ([], ["mine.yaml"]),
        (["emb"], ["emb/index-ivf"]),
        (["M", "s.txt"], ["runs/idx"]),
        (["distill_minilm_l3", "/abs/dev.tsv"], [_recipe_output("distill_minilm_l3")]),
        ([], ["beir", "beir/qrels"]),
        (["M", "beir"], []),
    ]


@settings(deadline=None)  # a loaded machine: no time limit on one example
@given(
    folder=st.from_regex(r"[a-z][a-z0-9_]{0,8}(/[a-z0-9_]{1,8}){0,2}", fullmatch=True),
    below=st.from_regex(r"(/[a-z0-9_.]{1,8}){0,2}", fullmatch=True),
)
def test_a_path_below_a_written_folder_counts_as_made_and_a_sibling_does_not(folder: str, below: str) -> None:
    made = {_norm(folder + "/")}
    assert _created(folder + below, made) and _created("./" + folder + below, made)
    assert not _created(folder + "x" + below, made)  # runs/quick does not make runs/quickly


@pytest.mark.parametrize(
    ("path", "expected"),
    [("all-MiniLM-L6-v2", True), ("demo", True), ("corpora/nli_for_simcse.csv", True),
     ("$SENTCL_DATA/corpora/wiki1m_prefix.txt", True), ("sentence-transformers/all-mpnet-base-v2", True),
     ("runs/quick/best", False), ("big.txt", False), ("M", False), ("someone/their-model", False)],
)  # fmt: skip
def test_built_ins_are_models_recipes_and_download_items_only(path: str, expected: bool) -> None:
    assert built_in(path) is expected


def test_a_page_that_reads_what_no_step_made_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import test_docs_snippets as me

    first, second = tmp_path / "first.md", tmp_path / "second.md"
    first.write_text("```bash\nsentcl train --config demo --output-dir runs/a\n```\n", encoding="utf-8")
    second.write_text(
        "`runs/a/best` is what [the first page](first.md) trains; `runs/b` is not.\n\n"
        "```bash\nsentcl eval --model runs/a/best\nsentcl eval --model runs/b/best\n"
        "sentcl eval ... --tasks sts\n```\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(me, "ROOT", tmp_path)
    monkeypatch.setattr(me, "_user_pages", lambda: frozenset({first, second}))
    assert unmade_inputs(first) == []
    unmade, placeholder = unmade_inputs(second)
    assert "'runs/b/best'" in unmade and "eval ... --tasks sts" in placeholder and "error" in placeholder


#: variables a shell has without any page setting them
SHELL_VARIABLES = {"PWD", "HOME", "PATH", "USER", "OLDPWD", "SHELL"}


def _kept(command: Command, path: str) -> bool:
    """A write that never replaces: its command runs only where the path (or a path below or above it) is
    missing (`[ -d runs/quick/best ] || sentcl train ... --output-dir runs/quick`)."""
    return bool(command.guard) and (_created(path, {command.guard}) or _created(command.guard, {path}))


def page_writes(page: Path) -> set[str]:
    """The paths the page's own commands write (not what it takes from the pages it links to), but for the
    ones a guard keeps when they are there."""
    blocks, _ = _page_blocks(page)
    written = {
        _norm(w)
        for block in blocks
        for command in commands(block)
        for w in command.writes
        if not _kept(command, _norm(w))
    }
    return {path for path in written if not built_in(path)}  # a download item: a second download keeps it


def shared_outputs(pages: list[Path]) -> list[str]:
    """Paths two pages write: run in one folder, one page's output would stop (or replace) the other's."""
    writers: dict[str, list[str]] = {}
    for page in pages:
        for path in page_writes(page):
            writers.setdefault(path, []).append(str(page.relative_to(ROOT)))
    return [f"{path}: {', '.join(sorted(by))}" for path, by in sorted(writers.items()) if len(by) > 1]


def unset_variables(page: Path) -> list[str]:
    """Variables the page's commands read (``$NAME``, ``${NAME}``) that no earlier line of the page sets
    (``export NAME=``, ``NAME=``): they would come from another page's shell."""
    blocks, _ = _page_blocks(page)
    set_: set[str] = set(SHELL_VARIABLES)
    missing = []
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            code = line.split(" #", 1)[0]
            for name in re.findall(r"\$\{?([A-Za-z_]\w*)", code):
                if name not in set_ and not re.search(rf"(?:^|\s){name}=", code):
                    missing.append(f"{page.relative_to(ROOT)}: ${name} in `{line.strip()}`")
            # what stays set: `export NAME=...`, or a line of assignments only (not `NAME=value command`)
            set_ |= set(re.findall(r"export\s+([A-Za-z_]\w*)=", code))
            if re.fullmatch(r"\s*(?:[A-Za-z_]\w*=\S*\s*)+", code):
                set_ |= set(re.findall(r"([A-Za-z_]\w*)=", code))
    return missing


def tutorial_pages() -> list[Path]:
    """The pages a newcomer runs one after another, in one folder: the quickstart and the tutorials."""
    return [ROOT / "docs" / "quickstart.md", *sorted((ROOT / "docs" / "tutorials").glob("*.md"))]


def test_no_two_tutorials_write_the_same_file() -> None:
    """After the quickstart, in the same folder, a tutorial's `encode --output emb.npy` stopped on the
    quickstart's emb.npy; two tutorials wrote mined.csv."""
    shared = shared_outputs(tutorial_pages())
    assert not shared, "\n".join(shared)


def test_every_tutorial_alone_in_an_empty_folder_reads_only_what_it_makes() -> None:
    """A tutorial that read the quickstart's `runs/quick/best` needed the quickstart first: each page makes
    what it reads (a guarded step at its top, or a pretrained model), whatever ran before it."""
    missing = [item for page in tutorial_pages() for item in unmade_inputs(page, alone=True)]
    assert not missing, "\n".join(missing)


def setup_steps(page: Path) -> list[str]:
    """The page's guarded commands (`[ -d P ] || command`), each as one line, continuations joined."""
    blocks, _ = _page_blocks(page)
    lines = [" ".join(line.split()) for block in blocks for line in block.replace("\\\n", " ").splitlines()]
    return [
        line.split(" #", 1)[0].strip() for line in lines if re.match(r"^(?:\[ -[def] |test -[def] )", line)
    ]


def test_a_tutorials_guarded_step_is_the_quickstarts_own_command() -> None:
    """A tutorial makes the quickstart's model and sentences by the quickstart's own commands, run only where
    they are missing: after the quickstart nothing is made again, and in an empty folder it is the same model
    the page's outputs show."""
    quickstart = {
        " ".join(line.split()).split(" #", 1)[0].strip()
        for block in _page_blocks(tutorial_pages()[0])[0]
        for line in block.replace("\\\n", " ").splitlines()
    }
    steps = {page.name: setup_steps(page) for page in tutorial_pages()[1:]}
    assert sum(map(len, steps.values())) >= 5
    for name, lines in steps.items():
        for line in lines:
            assert line.split(" || ", 1)[1] in quickstart, f"{name}: `{line}` is not a quickstart command"


def test_every_variable_a_tutorial_reads_is_set_on_that_page() -> None:
    """In a new shell, without the quickstart's `export SENTCL_DATA`, the tutorials read '/corpora/...'."""
    missing = [item for page in tutorial_pages() for item in unset_variables(page)]
    assert not missing, "\n".join(missing)


def test_the_page_rules_find_a_shared_output_and_an_unset_variable(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    one, two = tmp_path / "one.md", tmp_path / "two.md"
    one.write_text(
        "```bash\nexport SENTCL_DATA=$PWD/d\nsentcl encode --model m --input a.txt --output e.npy\n```\n"
    )
    two.write_text("```bash\nhead \"$SENTCL_DATA/corpora/x.txt\" > a.txt\nsentcl encode --model m --input a.txt "
                   "--output e.npy\n```\n")  # fmt: skip
    assert shared_outputs([one, two]) == ["e.npy: one.md, two.md"]
    assert unset_variables(one) == [] and len(unset_variables(two)) == 1
    kept = tmp_path / "kept.md"
    kept.write_text("```bash\n[ -f e.npy ] || sentcl encode --model m --input a.txt --output e.npy\n```\n")
    assert shared_outputs([one, kept]) == []  # run only where e.npy is missing: it never replaces one
