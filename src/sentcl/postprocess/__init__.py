"""Post-processing of sentence vectors without training the encoder: whitening (Su et al.,
"Whitening Sentence Representations for Better Semantics and Faster Retrieval", 2021), BERT-flow (Li et al., "On the
Sentence Embeddings from Pre-trained Language Models", EMNLP 2020) and PCA.

``fit.postprocess_model`` fits one on the vectors of a file of sentences and attaches it to a SentenceEncoder;
``storage`` saves and loads it with the model folder, so every command that loads the model applies it.
"""
