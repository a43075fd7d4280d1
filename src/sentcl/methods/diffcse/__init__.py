"""DiffCSE (Chuang et al., 2022): SimCSE + replaced-token detection conditioned on the sentence vector.

Paper: Yung-Sung Chuang, Rumen Dangovski, Hongyin Luo, Yang Zhang, Shiyu Chang, Marin Soljacic, Shang-Wen Li,
Wen-tau Yih, Yoon Kim and James Glass: DiffCSE: Difference-based Contrastive Learning for Sentence Embeddings
(NAACL 2022), https://aclanthology.org/2022.naacl-main.311.

Run it (the small recipe, then the paper's setting)::

    sentcl train --config diffcse --set training.max_steps=20
    sentcl train --config diffcse_bert_base

or from Python (``from sentcl.config import TrainConfig, load_config``, ``resolve_recipe`` from ``sentcl.config.builtin``)::

    cfg = load_config(TrainConfig, resolve_recipe("diffcse"), ["training.max_steps=20"])
    result = sentcl.train(cfg)

Here: ``options.py`` (its options class and ``RECORD``, torch-free), ``build.py``, ``generator.py``,
``loss.py``. The catalogue (``sentcl.config.method_catalogue``) lists it.
"""
