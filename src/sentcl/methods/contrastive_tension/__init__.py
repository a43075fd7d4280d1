"""Contrastive Tension (Carlsson et al., 2021), the in-batch form: two independent copies of the encoder, the same
sentence through both as the positive, the batch's other sentences as negatives.

Paper: Fredrik Carlsson, Amaru Cuba Gyllensten, Evangelia Gogoulou, Erik Ylipää Hellqvist and Magnus Sahlgren:
Semantic Re-tuning with Contrastive Tension (ICLR 2021), https://openreview.net/forum?id=Ov_sMNau-PF.

Run it::

    sentcl train --config contrastive_tension --set data.train_file=my_sentences.txt
    sentcl train --config contrastive_tension_bert_base

or from Python (``from sentcl.config import TrainConfig, load_config``, ``resolve_recipe`` from ``sentcl.config.builtin``)::

    cfg = load_config(TrainConfig, resolve_recipe("contrastive_tension"), ["training.max_steps=20"])
    result = sentcl.train(cfg)

Here: ``options.py`` (its options class and ``RECORD``, torch-free), ``build.py``, ``loss.py``. The catalogue
(``sentcl.config.method_catalogue``) lists it.
"""
