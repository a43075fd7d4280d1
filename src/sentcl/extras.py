"""How to install an optional extra of sentcl, in words that work: sentcl is not on a package index.

``extra_hint("serve")`` is the one formatter of that advice (error messages and docs use it): from a
checkout ``pip install -e '.[serve]'``, from a wheel ``pip install 'dist/sentcl-0.1.0-py3-none-any.whl[serve]'``
(the file ``python -m build`` writes). Torch-free: the bottom floor.
"""

from __future__ import annotations

from importlib import metadata

# importable module -> the extra of pyproject.toml that provides it
EXTRA_OF_MODULE: dict[str, str] = {
    "fastapi": "serve",
    "uvicorn": "serve",
    "orjson": "serve",
    "onnx": "onnx",
    "onnxruntime": "onnx",
    "openvino": "openvino",
    "mteb": "mteb",
    "tensorboard": "tensorboard",
    "faiss": "faiss",
    "lancedb": "store",
    "lance": "store",
    "ray": "ray",
    "sentence_transformers": "bench",
}


def _version() -> str:
    try:
        return metadata.version("sentcl")
    except metadata.PackageNotFoundError:  # imported from a source tree that was never installed
        return "0.1.0"


def wheel_name() -> str:
    """The file name of the wheel ``python -m build`` writes for this version."""
    return f"sentcl-{_version()}-py3-none-any.whl"


def extra_hint(extra: str) -> str:
    """The install command for ``extra``, from a checkout and from a wheel."""
    return (
        f"pip install -e '.[{extra}]' in a sentcl checkout, or "
        f"pip install 'dist/{wheel_name()}[{extra}]' from a wheel"
    )


def missing_extra_message(module: str) -> str | None:
    """``MODULE is not installed: <hint>`` when ``module`` (or its top package) comes from an extra, else None."""
    extra = EXTRA_OF_MODULE.get(module.split(".")[0])
    return f"{module} is not installed (the {extra!r} extra): {extra_hint(extra)}" if extra else None
