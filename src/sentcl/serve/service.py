"""The service's state behind the routes: the loaded encoder (None while loading), the micro-batcher, the
search index, the metrics, and the checks every request's inputs pass before they are encoded."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from sentcl.files.read import preview
from sentcl.modeling.tokenizer_checks import has_patterns
from sentcl.serve.batching import MicroBatcher
from sentcl.serve.limits import Limits, ServiceError
from sentcl.serve.metrics import Metrics
from sentcl.serve.passes import Input, encode_ids, pass_padding, runs_packed
from sentcl.serve.text import (
    INLINE_COUNT_CHARS,
    check_blank,
    check_token_ids,
    check_unicode,
    chunks,
    keep_for_tokens,
)


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

    def __init__(
        self,
        limits: Limits,
        index: Any,
        info: dict[str, Any],
        max_length: int | None,
        after_pass: Callable[[], object] | None = None,
    ) -> None:
        self.limits = limits
        self.after_pass = after_pass  # run in the encode thread after every pass (the CLI: memory release)
        self.index = index
        self.info = info
        self.max_length_override = max_length
        self.encoder: Any = None
        self._count_tokenizer: Any = None
        self._loop_tokenizer: Any = None  # the event loop's own copy, for small groups (INLINE_COUNT_CHARS)
        self.n_special = self.n_unread = 0
        self._packed, self._pad_id = False, 0  # set_encoder: passes by the packed forward on ids
        self._count_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sentcl-count")
        self.load_error: str | None = None
        self.metrics = Metrics(queue_depth=lambda: self.batcher.depth)
        self._views = threading.local()  # each encode thread's encoder: its own tokenizer
        self._shared_encoder = threading.Lock()  # held by threads that could not get their own tokenizer
        self.batcher = MicroBatcher(
            self._encode_pass,
            workers=limits.workers,
            max_batch_size=min(limits.max_batch_size, limits.encode_batch_size),
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
        # the encoder's, the one counting thread a copy, the event loop another
        try:
            self._count_tokenizer = copy.deepcopy(encoder.tokenizer)
            self._loop_tokenizer = copy.deepcopy(encoder.tokenizer)
        except Exception:  # noqa: BLE001 - an uncopyable tokenizer: count in the encode thread instead
            self._count_tokenizer = self._loop_tokenizer = None
        if has_patterns(encoder.tokenizer):  # a regex may be slow on some text: never on the event loop
            self._loop_tokenizer = None
        tokenizer = self._count_tokenizer or encoder.tokenizer
        self.n_special = len(tokenizer("")["input_ids"])  # [CLS] [SEP]: what an input without text gives
        # the special tokens the tokenizer adds but the model does not read (a static model's bag of tokens):
        # not counted toward its length
        self.n_unread = 0 if getattr(encoder, "reads_special_tokens", True) else self.n_special
        self._packed = runs_packed(encoder)
        self.batcher.max_padding = pass_padding(self._packed)
        if self._packed:
            encoder.eval()  # the packed forward runs the modules as they are: no dropout
            self._pad_id = tokenizer.pad_token_id or 0
        self.encoder = encoder

    def _on_batch(self, sentences: int, seconds: float) -> None:
        self.metrics.batch.observe(sentences)
        self.metrics.encode.observe(seconds)

    def _encoder_of_this_thread(self) -> Any:
        """The calling encode thread's own encoder: a shallow copy of the loaded one with its own tokenizer (a
        Rust tokenizer used from two threads at once raises "Already borrowed"). None where the tokenizer
        cannot be copied: every thread then uses the loaded encoder in turn."""
        if self._count_tokenizer is None:
            return None
        view = getattr(self._views, "encoder", None)
        if view is None or view.__dict__.get("_sentcl_source") is not self.encoder:
            try:
                view = copy.copy(self.encoder)
                view.tokenizer = copy.deepcopy(self._count_tokenizer)
                view.__dict__["_sentcl_source"] = self.encoder
            except Exception:  # noqa: BLE001 - an encoder that cannot be copied: take turns
                return None
            self._views.encoder = view
        return view

    def _encode_pass(self, inputs: list[Input]) -> np.ndarray:
        """One pass of the batcher (in an encode thread): ``_encode``, then ``after_pass``."""
        try:
            return self._encode(inputs)
        finally:
            if self.after_pass is not None:
                self.after_pass()

    def _encode(self, inputs: list[Input]) -> np.ndarray:
        if self._packed:  # ids in, no tokenizer: the threads share the encoder
            return encode_ids(self.encoder, [x.ids for x in inputs], self._pad_id)  # (N, D)
        texts = [x.text for x in inputs]
        view = self._encoder_of_this_thread()
        kwargs = {"batch_size": len(texts), "max_length": self.max_length, "normalize": False}
        if view is None:
            with self._shared_encoder:
                emb = self.encoder.encode(texts, **kwargs)
        else:
            emb = view.encode(texts, **kwargs)
        return np.asarray(emb, dtype=np.float32)  # (N, D)

    def _token_ids(self, texts: list[str], limit: int | None, tokenizer: Any = None) -> list[list[int]]:
        """Each text's token ids, specials included: all of them (``limit`` None), or cut as the model reads
        them (truncated to ``limit``); by ``tokenizer`` (default: the counting thread's)."""
        # counting every token (no limit) is how an input over the model's length is found and refused:
        # transformers' "sequence length is longer than ... (821 > 512)" warning would only repeat it
        cut_at: dict[str, Any] = (
            {"truncation": True, "max_length": limit} if limit else {"truncation": False, "verbose": False}
        )
        cut_at.update(return_attention_mask=False, return_token_type_ids=False)  # the ids are all it reads
        if tokenizer is None:  # not ``or``: a tokenizer's truth is its len(), a vocabulary lookup a call
            tokenizer = self._count_tokenizer
        if tokenizer is None:
            with self._shared_encoder:
                return list(self.encoder.tokenizer(texts, **cut_at)["input_ids"])
        return list(tokenizer(texts, **cut_at)["input_ids"])

    async def _run_tokenizer(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in the counting thread (the encode thread where the tokenizer could not be copied)."""
        executor = self._count_executor if self._count_tokenizer is not None else self.batcher.executor
        return await asyncio.get_running_loop().run_in_executor(executor, fn, *args)

    async def token_ids(self, texts: list[str], limit: int | None = None) -> list[list[int]]:
        """``_token_ids`` in bounded chunks so other requests interleave: a chunk of at most
        ``INLINE_COUNT_CHARS`` characters on the event loop (its own tokenizer), a longer one in the counting
        thread."""
        ids: list[list[int]] = []
        for group in chunks(texts):
            if self._loop_tokenizer is not None and sum(map(len, group)) <= INLINE_COUNT_CHARS:
                ids += self._token_ids(group, limit, self._loop_tokenizer)
            else:
                ids += await self._run_tokenizer(self._token_ids, group, limit)
        return ids

    def _decode(self, ids: list[list[int]]) -> list[str]:
        tokenizer = self._count_tokenizer or self.encoder.tokenizer
        with contextlib.nullcontext() if self._count_tokenizer is not None else self._shared_encoder:
            return [tokenizer.decode(row, skip_special_tokens=True) for row in ids]

    async def decode(self, ids: list[list[int]], truncate: bool | None) -> list[str]:
        """Token-id inputs as text (the model's tokenizer), after ``text.check_token_ids``."""
        self._check_ready(len(ids))
        vocab = len(self._count_tokenizer or self.encoder.tokenizer)
        # the ids re-tokenised get [CLS] ... [SEP] around them, which count where the model reads them
        room = max(1, self.max_length - self.n_special + self.n_unread)
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
        ids = await self.token_ids(texts)
        counts = [len(row) for row in ids]
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
        check_unicode(texts)
        kept = [keep_for_tokens(t, limit) for t in texts]  # the input budget (sentcl.files.budget)
        check_blank(kept)  # the kept text holds the first words, whatever whitespace comes before them
        over = next((i for i, (k, t) in enumerate(zip(kept, texts, strict=True)) if len(k) < len(t)), None)
        if over is not None and not self._truncating(truncate):
            raise ServiceError(
                422,
                "input_too_long",
                f"input {over} has {len(texts[over])} characters and more than {limit} words, over the "
                f'model\'s {limit} tokens (send "truncate": true to cut it)',
            )
        texts = kept
        ids = await self.token_ids(texts)
        counts = [len(row) - self.n_unread for row in ids]  # the tokens the model reads
        unread = next((i for i, n in enumerate(counts) if n <= self.n_special - self.n_unread), None)
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
        long = [
            i for i, n in enumerate(counts) if n > limit
        ]  # truncated: tokenised again, cut as encode cuts
        cut = await self.token_ids([texts[i] for i in long], limit + self.n_unread)
        for i, row in zip(long, cut, strict=True):
            ids[i] = row
        lengths = [len(row) - self.n_unread for row in ids]
        inputs = [Input(text, row) for text, row in zip(texts, ids, strict=True)]
        return await self.batcher.submit(inputs, lengths), sum(lengths)
