"""Checking a model folder's files before a library reads them: safetensors only, damaged files named, pickles
never run, the tokenizer present.

A ``pytorch_model.bin`` is a Python pickle, and unpickling runs whatever code the file names; sentcl refuses it
without opening it and says how to convert it (``safetensors.torch.save_file`` of the state dict, in a Python
session the user trusts). A ``model.safetensors`` that is empty, truncated or otherwise unreadable is an error
naming the file, checked before transformers sees it.
"""

from __future__ import annotations

from pathlib import Path

from torch import Tensor, nn

from sentcl.files.pathcheck import inside_folder
from sentcl.files.paths import ModelFolderError

SAFETENSORS = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json",
    "spiece.model",
    "sentencepiece.bpe.model",
    "sentencepiece.model",
    "tokenizer.model",
)
PICKLED = ("pytorch_model.bin", "pytorch_model.bin.index.json", "model.pt", "model.pth")


def pickle_refusal(file: Path) -> ModelFolderError:
    return ModelFolderError(
        f"{file}: a pickled PyTorch checkpoint; sentcl does not unpickle weight files (unpickling can run any "
        "code the file names). Convert it to safetensors where you trust it: "
        "`from safetensors.torch import save_file; save_file(torch.load(BIN, weights_only=True), "
        f"'{file.parent / SAFETENSORS}')`"
    )


def check_safetensors(file: Path) -> None:
    """Refuse an empty, truncated or damaged safetensors file (its header, offsets and size), naming it."""
    from safetensors import safe_open

    size = file.stat().st_size
    if size == 0:
        raise ModelFolderError(f"{file}: empty (0 bytes); copy the model's weights again")
    try:
        with safe_open(str(file), framework="pt") as handle:
            handle.keys()
    except Exception as err:  # noqa: BLE001 - safetensors' own error type is not importable everywhere
        raise ModelFolderError(
            f"{file}: not a readable safetensors file ({size} bytes; {err}); it is truncated or damaged, "
            "copy the model's weights again"
        ) from None


def check_weight_files(folder: Path) -> None:
    """A local backbone folder's weights: safetensors checked (every shard an index lists, present and readable),
    a pickle-only folder refused unopened."""
    from sentcl.files.read import read_json

    index = folder / SAFETENSORS_INDEX
    if index.is_file():
        weight_map = read_json(index, dict, error=ModelFolderError).get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise ModelFolderError(f"{index}: needs a non-empty 'weight_map' (tensor name -> shard file)")
        files = [
            inside_folder(folder, str(name), f"{index}: weight_map", ModelFolderError)
            for name in sorted(set(weight_map.values()))
        ]
        for file in files:
            if not file.is_file():
                raise ModelFolderError(f"{file}: missing; {index} lists it as a shard of the weights")
    elif (folder / SAFETENSORS).is_file():
        files = [folder / SAFETENSORS]
    else:
        files = []
        pickled = [folder / name for name in PICKLED if (folder / name).is_file()]
        if pickled:
            raise pickle_refusal(pickled[0])
    for file in files:
        check_safetensors(file)


def check_tokenizer_files(folder: Path) -> None:
    """A local model folder holds its tokenizer (one of TOKENIZER_FILES), else an error saying what to copy."""
    if folder.is_dir() and not any((folder / f).is_file() for f in TOKENIZER_FILES):
        raise ModelFolderError(
            f"{folder}: no tokenizer files (none of {', '.join(TOKENIZER_FILES)}); copy the tokenizer "
            "files of the model it was trained from into this folder"
        )


def read_weights(folder: Path, what: str) -> tuple[Path, dict[str, Tensor]]:
    """(file, tensors) of a module folder's ``model.safetensors``; a pickle is refused unopened."""
    from safetensors.torch import load_file

    file = folder / SAFETENSORS
    if not file.is_file():
        pickled = [folder / name for name in PICKLED if (folder / name).is_file()]
        if pickled:
            raise pickle_refusal(pickled[0])
        raise ModelFolderError(f"{folder}: {what} without weights ({SAFETENSORS})")
    check_safetensors(file)
    return file, load_file(str(file))


def load_checked(module: nn.Module, file: Path, tensors: dict[str, Tensor], fits: str) -> None:
    """``module.load_state_dict(tensors)`` with every name and shape compared first; a mismatch names the file,
    the tensor and both shapes (``fits``: what the module's shape comes from, e.g. "hidden_size 384")."""
    wanted = module.state_dict()
    missing = sorted(set(wanted) - set(tensors))
    if missing:
        raise ModelFolderError(f"{file}: missing tensor(s) {', '.join(missing)}")
    extra = sorted(set(tensors) - set(wanted))
    if extra:
        raise ModelFolderError(f"{file}: unexpected tensor(s) {', '.join(extra)}")
    for name, t in wanted.items():
        if tuple(tensors[name].shape) != tuple(t.shape):
            raise ModelFolderError(
                f"{file}: tensor {name} has shape {tuple(tensors[name].shape)}, but {fits} needs "
                f"{tuple(t.shape)}"
            )
    module.load_state_dict(tensors)
