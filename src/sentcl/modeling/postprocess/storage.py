"""Post-processing stored with the model (sentcl.json + a safetensors file), applied by SentenceEncoder.

- Whitening is an affine map, kept as the last of the model's Dense layers (identity activation): sentcl.json
  lists it under ``dense`` like any sentence-transformers Dense module, so ``SentenceTransformer(folder)``
  applies it too.
- BERT-flow is ``encoder.flow`` (a Glow): its settings under sentcl.json ``flow`` ({dim, levels, depth,
  width}), its weights in ``sentcl_flow.safetensors``. sentence-transformers cannot express it, so a folder
  with a flow has no sentence-transformers files (``SentenceTransformer`` would otherwise load it silently
  without the flow): load it with sentcl (``sentcl encode/eval/search/serve``, ``load_encoder``).
- sentcl.json ``postprocess`` records what was fitted on what ({method, fit_files, sentences, ...}).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from sentcl.files.paths import ModelFolderError

logger = logging.getLogger("sentcl")

FLOW_WEIGHTS = "sentcl_flow.safetensors"
FLOW_KEYS = ("dim", "levels", "depth", "width")


def save_postprocess(encoder: Any, folder: Path) -> dict[str, Any]:
    """Write the flow's weights (if any) into ``folder``; the sentcl.json entries to add. A folder with a flow
    gets no sentence-transformers files: the encoder's ``save_pretrained`` leaves them out."""
    meta: dict[str, Any] = {}
    if encoder.postprocess is not None:
        meta["postprocess"] = encoder.postprocess
    if encoder.flow is not None:
        state = {k: v.detach().cpu().contiguous() for k, v in encoder.flow.state_dict().items()}
        save_file(state, str(folder / FLOW_WEIGHTS))
        meta["flow"] = encoder.flow.config.to_json()
        logger.info(
            "%s: no sentence-transformers files: BERT-flow has no sentence-transformers module; load the "
            "folder with sentcl",
            folder,
        )
    return meta


def check_postprocess_meta(file: Path, meta: dict[str, Any]) -> None:
    """The sentcl.json entries of post-processing, checked (an error names the file and the key)."""
    if "postprocess" in meta and not isinstance(meta["postprocess"], dict):
        raise ModelFolderError(f"{file}: 'postprocess' must be an object, got {meta['postprocess']!r}")
    if "flow" in meta:
        flow = meta["flow"]
        ok = (
            isinstance(flow, dict)
            and set(flow) == set(FLOW_KEYS)
            and all(
                isinstance(flow[k], int) and not isinstance(flow[k], bool) and flow[k] > 0 for k in FLOW_KEYS
            )
        )
        if not ok:
            raise ModelFolderError(
                f"{file}: 'flow' must be an object of positive whole numbers {', '.join(FLOW_KEYS)}, got {flow!r}"
            )


def load_flow(folder: Path, meta: dict[str, Any]) -> Any:
    """The Glow stored in ``folder`` (None when sentcl.json has no ``flow``)."""
    if "flow" not in meta:
        return None
    from sentcl.modeling.postprocess.flow import FlowConfig, Glow

    file = folder / FLOW_WEIGHTS
    if not file.is_file():
        raise ModelFolderError(f"{file}: missing; {folder / 'sentcl.json'} says the model has a BERT-flow")
    flow = Glow(FlowConfig(**meta["flow"]))
    try:
        state = load_file(str(file))
    except (SafetensorError, OSError) as err:
        raise ModelFolderError(f"{file}: not a readable safetensors file ({err})") from None
    expected = flow.state_dict()
    bad = sorted(set(expected) ^ set(state))
    bad += [k for k, v in state.items() if k in expected and expected[k].shape != v.shape]
    if bad:
        raise ModelFolderError(
            f"{file}: does not match the flow of {folder / 'sentcl.json'} ({meta['flow']}): "
            f"{', '.join(bad[:5])}"
        )
    flow.load_state_dict(state)
    return flow.eval()
