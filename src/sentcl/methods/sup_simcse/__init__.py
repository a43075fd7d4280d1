"""SimCSE (Gao et al., 2021), supervised: NLI entailment positives, contradiction hard negatives.

Paper: Tianyu Gao, Xingcheng Yao and Danqi Chen: SimCSE: Simple Contrastive Learning of Sentence Embeddings
(EMNLP 2021), https://aclanthology.org/2021.emnlp-main.552.

Run it (the small recipe, then the paper's setting)::

    sentcl train --config sup_simcse_snli --set training.max_steps=20
    sentcl train --config sup_simcse_bert_base

or from Python (``from sentcl.config import TrainConfig, load_config``, ``resolve_recipe`` from ``sentcl.config.builtin``)::

    cfg = load_config(TrainConfig, resolve_recipe("sup_simcse_snli"), ["training.max_steps=20"])
    result = sentcl.train(cfg)

Here: ``options.py`` (its options class and ``RECORD``, torch-free), ``build.py``. The catalogue
(``sentcl.config.method_catalogue``) lists it.
"""
