"""Quick-Thoughts (Logeswaran & Lee, 2018): classify the context sentences.

Paper: Lajanugen Logeswaran and Honglak Lee: An Efficient Framework for Learning Sentence Representations
(ICLR 2018), https://arxiv.org/abs/1803.02893.

Run it (the small recipe)::

    sentcl train --config quick_thoughts --set training.max_steps=20
    sentcl train --config quick_thoughts_kl

or from Python (``from sentcl.config import TrainConfig, load_config``, ``resolve_recipe`` from ``sentcl.config.builtin``)::

    cfg = load_config(TrainConfig, resolve_recipe("quick_thoughts"), ["training.max_steps=20"])
    result = sentcl.train(cfg)

Here: ``options.py`` (its options class and ``RECORD``, torch-free), ``build.py``, ``loss.py``. The catalogue
(``sentcl.config.method_catalogue``) lists it.
"""
