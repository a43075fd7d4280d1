"""sentcl models outside sentcl: sentence-transformers, ONNX, MTEB, model cards."""
