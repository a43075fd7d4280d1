"""Every command block of a user page shows what it prints or how long it takes: a ``bash`` block is followed,
before the next command block or heading, by a ``text`` block (what the commands printed) or by a sentence that
gives its time on a 2-core CPU. A block that cannot run on a CPU without a network (it needs a GPU, a hub model
such as bert-base-uncased, or a file the data folder does not hold) is on the allow-list below, and its page says
so in one plain sentence that contains "not run for this page".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_docs_site import ROOT, user_pages

NOT_RUN = "not run for this page"
#: a time on the machine the pages were measured on, in one sentence: "About 4 min on a 2-core CPU", "on an idle
#: 2-core machine it took 7 min 43 s", "12 min 18 s of CPU time"
_AMOUNT = r"\b\d[\d,.]*\s*(?:ms|s|min|h|seconds?|minutes?|hours?)\b"
_MACHINE = r"\bon an? (?:idle )?2-core (?:CPU|machine)\b"
TIME = re.compile(
    rf"{_AMOUNT}[^.]*?(?:{_MACHINE}|\bof CPU time\b)|{_MACHINE}[^.]*?{_AMOUNT}",
    re.IGNORECASE,
)
HEADING = re.compile(r"^#{1,6} ")
FENCE = re.compile(r"^```(\w*)\s*$")

#: the blocks that need what a CPU without a network lacks: (page, a command the block holds) -> what it needs
NEEDS_MORE = {
    (
        "docs/tutorials/train-unsupervised.md",
        "sentcl download wiki1m --data-dir",
    ): "the network, a GPU, bert-base",
    ("docs/tutorials/train-supervised.md", "sentcl download nli --data-dir"): "the network, a GPU, bert-base",
    ("docs/guides/data.md", "sentcl download wiki1m nli senteval"): "the network (wiki1m and nli, 1.4 GB)",
    ("docs/methods/whitening-flow.md", "sentcl postprocess whitening --model bert-base"): "bert-base, nli",
    ("docs/methods/whitening-flow.md", "sentcl postprocess flow --model bert-base"): "bert-base, nli",
    ("docs/postprocess.md", "--model bert-base-uncased --pooler avg_first_last"): "bert-base, nli",
    ("docs/methods/unsup-simcse.md", "sentcl train --config unsup_simcse_bert_base"): "a GPU, bert-base",
    ("docs/methods/sup-simcse.md", "sentcl train --config sup_simcse_bert_base"): "a GPU, bert-base, nli",
    ("docs/methods/cutoff-triplet.md", "sentcl train --config cutoff_triplet_bert_base"): "a GPU, bert-base",
    ("docs/methods/cosent.md", "sentcl train --config cosent_bert_base"): "a GPU, bert-base",
    (
        "docs/guides/adapt-to-your-domain.md",
        "runs/my-tsdae/best --unlabelled held_out.txt",
    ): "the label-free evaluation, a user's file",
    ("docs/guides/training-runs.md", "# on every machine (HOST_A"): "several machines",
    ("docs/guides/beyond-one-machine.md", "export AWS_ENDPOINT_URL=https://s3.example.com"): "object storage",
    (
        "docs/guides/beyond-one-machine.md",
        "--index s3://my-bucket/sentcl/corpus --port 8081",
    ): "object storage",
    ("docs/guides/beyond-one-machine.md", "curl -s -X POST localhost:8081/index/reload"): "object storage",
    ("docs/guides/beyond-one-machine.md", "--index s3://my-bucket/sentcl/corpus --output"): "object storage",
}


@dataclass(frozen=True)
class Block:
    """A ``bash`` block of a page and what follows it up to the next command block or heading."""

    line: int  # 1-based line of the opening fence
    body: str
    after: str


def command_blocks(text: str) -> list[Block]:
    """The page's ``bash`` blocks in order, each with the text (prose and other blocks) that follows it before
    the next ``bash`` block or the next heading outside a block."""
    found: list[Block] = []
    current: tuple[int, list[str], list[str]] | None = None  # the last bash block: line, body, what follows
    inside: str | None = None  # the language of the block being read ("" for a bare fence), None outside
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if inside is not None:
            if fence and not fence.group(1):  # the block closes
                if inside == "bash":
                    current = (current[0], current[1], []) if current else None
                elif current:
                    current[2].append(line)
                inside = None
            elif current:
                (current[1] if inside == "bash" else current[2]).append(line)
            continue
        if fence and fence.group(1) == "bash" or HEADING.match(line):
            if current:
                found.append(Block(current[0], "\n".join(current[1]), "\n".join(current[2])))
            current, inside = ((number, [], []), "bash") if fence else (None, None)
            continue
        if fence:
            inside = fence.group(1)
        if current:
            current[2].append(line)
    if current:
        found.append(Block(current[0], "\n".join(current[1]), "\n".join(current[2])))
    return found


def shows_what_it_does(block: Block) -> bool:
    """An output block, or a time on a 2-core CPU in the prose, follows the commands."""
    prose = re.sub(r"^```.*?^```", "", block.after, flags=re.S | re.M)
    return bool(re.search(r"^```text\s*$", block.after, re.M)) or bool(TIME.search(" ".join(prose.split())))


def _allowed(page: str, block: Block) -> str | None:
    return next((key for (where, key) in NEEDS_MORE if where == page and key in block.body), None)


def unshown_blocks(pages: list[Path]) -> list[str]:
    """The blocks without output or time that are not allowed, and the allowed ones whose page does not say
    that they were not run."""
    problems = []
    for page in pages:
        name = page.relative_to(ROOT).as_posix()
        for block in command_blocks(page.read_text(encoding="utf-8")):
            first = block.body.strip().splitlines()[0] if block.body.strip() else ""
            if _allowed(name, block):
                if NOT_RUN not in " ".join(block.after.split()):
                    problems.append(f"{name}:{block.line}: `{first}` is allowed but the page does not say so")
            elif not shows_what_it_does(block):
                problems.append(f"{name}:{block.line}: `{first}` has no output block and no time")
    return problems


def test_every_command_block_on_a_user_page_shows_its_output_or_its_time() -> None:
    pages = [page for page in user_pages() if "```bash" in page.read_text(encoding="utf-8")]
    assert len(pages) >= 10
    problems = unshown_blocks(pages)
    assert not problems, "\n".join(problems)


def test_every_allowed_block_is_on_its_page() -> None:
    texts = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in user_pages()}
    stale = [
        (page, key)
        for page, key in NEEDS_MORE
        if not any(key in b.body for b in command_blocks(texts.get(page, "")))
    ]
    assert not stale, stale


def test_a_block_without_output_or_time_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir()
    page.write_text(
        "# A page\n\n```bash\nsentcl eval --model m\n```\n\nAbout 12 s on a 2-core CPU.\n\n"
        "```bash\nsentcl encode --model m\n```\n\nIt writes a file.\n\n## Next\n\n"
        "```bash\nsentcl search --model m\n```\n\n```text\nquery: a\n```\n",
        encoding="utf-8",
    )
    import test_docs_outputs as me

    monkeypatch.setattr(me, "ROOT", tmp_path)
    assert unshown_blocks([page]) == [
        "docs/page.md:9: `sentcl encode --model m` has no output block and no time"
    ]


#: the parts a generated page is made of: a command block, its output, a time sentence, other prose, a heading
PART = st.sampled_from(["bash", "text", "time", "prose", "heading", "python"])


def _render(parts: list[str]) -> str:
    pieces = {
        "bash": "```bash\nsentcl eval --model m\n```",
        "text": "```text\nSTS-B dev 82.60\n```",
        "time": "About 65 s on a 2-core CPU, most of it the evaluation.",
        "prose": "The model is a folder; see the guide.",
        "heading": "## A section",
        "python": "```python\nprint(1)\n```",
    }
    return "\n\n".join(pieces[p] for p in parts) + "\n"


def _reference(parts: list[str]) -> list[bool]:
    """Whether each bash part is followed by an output or a time before the next bash part or heading."""
    shown = []
    for i, part in enumerate(parts):
        if part != "bash":
            continue
        seen = False
        for later in parts[i + 1 :]:
            if later in ("bash", "heading"):
                break
            seen = seen or later in ("text", "time")
        shown.append(seen)
    return shown


@settings(deadline=None, max_examples=200)
@given(st.lists(PART, max_size=12))
def test_blocks_and_what_follows_them_match_a_reading_of_the_parts(parts: list[str]) -> None:
    blocks = command_blocks(_render(parts))
    assert [b.body for b in blocks] == ["sentcl eval --model m"] * parts.count("bash")
    assert [shows_what_it_does(b) for b in blocks] == _reference(parts)


@pytest.mark.parametrize(
    ("sentence", "timed"),
    [("About 4 min on a 2-core CPU, the two evaluations together.", True),
     ("On an idle 2-core machine `make demo` took 7 min 43 s.", True),
     ("The full run took 12 min 18 s of CPU time.", True),
     ("It writes 4 x 384 embeddings on a 2-core CPU.", False),
     ("About 4 min. It runs on a 2-core CPU.", False),
     ("A few minutes on a laptop.", False)],
)  # fmt: skip
def test_a_time_sentence_names_an_amount_and_the_machine(sentence: str, timed: bool) -> None:
    assert bool(TIME.search(sentence)) is timed
