from sentcl.modeling.dual import DualEncoder, load_encoder
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.modeling.heads import MLPHead
from sentcl.modeling.pooling import POOLERS, masked_mean, pool

__all__ = ["POOLERS", "DualEncoder", "MLPHead", "SentenceEncoder", "load_encoder", "masked_mean", "pool"]
