"""RankCSE (Liu et al., 2023): SimCSE + ranking consistency + listwise ranking distillation from teachers.

Paper: Jiduan Liu, Jiahao Liu, Qifan Wang, Jingang Wang, Wei Wu, Yunsen Xian, Dongyan Zhao, Kai Chen and Rui
Yan: RankCSE: Unsupervised Sentence Representations Learning via Learning to Rank (ACL 2023),
https://arxiv.org/abs/2305.16726.

Run it (the small recipe, then the paper's setting)::

    sentcl train --config rankcse --set training.max_steps=20
    sentcl train --config rankcse_bert_base

or from Python (``from sentcl.config import TrainConfig, load_config``, ``resolve_recipe`` from ``sentcl.config.builtin``)::

    cfg = load_config(TrainConfig, resolve_recipe("rankcse"), ["training.max_steps=20"])
    result = sentcl.train(cfg)

Here: ``options.py`` (its options class and ``RECORD``, torch-free), ``build.py``, ``loss.py``. The catalogue
(``sentcl.config.method_catalogue``) lists it.
"""
