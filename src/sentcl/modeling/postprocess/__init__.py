"""The post-processing layers of a model: whitening (Su et al., "Whitening Sentence Representations for Better
Semantics and Faster Retrieval", 2021), BERT-flow (Li et al., "On the Sentence Embeddings from Pre-trained
Language Models", EMNLP 2020) and PCA, and their files in a model folder (``storage``).

They are part of the model, so they sit with it; fitting them on a file of sentences is ``sentcl.postprocess.fit``.
"""
