"""CoSENT (Su, 2022): a ranking loss on the cosines of scored pairs.

Paper: Jianlin Su: CoSENT: a more efficient sentence vector scheme than Sentence-BERT (blog post (kexue.fm),
2022), https://kexue.fm/archives/8847.

Run it (the small recipe, then the paper's setting)::

    sentcl train --config cosent --set training.max_steps=20
    sentcl train --config cosent_bert_base

or from Python (``from sentcl.config import TrainConfig, load_config``, ``resolve_recipe`` from ``sentcl.config.builtin``)::

    cfg = load_config(TrainConfig, resolve_recipe("cosent"), ["training.max_steps=20"])
    result = sentcl.train(cfg)

Here: ``options.py`` (its options class and ``RECORD``, torch-free), ``build.py``, ``loss.py``. The catalogue
(``sentcl.config.method_catalogue``) lists it.
"""
