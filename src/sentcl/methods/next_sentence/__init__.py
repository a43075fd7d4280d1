"""SimCSE Table 2: the next sentence (or one of the next three) as the positive.

Paper: Tianyu Gao, Xingcheng Yao and Danqi Chen: SimCSE: Simple Contrastive Learning of Sentence Embeddings
(EMNLP 2021), https://aclanthology.org/2021.emnlp-main.552.

Run it (the small recipe)::

    sentcl train --config next_sentence --set training.max_steps=20

or from Python (``from sentcl.config import TrainConfig, load_config``, ``resolve_recipe`` from ``sentcl.config.builtin``)::

    cfg = load_config(TrainConfig, resolve_recipe("next_sentence"), ["training.max_steps=20"])
    result = sentcl.train(cfg)

Here: ``options.py`` (its options class and ``RECORD``, torch-free), ``build.py``. The catalogue
(``sentcl.config.method_catalogue``) lists it.
"""
