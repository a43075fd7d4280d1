"""Post-processing of sentence vectors without training the encoder: whitening, BERT-flow (issue 15) and PCA.

``fit.postprocess_model`` fits one on the vectors of a file of sentences and attaches it to a SentenceEncoder;
``storage`` saves and loads it with the model folder, so every command that loads the model applies it.
"""
