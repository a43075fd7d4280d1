"""Request bodies, strictly typed (a JSON true is no number, 1 no boolean): text-embeddings-inference's /embed and /similarity, OpenAI's /v1/embeddings, /search."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt


class EmbedRequest(BaseModel):
    inputs: str | list[str]
    normalize: StrictBool = True  # text-embeddings-inference's default
    truncate: StrictBool | None = None  # None: the service's --auto-truncate


class SimilarityInputs(BaseModel):
    source_sentence: str
    sentences: list[str]


class SimilarityRequest(BaseModel):
    inputs: SimilarityInputs
    truncate: StrictBool | None = None


class OpenAIEmbeddingRequest(BaseModel):
    model_config = ConfigDict(extra="allow")  # e.g. "user": accepted and ignored

    # token ids: strict, so that true/false or 1.5 are refused rather than read as ids
    input: str | list[str] | list[StrictInt] | list[list[StrictInt]] = Field(
        json_schema_extra={"kind": "token-ids"}
    )
    model: str | None = None  # any name is accepted; the response names the served model
    encoding_format: Literal["float", "base64"] = "float"
    # strict: a JSON true is not dimensions 1, nor 1.0 a width
    dimensions: StrictInt | None = Field(None, ge=1)
    # not OpenAI's: the service's own, as on /embed (its 422 for a long input says to send it)
    truncate: StrictBool | None = None


class SearchRequest(BaseModel):
    query: str | None = None
    queries: list[str] | None = None
    k: StrictInt = Field(5, ge=1)
    truncate: StrictBool | None = None
