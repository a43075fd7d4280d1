"""Label-free evaluation of a model on the user's own text (``sentcl eval --unlabelled FILE``)."""
