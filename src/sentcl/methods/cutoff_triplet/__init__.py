"""Token cutoff views (weak s*, strong s**) with a triplet term (an unpublished research note).

Paper: an unpublished research note: Token cutoff views with a triplet term (unpublished), no link:
unpublished.

Run it (the small recipe, then the paper's setting)::

    sentcl train --config cutoff_triplet --set training.max_steps=20
    sentcl train --config cutoff_triplet_bert_base

or from Python (``from sentcl.config import TrainConfig, load_config``, ``resolve_recipe`` from ``sentcl.config.builtin``)::

    cfg = load_config(TrainConfig, resolve_recipe("cutoff_triplet"), ["training.max_steps=20"])
    result = sentcl.train(cfg)

Here: ``options.py`` (its options class and ``RECORD``, torch-free), ``build.py``, ``loss.py``. The catalogue
(``sentcl.config.method_catalogue``) lists it.
"""
