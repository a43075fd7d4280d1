"""Knowledge distillation (Reimers & Gurevych, 2020): the student reproduces the teacher's vectors (MSE); parallel sentences make it multilingual.

Paper: Nils Reimers and Iryna Gurevych: Making Monolingual Sentence Embeddings Multilingual using Knowledge
Distillation (EMNLP 2020), https://aclanthology.org/2020.emnlp-main.365.

Run it (the small recipe)::

    sentcl train --config distill_mse --set training.max_steps=20
    sentcl train --config distill_minilm_l3

or from Python (``from sentcl.config import TrainConfig, load_config``, ``resolve_recipe`` from ``sentcl.config.builtin``)::

    cfg = load_config(TrainConfig, resolve_recipe("distill_mse"), ["training.max_steps=20"])
    result = sentcl.train(cfg)

Here: ``options.py`` (its options class and ``RECORD``, torch-free), ``build.py``, ``loss.py``. The catalogue
(``sentcl.config.method_catalogue``) lists it.
"""
