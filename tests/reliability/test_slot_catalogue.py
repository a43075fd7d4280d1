"""The slot catalogue follows the code: every command-line option and argument (from the parsers), every
configuration key (from the typed config, every method's options included), every field of every request
schema and every kind of file sentcl reads has a kind, and every kind has its hostile generators. A new
option, key, field or file kind without one fails here, naming it."""

from __future__ import annotations

from typing import Any

import pytest
from hostile import GENERATORS, HTTP_KINDS

from sentcl.files.slots import KINDS, cli_slots, config_slots, file_slots, schema_slots, unclassified

ROUTES = (
    ("POST /embed", "EmbedRequest"),
    ("POST /similarity", "SimilarityRequest"),
    ("POST /v1/embeddings", "OpenAIEmbeddingRequest"),
    ("POST /search", "SearchRequest"),
)
#: the file kinds sentcl reads, by the readers' own tables (model layouts, sentcl's folder kinds) and the rest
OTHER_FILES = {
    "user text (--input, --corpus, --queries)": "path-read",
    "pairs (--pairs: TSV, CSV, JSONL)": "path-read",
    "BEIR folder (--retrieval)": "folder-read",
    ".npy array (--queries of index build, shards)": "array",
    "key file (--api-key-file)": "secret-file",
    "recipe or grid (YAML)": "recipe",
}


def all_cli_slots() -> list[Any]:
    from sentcl.cli import build_parser

    return cli_slots(build_parser())


def all_config_slots() -> list[Any]:
    from sentcl.config.method_catalogue import option_classes
    from sentcl.config.sections import TrainConfig
    from sentcl.config.static_recipe import StaticRecipe

    slots = config_slots(TrainConfig) + config_slots(StaticRecipe)
    for cls in option_classes().values():  # the objective section: each method's own options
        slots += [s for s in config_slots(cls, "objective.") if s not in slots]
    return slots


def all_http_slots() -> list[Any]:
    from sentcl.serve import schemas

    return [s for route, model in ROUTES for s in schema_slots(route, getattr(schemas, model))]


def all_file_slots() -> list[Any]:
    from sentcl.files.output import LEGACY
    from sentcl.modeling.locate import FOLDER_KINDS

    kinds = [(f"model folder: {k}", "model") for k in FOLDER_KINDS]
    kinds += [(f"sentcl folder: {k}", "folder-own" if k != "model" else "model") for k in LEGACY]
    return file_slots([*kinds, *OTHER_FILES.items()])


@pytest.mark.parametrize("surface", ["cli", "config", "http", "file"])
def test_every_slot_has_a_kind(surface: str) -> None:
    slots = {"cli": all_cli_slots, "config": all_config_slots, "http": all_http_slots, "file": all_file_slots}
    found = slots[surface]()
    assert found, surface
    assert unclassified(found) == [], "declare a kind at the slot (sentcl.files.slots): " + ", ".join(
        unclassified(found)
    )


def test_every_kind_has_generators() -> None:
    missing = [k for k in KINDS if k not in GENERATORS]
    assert missing == [], f"kinds without hostile generators (tests/reliability/hostile.py): {missing}"
    empty = [k for k, gens in GENERATORS.items() if not gens and k not in HTTP_KINDS]
    assert empty == [], f"kinds with no generator: {empty}"


def test_the_catalogue_counts() -> None:
    """The size of the catalogue, printed for the record (pytest -s) and bounded below, so that a reader that
    stops finding slots (a parser built another way) fails."""
    counts = {
        "cli": len(all_cli_slots()),
        "config": len(all_config_slots()),
        "http": len(all_http_slots()),
        "file": len(all_file_slots()),
    }
    print("slot catalogue:", counts)
    assert counts["cli"] >= 200 and counts["config"] >= 80 and counts["http"] >= 15 and counts["file"] >= 20
