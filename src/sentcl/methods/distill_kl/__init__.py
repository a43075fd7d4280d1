"""The student's in-batch similarity distribution follows the teacher's (KL divergence; our reading).

Paper: sentcl (our reading): In-batch similarity-distribution distillation (unpublished),
https://arxiv.org/abs/2305.16726.

Run it (the small recipe, then the paper's setting)::

    sentcl train --config distill_kl --set training.max_steps=20
    sentcl train --config distill_kl_bert_base

or from Python (``from sentcl.config import TrainConfig, load_config``, ``resolve_recipe`` from ``sentcl.config.builtin``)::

    cfg = load_config(TrainConfig, resolve_recipe("distill_kl"), ["training.max_steps=20"])
    result = sentcl.train(cfg)

Here: ``options.py`` (its options class and ``RECORD``, torch-free), ``build.py``, ``loss.py``. The catalogue
(``sentcl.config.method_catalogue``) lists it.
"""
