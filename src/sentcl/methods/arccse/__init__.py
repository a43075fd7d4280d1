"""ArcCSE (Zhang et al., 2022): an angular margin on the positive + a triplet over masked views.

Paper: Yuhao Zhang, Hongji Zhu, Yongliang Wang, Nan Xu, Xiaobo Li and Binqiang Zhao: A Contrastive Framework
for Learning Sentence Representations from Pairwise and Triple-wise Perspective in Angular Space (ACL 2022),
https://aclanthology.org/2022.acl-long.336.

Run it (the small recipe, then the paper's setting)::

    sentcl train --config arccse --set training.max_steps=20
    sentcl train --config arccse_bert_base

or from Python (``from sentcl.config import TrainConfig, load_config``, ``resolve_recipe`` from ``sentcl.config.builtin``)::

    cfg = load_config(TrainConfig, resolve_recipe("arccse"), ["training.max_steps=20"])
    result = sentcl.train(cfg)

Here: ``options.py`` (its options class and ``RECORD``, torch-free), ``build.py``, ``loss.py``. The catalogue
(``sentcl.config.method_catalogue``) lists it.
"""
