"""PromptBERT (Jiang et al., 2022): the [MASK] state of a template, two templates as the positive.

Paper: Ting Jiang, Jian Jiao, Shaohan Huang, Zihan Zhang, Deqing Wang, Fuzhen Zhuang, Furu Wei, Haizhen Huang,
Denvy Deng and Qi Zhang: PromptBERT: Improving BERT Sentence Embeddings with Prompts (EMNLP 2022),
https://arxiv.org/abs/2201.04337.

Run it (the small recipe, then the paper's setting)::

    sentcl train --config promptbert --set training.max_steps=20
    sentcl train --config promptbert_bert_base

or from Python (``from sentcl.config import TrainConfig, load_config``, ``resolve_recipe`` from ``sentcl.config.builtin``)::

    cfg = load_config(TrainConfig, resolve_recipe("promptbert"), ["training.max_steps=20"])
    result = sentcl.train(cfg)

Here: ``options.py`` (its options class and ``RECORD``, torch-free), ``build.py``. The catalogue
(``sentcl.config.method_catalogue``) lists it.
"""
