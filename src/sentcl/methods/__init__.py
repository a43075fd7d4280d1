"""Training methods: which views each example yields, how they are encoded, and which objective scores them.

Each method's record (options class, reader, paper) is torch-free in :mod:`sentcl.config.method_records`, its options
in :mod:`sentcl.config.method_options`; ``Method`` and the builders' registry live in :mod:`sentcl.methods.base`, the
view helpers in :mod:`sentcl.methods.views`, and each builder in a module of its own. A new method is a record,
an options class, a new module and one import line below (the import registers its builder).
"""

from sentcl.config.method_records import METHODS, MethodRecord
from sentcl.methods.base import (
    BUILDERS,
    Builder,
    EmbeddingAugment,
    Example,
    Method,
    TokenAugment,
    ViewFn,
    build_method,
    method_spec,
    register_method,
)
from sentcl.methods.views import (
    duplicate_view,
    positive_view_augmented,
    text_augmentation,
    token_augmentation,
)

# one import line per method module (the import registers the method)
from sentcl.methods import unsup_simcse  # noqa: E402, F401  isort: skip
from sentcl.methods import sup_simcse  # noqa: E402, F401  isort: skip
from sentcl.methods import sup_pairs  # noqa: E402, F401  isort: skip
from sentcl.methods import cutoff_triplet  # noqa: E402, F401  isort: skip
from sentcl.methods import next_sentence  # noqa: E402, F401  isort: skip
from sentcl.methods import quick_thoughts  # noqa: E402, F401  isort: skip
from sentcl.methods import cosent  # noqa: E402, F401  isort: skip
from sentcl.methods import esimcse  # noqa: E402, F401  isort: skip
from sentcl.methods import mixcse  # noqa: E402, F401  isort: skip
from sentcl.methods import arccse  # noqa: E402, F401  isort: skip
from sentcl.methods import promptbert  # noqa: E402, F401  isort: skip
from sentcl.methods import sncse  # noqa: E402, F401  isort: skip
from sentcl.methods import distill_mse  # noqa: E402, F401  isort: skip
from sentcl.methods import distill_kl  # noqa: E402, F401  isort: skip
from sentcl.methods import rankcse  # noqa: E402, F401  isort: skip
from sentcl.methods import diffcse  # noqa: E402, F401  isort: skip

__all__ = [
    "BUILDERS",
    "METHODS",
    "Builder",
    "EmbeddingAugment",
    "Example",
    "Method",
    "MethodRecord",
    "TokenAugment",
    "ViewFn",
    "build_method",
    "duplicate_view",
    "method_spec",
    "positive_view_augmented",
    "register_method",
    "text_augmentation",
    "token_augmentation",
]
