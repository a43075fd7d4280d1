"""MixCSE (Zhang et al., 2022): detached mixed hard negatives added to SimCSE.

Paper: Yanzhao Zhang, Richong Zhang, Samuel Mensah, Xudong Liu and Yongyi Mao: Unsupervised Sentence
Representation via Contrastive Learning with Mixing Negatives (AAAI 2022),
https://doi.org/10.1609/aaai.v36i10.21428.

Run it (the small recipe, then the paper's setting)::

    sentcl train --config mixcse --set training.max_steps=20
    sentcl train --config mixcse_bert_base

or from Python (``from sentcl.config import TrainConfig, load_config``, ``resolve_recipe`` from ``sentcl.config.builtin``)::

    cfg = load_config(TrainConfig, resolve_recipe("mixcse"), ["training.max_steps=20"])
    result = sentcl.train(cfg)

Here: ``options.py`` (its options class and ``RECORD``, torch-free), ``build.py``, ``loss.py``. The catalogue
(``sentcl.config.method_catalogue``) lists it.
"""
