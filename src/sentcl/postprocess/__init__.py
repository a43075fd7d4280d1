"""Post-processing of sentence vectors without training the encoder: ``fit.postprocess_model`` fits whitening,
BERT-flow or PCA on the vectors of a file of sentences and attaches it to a SentenceEncoder.

The layers themselves, and their files in a model folder, are part of the model: ``sentcl.modeling.postprocess``.
"""
