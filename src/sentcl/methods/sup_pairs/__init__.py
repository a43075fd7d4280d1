"""SimCSE (Gao et al., 2021), supervised pairs without hard negatives (Table 4 / Table 7).

Paper: Tianyu Gao, Xingcheng Yao and Danqi Chen: SimCSE: Simple Contrastive Learning of Sentence Embeddings
(EMNLP 2021), https://aclanthology.org/2021.emnlp-main.552.

Run it (the small recipe)::

    sentcl train --config demo --set objective.name=sup_pairs --set data.train_file=pairs.csv

or from Python (``from sentcl.config import TrainConfig, load_config``, ``resolve_recipe`` from ``sentcl.config.builtin``)::

    cfg = load_config(TrainConfig, resolve_recipe("demo"), ["objective.name=sup_pairs", "data.train_file=pairs.csv"])
    result = sentcl.train(cfg)

Here: ``options.py`` (its options class and ``RECORD``, torch-free), ``build.py``. The catalogue
(``sentcl.config.method_catalogue``) lists it.
"""
