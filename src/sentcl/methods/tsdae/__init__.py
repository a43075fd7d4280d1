"""TSDAE (Wang, Reimers and Gurevych, 2021): a denoising auto-encoder whose bottleneck is the sentence vector.

Paper: Kexin Wang, Nils Reimers and Iryna Gurevych: TSDAE: Using Transformer-based Sequential Denoising
Auto-Encoder for Unsupervised Sentence Embedding Learning (Findings of EMNLP 2021),
https://aclanthology.org/2021.findings-emnlp.59.

Run it (from all-MiniLM-L6-v2 with its own pooling, then from a raw BERT with the paper's [CLS])::

    sentcl train --config tsdae --set data.train_file=my_sentences.txt
    sentcl train --config tsdae_bert_base

or from Python (``from sentcl.config import TrainConfig, load_config``, ``resolve_recipe`` from ``sentcl.config.builtin``)::

    cfg = load_config(TrainConfig, resolve_recipe("tsdae"), ["training.max_steps=20"])
    result = sentcl.train(cfg)

Here: ``options.py`` (its options class and ``RECORD``, torch-free), ``build.py``, ``decoder.py`` (the decoder
built from the encoder), ``loss.py``. The catalogue (``sentcl.config.method_catalogue``) lists it.
"""
