from sentcl.modeling.encoder import SentenceEncoder
from sentcl.modeling.heads import MLPHead
from sentcl.modeling.pooling import POOLERS, masked_mean, pool

__all__ = ["MLPHead", "POOLERS", "SentenceEncoder", "masked_mean", "pool"]
