"""Every registered method has a complete record: its paper, a citation, the paper's headline
number with what it measures; a builder; a reader and option keys the config knows. The model card of a run of
each method names its paper."""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from pathlib import Path

import pytest

import sentcl.config.names as config_names
from sentcl.config import TrainConfig, load_config, method_scoped_keys, resume_safe_keys, to_dict
from sentcl.config.objective import ObjectiveConfig
from sentcl.methods.base import method_builder
from sentcl.methods.catalogue import METHODS, method_record
from sentcl.modeling.model_card import render_card


def test_every_record_is_its_own_package_with_a_builder() -> None:
    """One method, one place: each record's options live in ``sentcl/methods/<name>/options.py`` and its builder
    in the same package's ``build.py``; every package under methods/ with an options module is in the catalogue."""
    assert len(METHODS.names()) == 18
    for name in METHODS.names():
        record = method_record(name)
        assert record.package == f"sentcl.methods.{name}"
        assert record.options.__module__ == f"sentcl.methods.{name}.options"
        assert method_builder(name).__module__ == f"sentcl.methods.{name}.build"
    src = Path(__file__).resolve().parents[2] / "src" / "sentcl" / "methods"
    packages = sorted(p.parent.name for p in src.glob("*/options.py"))
    assert packages == METHODS.names(), "a method package missing from sentcl.methods.catalogue"
    catalogue = (src / "catalogue.py").read_text(encoding="utf-8")
    missing = [n for n in packages if f"import sentcl.methods.{n}.options  # noqa: F401" not in catalogue]
    assert missing == [], "each method's one registration line is in catalogue.py"


@pytest.mark.parametrize("name", METHODS.names())
def test_record_is_complete(name: str) -> None:
    record = method_record(name)
    paper = record.paper
    assert record.name == name and record.summary.strip()
    assert paper.authors.strip() and paper.title.strip() and paper.citation.strip()
    published = re.search(r"(19|20)\d\d", paper.venue)
    assert published or "unpublished" in paper.venue, f"{name}: venue/year {paper.venue!r}"
    assert paper.title.split(":")[0] in paper.citation
    if "unpublished" in paper.venue and paper.authors.startswith("an unpublished"):
        assert paper.url is None
    else:  # the paper's own page: ACL Anthology, arXiv, the publisher's DOI, ICLR's OpenReview, the author's post
        assert re.fullmatch(
            r"https://(aclanthology\.org|arxiv\.org/abs|doi\.org|openreview\.net|kexue\.fm)/\S+",
            paper.url or "",
        ), name
    if paper.headline is None:
        assert paper.headline_what.startswith("none:"), "a missing number says why"
    else:
        assert 0 < paper.headline <= 100 and ("STS" in paper.headline_what)
    assert record.reader in config_names.READERS
    assert issubclass(record.options, ObjectiveConfig)
    assert set(record.options.uses) <= set(method_scoped_keys()), "a used key is a method-scoped field"


@pytest.mark.parametrize("name", METHODS.names())
def test_builder_takes_the_records_options_typed(name: str) -> None:
    """Builders receive typed options: the second parameter is annotated with the record's options class."""
    build = method_builder(name)
    hints = typing.get_type_hints(build)
    second = list(inspect.signature(build).parameters)[1]
    assert hints[second] is method_record(name).options


def test_config_names_match_the_registries() -> None:
    """The torch-free names the config checks equal the registries beside the code (one list each)."""
    from sentcl.data.augment import FEATURE_AUGMENTATIONS, TEXT_AUGMENTATIONS, TOKEN_AUGMENTATIONS
    from sentcl.data.sources import NEUTRAL_READERS, READERS
    from sentcl.evaluation.runner import DEV_PREFIXES, GROUPS, TASKS, dev_task_names
    from sentcl.interop import mteb_adapter  # registers the task "mteb" (any test order, or this one alone)

    assert "mteb" in TASKS and mteb_adapter

    assert tuple(READERS.names()) == config_names.READERS
    assert NEUTRAL_READERS == config_names.NEUTRAL_READERS
    assert tuple(TEXT_AUGMENTATIONS.names()) == config_names.TEXT_AUGMENTATIONS
    tokens = sorted([*TOKEN_AUGMENTATIONS.names(), *FEATURE_AUGMENTATIONS.names()])
    assert tuple(tokens) == config_names.TOKEN_AUGMENTATIONS
    assert tuple(TASKS) == config_names.EVAL_TASKS and tuple(GROUPS) == config_names.EVAL_GROUPS
    assert tuple(dev_task_names()) == config_names.DEV_TASKS
    assert tuple(DEV_PREFIXES) == config_names.DEV_PREFIXES


def test_rules_are_field_metadata() -> None:
    """The resume and scope rules are read from the fields' metadata (no table beside them)."""
    scoped, safe = set(method_scoped_keys()), set(resume_safe_keys())
    assert {"data.augmentation", "model.two_encoders", "data.negation_file"} <= scoped
    assert {"training.max_steps", "eval.final_tasks", "training.output_dir"} <= safe
    assert not scoped & safe
    assert "training.learning_rate" not in safe and "training.seed" not in safe
    for section in dataclasses.fields(TrainConfig):
        for f in dataclasses.fields(typing.get_type_hints(TrainConfig)[section.name]):
            key = f"{section.name}.{f.name}"
            assert (key in scoped) == bool(f.metadata.get("method_scoped"))


@pytest.mark.parametrize("name", METHODS.names())
def test_card_names_the_paper(name: str) -> None:
    paper = method_record(name).paper
    overrides = [f"objective.name={name}"]
    if method_record(name).options.templated_views:
        overrides.append("model.pooler=mask")
    config = to_dict(load_config(TrainConfig, None, overrides))
    card = render_card(config, "run", steps=4, best_step=4)
    method = card.split("## Method\n", 1)[1].split("## Training", 1)[0]
    assert paper.title in method and paper.citation in method
    assert (f"{paper.headline:g}" if paper.headline is not None else paper.headline_what) in method
    if paper.url is not None:
        assert f"<{paper.url}>" in method


#: the docs page of each method (docs/methods/<page>.md), where it is not the method's name with dashes
DOCS_PAGE = {"sup_pairs": "sup-simcse", "next_sentence": "simcse-ablations"}


@pytest.mark.parametrize("name", METHODS.names())
def test_the_paper_link_is_on_the_docs_page_and_in_the_package_docstring(name: str) -> None:
    """One link, three places: the record, the method's docs page and its package's docstring (the model card
    is checked above)."""
    import importlib

    paper = method_record(name).paper
    root = Path(__file__).resolve().parents[2]
    page = root / "docs" / "methods" / f"{DOCS_PAGE.get(name, name.replace('_', '-'))}.md"
    doc = importlib.import_module(f"sentcl.methods.{name}").__doc__ or ""
    if paper.url is not None:
        assert paper.url in page.read_text(encoding="utf-8")
        assert paper.url in " ".join(doc.split())
    assert paper.title in " ".join(doc.split())


@pytest.mark.parametrize("name", METHODS.names())
def test_the_package_docstring_runs_a_recipe_of_this_method(name: str) -> None:
    """The usage lines of each method's docstring name built-in recipes that train this very method."""
    import importlib

    from sentcl.config.builtin import resolve_recipe

    doc = importlib.import_module(f"sentcl.methods.{name}").__doc__ or ""
    commands = re.findall(r"sentcl train --config (\S+)(.*)", doc)
    assert commands, f"{name}: no usage line"
    for recipe, rest in commands:
        overrides = re.findall(r"--set (\S+)", rest)
        cfg = load_config(
            TrainConfig, resolve_recipe(recipe), [o for o in overrides if "train_file" not in o]
        )
        assert cfg.objective.name == name, (recipe, overrides)
