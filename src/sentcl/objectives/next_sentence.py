"""Next-sentence contrastive objectives (the SimCSE paper's Table 2 baselines).

    l_i = -log  exp(sim(h_i, h_i^+) / tau) / sum_j exp(sim(h_i, h_j^+) / tau),   h_i^+ = f(s_{i+1})

The loss is InfoNCE; only the pairs differ: view 0 is sentence s_i and view 1 its next sentence
s_{i+1} ("next sentence") or one sentence drawn from the next three ("next 3 sentences"). The data
side builds those pairs; one vs two encoders is a model-side choice. This name exists so a config
can say what it trains; the math is exactly ``InfoNCE``.
"""

from __future__ import annotations

from sentcl.objectives.base import OBJECTIVES
from sentcl.objectives.infonce import InfoNCE


@OBJECTIVES.register("next_sentence")
class NextSentence(InfoNCE):
    """InfoNCE on (s_i, next sentence) pairs: z (B, 2, D), view 0 = s_i, view 1 = its next sentence."""
