"""One unsupervised SimCSE training step of sentcl's own code, run by every process of a ``torchrun`` (or by
one plain process): ``python two_node_step.py MODEL CORPUS OUT``.

Process r of W takes rows r·B/W .. (r+1)·B/W of the global batch (the corpus's first B lines), runs
``sentcl.training.step.forward_loss`` (the objective sees the views gathered from every process: the global
batch's in-batch negatives), averages the gradients (``sentcl.distributed.sync_gradients``, as the optimizer
step does) and saves ``rank<r>.pt``: the loss and every parameter's gradient. ``--local-negatives`` (one plain
process) takes rows 0 .. B/4 only: what process 0 of four would see with no gather, the scheme the test must
tell apart.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from sentcl import distributed
from sentcl.config import TrainConfig, load_config
from sentcl.data.readers import Corpus
from sentcl.methods import build_method
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.training.batch_source import augment_tokens, make_batch
from sentcl.training.step import forward_loss

GLOBAL_BATCH = 8


def main(model_dir: str, corpus: str, out: str, local_negatives: bool = False) -> None:
    torch.set_num_threads(1)
    distributed.init_from_env()
    rank, world = distributed.rank(), distributed.world_size()
    sentences = Path(corpus).read_text(encoding="utf-8").splitlines()[:GLOBAL_BATCH]
    cfg = load_config(TrainConfig, None, [f"model.name_or_path={model_dir}", "model.dropout=0.0"])
    torch.manual_seed(0)  # the same initial weights (the pooler's head) on every process
    model = SentenceEncoder.from_pretrained(model_dir, pooler=cfg.model.pooler, dropout=cfg.model.dropout)
    method = build_method(cfg, Corpus(Path(corpus), sentences), model.tokenizer)
    model.train()
    method.reseed(0, 0)
    share = GLOBAL_BATCH // (4 if local_negatives else world)
    local = sentences[rank * share : (rank + 1) * share]
    batch = augment_tokens(make_batch(local, method, model), method, len(local))
    outputs = forward_loss(model, batch, method, len(local))
    distributed.sync_gradients(model)
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    torch.save(
        {"loss": outputs["loss"].detach(), "grads": grads, "world": world}, Path(out, f"rank{rank}.pt")
    )
    if distributed.is_distributed():
        distributed.barrier()
        distributed.shutdown()


if __name__ == "__main__":
    main(*sys.argv[1:4], local_negatives="--local-negatives" in sys.argv[4:])
