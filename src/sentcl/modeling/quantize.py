"""A fast CPU inference mode: dynamic int8 quantisation of the encoder's Linear layers.

Weights are stored as int8 with one scale per output channel, W ≈ s_c · W_int8[c, :]; activations are
quantised per batch on the fly with one scale per tensor (dynamic range) and the products accumulate in
int32 (fbgemm kernels; AVX2 suffices). The feed-forward output projections stay in fp32: a per-tensor
activation scale is set by the largest channel, and on all-MiniLM-L6-v2 their input (the GELU output)
has channels up to 17× the median channel's max |x| (layer 0, 128 wiki sentences); quantising them too
lowers the mean cosine to the fp32 embedding from 0.988 to 0.976 for ~5% more speed. Inference only
(``sentcl eval --int8``, ``sentcl encode --int8``); speed and STS cost in docs/performance.md.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable

import torch
from torch import nn

from sentcl.modeling.dual import DualEncoder
from sentcl.modeling.encoder import SentenceEncoder


def default_selection(name: str) -> bool:
    """Every Linear but the feed-forward output projections (BERT's ``layer.N.output.dense``) and the
    unused [CLS] pooler."""
    ffn_output = name.endswith("output.dense") and ".attention." not in name
    return not ffn_output and "pooler" not in name


@torch.no_grad()
def quantize_int8(
    encoder: SentenceEncoder | DualEncoder, select: Callable[[str], bool] = default_selection
) -> SentenceEncoder | DualEncoder:
    """A copy of ``encoder`` in eval mode whose selected nn.Linear layers run as dynamic int8 with per-channel
    weight scales (CPU only); the original is left untouched."""
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    model = copy.deepcopy(encoder).eval()
    names = [n for n, m in model.named_modules() if isinstance(m, nn.Linear) and select(n)]
    if not names:
        raise ValueError("no nn.Linear layer selected for int8 quantisation")
    if "fbgemm" in torch.backends.quantized.supported_engines:
        torch.backends.quantized.engine = "fbgemm"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch deprecates quantized tensor creation in favour of torchao
        return quantize_dynamic(
            model, dict.fromkeys(names, per_channel_dynamic_qconfig), torch.qint8, inplace=True
        )
