"""SNCSE (Wang et al., 2022): PromptBERT's [MASK] state + the negation as a soft negative (BML).

Paper: Hao Wang, Yangguang Li, Zhen Huang, Yong Dou, Lingpeng Kong and Jing Shao: SNCSE: Contrastive Learning
for Unsupervised Sentence Embedding with Soft Negative Samples (arXiv 2201.05979, 2022),
https://arxiv.org/abs/2201.05979.

Run it (the small recipe, then the paper's setting)::

    sentcl train --config sncse --set training.max_steps=20
    sentcl train --config sncse_bert_base

or from Python (``from sentcl.config import TrainConfig, load_config``, ``resolve_recipe`` from ``sentcl.config.builtin``)::

    cfg = load_config(TrainConfig, resolve_recipe("sncse"), ["training.max_steps=20"])
    result = sentcl.train(cfg)

Here: ``options.py`` (its options class and ``RECORD``, torch-free), ``build.py``, ``loss.py``. The catalogue
(``sentcl.config.method_catalogue``) lists it.
"""
