"""The service's state behind the routes: the loaded encoder (None while loading), the micro-batcher, the
search index, the metrics, and the checks every request's inputs pass before they are encoded."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from sentcl.files.read import preview
from sentcl.serve.batching import MicroBatcher
from sentcl.serve.limits import Limits, ServiceError
from sentcl.serve.metrics import Metrics
from sentcl.serve.text import char_budget, check_blank, check_token_ids, check_unicode, chunks, cut


def model_length_limit(encoder: Any) -> int:
    """Tokens the model takes: its ``max_length`` (the inference truncation, one meaning for every Encoder)."""
    return int(encoder.max_length)


def backend_name(encoder: Any) -> str:
    """ "torch" for a PyTorch module, else the encoder's ``backend`` attribute or its class (OnnxEncoder: "onnx")."""
    import torch

    if isinstance(encoder, torch.nn.Module):
        return "torch"
    name = getattr(encoder, "backend", None) or type(encoder).__name__
    return "onnx" if name == "OnnxEncoder" else str(name)


class Service:
    """The state behind the routes: the encoder (None while loading), the batcher, the index, the metrics."""

    def __init__(self, limits: Limits, index: Any, info: dict[str, Any], max_length: int | None) -> None:
        self.limits = limits
        self.index = index
        self.info = info
        self.max_length_override = max_length
        self.encoder: Any = None
        self._count_tokenizer: Any = None
        self.n_special = 0
        self._count_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sentcl-count")
        self.load_error: str | None = None
        self.metrics = Metrics(queue_depth=lambda: self.batcher.depth)
        self.batcher = MicroBatcher(
            self._encode,
            max_batch_size=limits.max_batch_size,
            max_batch_tokens=limits.max_batch_tokens,
            max_wait_s=limits.max_wait_ms / 1000,
            max_queue=limits.max_queue,
            on_batch=self._on_batch,
        )

    @property
    def max_length(self) -> int:
        limit = model_length_limit(self.encoder)
        return min(self.max_length_override, limit) if self.max_length_override else limit

    def set_encoder(self, encoder: Any) -> None:
        # a Rust tokenizer used from two threads at once raises "Already borrowed": the encode thread has
        # the encoder's, the one counting thread a copy
        try:
            self._count_tokenizer = copy.deepcopy(encoder.tokenizer)
        except Exception:  # noqa: BLE001 - an uncopyable tokenizer: count in the encode thread instead
            self._count_tokenizer = None
        tokenizer = self._count_tokenizer or encoder.tokenizer
        self.n_special = len(tokenizer("")["input_ids"])  # [CLS] [SEP]: what an input without text gives
        self.encoder = encoder

    def _on_batch(self, sentences: int, seconds: float) -> None:
        self.metrics.batch.observe(sentences)
        self.metrics.encode.observe(seconds)

    def _encode(self, texts: list[str]) -> np.ndarray:
        emb = self.encoder.encode(
            texts, batch_size=self.limits.encode_batch_size, max_length=self.max_length, normalize=False
        )
        return np.asarray(emb, dtype=np.float32)  # (N, D)

    def _token_counts(self, texts: list[str]) -> list[int]:
        tokenizer = self._count_tokenizer or self.encoder.tokenizer
        return [len(ids) for ids in tokenizer(texts, truncation=False)["input_ids"]]

    async def _run_tokenizer(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in the counting thread (the encode thread where the tokenizer could not be copied)."""
        executor = self._count_executor if self._count_tokenizer is not None else self.batcher.executor
        return await asyncio.get_running_loop().run_in_executor(executor, fn, *args)

    async def count_tokens(self, texts: list[str]) -> list[int]:
        """Tokens of each text (specials included), in bounded chunks so other requests interleave."""
        counts: list[int] = []
        for group in chunks(texts):
            counts += await self._run_tokenizer(self._token_counts, group)
        return counts

    def _decode(self, ids: list[list[int]]) -> list[str]:
        tokenizer = self._count_tokenizer or self.encoder.tokenizer
        return [tokenizer.decode(row, skip_special_tokens=True) for row in ids]

    async def decode(self, ids: list[list[int]], truncate: bool | None) -> list[str]:
        """Token-id inputs as text (the model's tokenizer), after ``text.check_token_ids``."""
        self._check_ready(len(ids))
        vocab = len(self._count_tokenizer or self.encoder.tokenizer)
        room = max(
            1, self.max_length - self.n_special
        )  # the ids re-tokenised get [CLS] ... [SEP] around them
        kept = check_token_ids(ids, room, vocab, self._truncating(truncate))
        texts = await self._run_tokenizer(self._decode, kept)
        blank = next((i for i, text in enumerate(texts) if not text.strip()), None)
        if blank is not None:
            raise ServiceError(
                400,
                "empty",
                f"input {blank}'s token ids are all special tokens ({preview(kept[blank])}), which the service "
                "drops: send the ids of the text itself",
            )
        await self._check_round_trip(kept, texts)
        return texts

    def _no_text_form(self, row: list[int]) -> int | None:
        """The first id of ``row`` whose decoded text the tokenizer does not read back as one token."""
        tokenizer = self._count_tokenizer or self.encoder.tokenizer
        for token in dict.fromkeys(row):
            text = tokenizer.decode([token], skip_special_tokens=True)
            if text and len(tokenizer(text, add_special_tokens=False)["input_ids"]) != 1:
                return token
        return None

    async def _check_round_trip(self, kept: list[list[int]], texts: list[str]) -> None:
        """Token ids are read as the text they decode to: refuse ids whose text the tokenizer reads as more
        tokens than were sent (ids such as BERT's [unused0] have no text form: 250 of them are 1,002 tokens),
        naming such an id; the model would otherwise embed other tokens than the client sent."""
        counts = await self.count_tokens(texts)
        grown = next((i for i, n in enumerate(counts) if n - self.n_special > len(kept[i])), None)
        if grown is None:
            return
        token = await self._run_tokenizer(self._no_text_form, kept[grown])
        tokenizer = self._count_tokenizer or self.encoder.tokenizer
        named = (
            ""
            if token is None
            else f"; token id {token} ({tokenizer.convert_ids_to_tokens(token)!r}) has no text form of its own"
        )
        raise ServiceError(
            422,
            "invalid_token_id",
            f"input {grown}'s {len(kept[grown])} token ids decode to text that the model's tokenizer reads as "
            f"{counts[grown] - self.n_special} tokens{named}: the service reads token ids as the text they "
            "decode to, so send the text itself, or ids of tokens that have a text form",
        )

    def _truncating(self, truncate: bool | None) -> bool:
        return self.limits.auto_truncate if truncate is None else truncate

    def _check_ready(self, n_inputs: int) -> None:
        if self.encoder is None:
            raise ServiceError(503, "unavailable", self.load_error or "the model is loading")
        if not n_inputs:
            raise ServiceError(400, "empty", "no input: send at least one sentence")
        if n_inputs > self.limits.max_client_batch:
            raise ServiceError(
                413,
                "too_many_inputs",
                f"{n_inputs} inputs in one request; the limit is {self.limits.max_client_batch}",
            )

    async def embed(self, texts: list[str], truncate: bool | None) -> tuple[np.ndarray, int]:
        """Raw embeddings (N, D) of ``texts`` after the limits' checks, and the tokens they used."""
        self._check_ready(len(texts))
        limit = self.max_length
        budget = char_budget(limit)
        check_unicode(texts)
        over = next((i for i, t in enumerate(texts) if len(t) > budget), None)
        if over is not None and not self._truncating(truncate):
            raise ServiceError(
                422,
                "input_too_long",
                f"input {over} has {len(texts[over])} characters, over the {budget} the service reads for a "
                f'model of {limit} tokens (send "truncate": true to cut it)',
            )
        texts = [cut(t, budget) for t in texts]
        check_blank(texts)
        counts = await self.count_tokens(texts)
        unread = next((i for i, n in enumerate(counts) if n <= self.n_special), None)
        if unread is not None:
            raise ServiceError(400, "empty", f"input {unread} holds no token the model reads")
        over = next((i for i, n in enumerate(counts) if n > limit), None)
        if over is not None and not self._truncating(truncate):
            raise ServiceError(
                422,
                "input_too_long",
                f"input {over} has {counts[over]} tokens; the model takes {limit}"
                ' (send "truncate": true to cut it)',
            )
        used = sum(min(n, limit) for n in counts)
        return await self.batcher.submit(texts, used), used
