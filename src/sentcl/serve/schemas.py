"""Request bodies: text-embeddings-inference's /embed and /similarity, OpenAI's /v1/embeddings, /search."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt


class EmbedRequest(BaseModel):
    inputs: str | list[str]
    normalize: bool = True  # text-embeddings-inference's default
    truncate: bool | None = None  # None: the service's --auto-truncate


class SimilarityInputs(BaseModel):
    source_sentence: str
    sentences: list[str]


class SimilarityRequest(BaseModel):
    inputs: SimilarityInputs
    truncate: bool | None = None


class OpenAIEmbeddingRequest(BaseModel):
    model_config = ConfigDict(extra="allow")  # e.g. "user": accepted and ignored

    # token ids: strict, so that true/false or 1.5 are refused rather than read as ids
    input: str | list[str] | list[StrictInt] | list[list[StrictInt]]
    model: str | None = None  # any name is accepted; the response names the served model
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(None, ge=1)


class SearchRequest(BaseModel):
    query: str | None = None
    queries: list[str] | None = None
    k: int = Field(5, ge=1)
    truncate: bool | None = None
