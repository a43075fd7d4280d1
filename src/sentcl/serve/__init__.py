"""``sentcl serve``: an HTTP embedding and semantic-search service (FastAPI + uvicorn, the ``serve`` extra).

``app.create_app`` builds the application around ``service.Service`` (the state every route reads) and any
encoder with ``.encode(list[str], batch_size=..., max_length=..., normalize=...)``, ``.tokenizer``,
``.max_length`` and ``.embedding_dim`` (the PyTorch SentenceEncoder, or another backend with the same
interface); ``batching`` gathers concurrent requests into one ``encode`` call; ``limits``, ``auth``, ``hosts``
(the Host allow-list), ``text`` (input checks and the character budget) and ``metrics`` are the service's
guards and counters; ``protocol`` is uvicorn's h11 protocol with read deadlines and a connection cap;
``server`` binds the socket, listens and runs uvicorn on it. docs/serving.md describes the whole.
"""
