"""ESimCSE (Wu et al., 2022): word repetition positives, a momentum-encoded negative queue.

Paper: Xing Wu, Chaochen Gao, Liangjun Zang, Jizhong Han, Zhongyuan Wang and Songlin Hu: ESimCSE: Enhanced
Sample Building Method for Contrastive Learning of Unsupervised Sentence Embedding (COLING 2022),
https://arxiv.org/abs/2109.04380.

Run it (the small recipe, then the paper's setting)::

    sentcl train --config esimcse --set training.max_steps=20
    sentcl train --config esimcse_bert_base

or from Python (``from sentcl.config import TrainConfig, load_config``, ``resolve_recipe`` from ``sentcl.config.builtin``)::

    cfg = load_config(TrainConfig, resolve_recipe("esimcse"), ["training.max_steps=20"])
    result = sentcl.train(cfg)

Here: ``options.py`` (its options class and ``RECORD``, torch-free), ``build.py``, ``loss.py``. The catalogue
(``sentcl.config.method_catalogue``) lists it.
"""
