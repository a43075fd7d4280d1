"""What a method's record holds, torch-free: its paper (authors, title, venue, citation, link, headline number)
and the record itself (name, options class, reader, paper, summary).

Each method writes its own ``RECORD = register_method(MethodRecord(...))`` in ``sentcl/methods/<name>/options.py``,
beside its options class; the catalogue (:mod:`sentcl.config.method_catalogue`) imports every such module, one line each. The model card, the README's table and the results pages
read the records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sentcl.registry import Registry

if TYPE_CHECKING:
    from sentcl.config.objective import ObjectiveConfig

#: what most headline numbers measure
STS7 = "7-task STS average (STS12-16, STS-B, SICK-R; Spearman x 100), BERT-base"


@dataclass(frozen=True)
class Paper:
    """Where a method comes from. ``headline``: the paper's own number for the method (None where the paper
    reports none sentcl can compare with); ``headline_what`` says what it measures, or why there is none.
    ``url``: the paper's page (ACL Anthology, arXiv or the publisher's DOI); None only for an unpublished note."""

    authors: str
    title: str
    venue: str
    citation: str
    headline: float | None
    headline_what: str
    url: str | None = None

    def line(self) -> str:
        """``Tianyu Gao, Xingcheng Yao and Danqi Chen: SimCSE: ... (EMNLP 2021)``"""
        return f"{self.authors}: {self.title} ({self.venue})"


@dataclass(frozen=True)
class MethodRecord:
    """One method: ``objective.name``, its options class, its training file's reader, its paper."""

    name: str
    options: type[ObjectiveConfig]
    reader: str
    paper: Paper
    #: one line for model cards and help texts
    summary: str

    @property
    def package(self) -> str:
        """The method's own package (``sentcl.methods.diffcse``): its options module's parent. Its ``build``
        module holds the builder."""
        return self.options.__module__.rsplit(".", 1)[0]


#: every method's record by name: each ``options.py`` registers its own (``register_method``), and the catalogue
#: (:mod:`sentcl.config.method_catalogue`) imports every ``options.py``, one line each
METHODS: Registry[MethodRecord] = Registry("method")


def register_method(record: MethodRecord) -> MethodRecord:
    """Register ``record`` under its name (twice is an error); returns it, for ``RECORD = register_method(...)``."""
    METHODS.register(record.name)(lambda: record)
    return record
