"""``sentcl serve``: an HTTP embedding and semantic-search service with a web page (the ``serve`` extra)."""

from __future__ import annotations

import argparse
import logging
import os

from sentcl.cli.option_rules import declare as declare_rules
from sentcl.cli.option_rules import excludes, needs
from sentcl.cli.options import add_model_options, load_model, positive_int
from sentcl.extras import missing_extra_message
from sentcl.files.kinds import (
    duration,
    model_name,
    name_value,
    names_value,
    read_index_location,
    secret,
    secret_file,
)
from sentcl.files.slots import declare
from sentcl.serve.server import KEEP_ALIVE_S, bind, fit_connections, listen, serve_on, url_of

logger = logging.getLogger("sentcl")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="Serve embeddings over HTTP (/embed, /v1/embeddings, /search, a web page at /).",
        description="Serve a model over HTTP: text-embeddings-inference's /embed and /similarity, OpenAI's "
        "/v1/embeddings, /search over an index (built by 'sentcl index build', or the cache of 'sentcl search "
        "--index'), /metrics, and a page at /.",
    )
    p.add_argument(
        "model_path", type=model_name, nargs="?", metavar="MODEL", help="The model (or give --model)."
    )
    add_model_options(p, model_required=False)
    p.add_argument(
        "--index",
        type=read_index_location,
        help="For /search: an index built by 'sentcl index build' (a faiss folder, searched at its tuned setting, "
        "texts read from the encoded input; or a store, --store: a folder or s3://bucket/prefix, served at the "
        "version it holds until POST /index/reload) or the cache saved by 'sentcl search --index'.",
    )
    p.add_argument(
        "--allow-model-mismatch",
        action="store_true",
        help="Serve an index built by 'sentcl index build' with a model, pooler, max length or truncation "
        "other than its own (refused by default).",
    )
    add_network_options(p)
    for action in p._actions:  # the shared --batch-size, with the service's meaning and default
        if action.dest == "batch_size":
            action.default = 16
            action.help = (
                "Sentences per forward pass at most (default 16): waiting sentences are sorted by length and "
                "cut into passes that pad little (--max-batch-tokens, docs/performance.md, 'Serving')."
            )
    p.add_argument(
        "--max-batch-size",
        type=positive_int,
        default=128,
        help="Sentences per encode call at most (default 128; a call is one pass of at most --batch-size).",
    )
    p.add_argument(
        "--workers",
        type=positive_int,
        help="Encode threads, each running its own passes on --threads / --workers PyTorch threads "
        "(default: one per thread, so that no pass waits on another thread of its own).",
    )
    p.add_argument(
        "--max-client-batch", type=positive_int, default=32, help="Inputs per request (413 above)."
    )
    p.add_argument(
        "--max-batch-tokens",
        type=positive_int,
        default=4096,
        help="Padded cells per pass at most: sentences × the longest one's tokens (default 4096).",
    )
    p.add_argument(
        "--max-wait-ms", type=duration, default=5.0, help="How long a request waits for others to batch with."
    )
    p.add_argument(
        "--max-queue", type=positive_int, default=1024, help="Sentences waiting to be encoded (429 above)."
    )
    p.add_argument("--max-body-bytes", type=positive_int, default=2_000_000, help="Request body cap (413).")
    p.add_argument("--max-k", type=positive_int, default=100, help="Hits per search query at most.")
    p.add_argument(
        "--auto-truncate",
        action="store_true",
        help="Truncate inputs over the model's length when the request does not say (else 422).",
    )
    p.add_argument(
        "--keep-malloc-threshold",
        action="store_true",
        help="Leave glibc's allocator as it is (default: free memory is returned to the system once a second, "
        "so that resident memory follows the batches in flight; docs/performance.md, 'Serving').",
    )
    p.add_argument(
        "--release-budget-mb",
        type=positive_int,
        default=None,
        metavar="MB",
        help="Also return free memory to the system as soon as resident memory has grown by this much since "
        "the last return: a tighter bound on memory, at some throughput (default: once a second only).",
    )
    p.set_defaults(func=handle)
    declare_serve_rules(p)


def declare_serve_rules(p: argparse.ArgumentParser) -> None:
    """``serve``'s options that contradict each other (``sentcl.cli.option_rules``)."""
    declare_rules(
        p,
        excludes(
            "--release-budget-mb",
            "--keep-malloc-threshold",
            "the budget paces the allocator's release of free memory, which --keep-malloc-threshold turns off",
        ),
        excludes("--api-key", "--api-key-file", "the service takes one key"),
        needs(
            "--allow-model-mismatch", "--index", why="it lets /search use an index built by another encoder"
        ),
    )


@declare("port")
def port_number(text: str) -> int:
    """argparse type: a TCP port, 0 to 65535 (the OS would take 70000 as 70000 mod 65536 = 4464)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number 0-65535, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0-65535 (0 picks a free one), got {value}")
    return value


def add_network_options(p: argparse.ArgumentParser) -> None:
    """Where the service listens, who may call it, and how long a client may take."""
    p.add_argument(
        "--host",
        type=name_value,
        default="127.0.0.1",
        help="Address to bind (default 127.0.0.1: this machine only).",
    )
    p.add_argument(
        "--port", type=port_number, default=8080, help="Port 0-65535 (default 8080; 0 picks a free one)."
    )
    p.add_argument(
        "--api-key",
        type=secret,
        help="Require 'Authorization: Bearer KEY' on every route but / and /health. Prefer $SENTCL_API_KEY "
        "or --api-key-file: a key on the command line is visible to every local user (ps).",
    )
    p.add_argument(
        "--api-key-file",
        type=secret_file,
        help="Read the API key from this file (its one line; default: $SENTCL_API_KEY).",
    )
    p.add_argument(
        "--allowed-hosts",
        type=names_value,
        action="append",
        default=[],
        metavar="NAME",
        help="Also answer requests whose Host header is NAME (repeat, or separate with commas; '*.example.com' "
        "for its subdomains, '*' for any). Always answered: the bound address, localhost, 127.0.0.1, [::1]; "
        "other names are refused (400), against DNS rebinding.",
    )
    p.add_argument(
        "--header-timeout",
        type=duration,
        default=10.0,
        help="Seconds a client has to send a request's headers (408 and disconnected after; default 10).",
    )
    p.add_argument(
        "--body-timeout",
        type=duration,
        default=60.0,
        help="Seconds a client has to send a request's body once its headers are in (default 60).",
    )
    p.add_argument(
        "--keep-alive-timeout",
        type=positive_int,
        default=KEEP_ALIVE_S,
        help=f"Seconds an idle kept-alive connection stays open (default {KEEP_ALIVE_S}: longer than clients' "
        "pools keep an idle connection, so the client closes first and no request meets a closing connection; "
        "behind a load balancer, more than its idle timeout).",
    )
    p.add_argument(
        "--max-connections",
        type=positive_int,
        default=1000,
        help="Open connections at most; one more is answered 503 and closed (default 1000).",
    )
    p.add_argument(
        "--threads",
        type=positive_int,
        help="PyTorch threads for encoding (default: PyTorch's, which follows $OMP_NUM_THREADS).",
    )


def api_key_from(args: argparse.Namespace) -> str | None:
    from sentcl.serve.auth import resolve_api_key

    if args.api_key:
        logger.warning(
            "--api-key puts the key in the process list, readable by every local user: "
            "prefer $SENTCL_API_KEY or --api-key-file"
        )
    key = resolve_api_key(args.api_key, args.api_key_file)
    if args.api_key_file is not None and args.api_key_file.stat().st_mode & 0o077:
        logger.warning("--api-key-file %s is readable by other users: chmod 600 it", args.api_key_file)
    return key


def encode_threads(args: argparse.Namespace) -> tuple[int, int]:
    """``(threads, workers)``: ``--threads`` (default $OMP_NUM_THREADS, else the CPUs this process may use)
    and ``--workers`` (default one per thread)."""
    threads = args.threads or int(os.environ.get("OMP_NUM_THREADS", "0") or 0) or len(os.sched_getaffinity(0))
    return threads, args.workers or threads


def handle(args: argparse.Namespace) -> int:
    try:
        import uvicorn  # noqa: F401 - the extra's check

        from sentcl.serve.app import create_app
        from sentcl.serve.hosts import HostPolicy
        from sentcl.serve.index import load_search_index
        from sentcl.serve.limits import Limits
        from sentcl.serve.protocol import guarded_protocol
    except ImportError as err:
        raise ValueError(missing_extra_message(err.name or "fastapi") or str(err)) from err
    if args.model_path and args.model and args.model_path != args.model:
        raise ValueError(f"two models given: {args.model_path} and --model {args.model}")
    args.model = args.model or args.model_path
    if not args.model:
        raise ValueError("no model: give MODEL or --model")
    if args.max_wait_ms < 0:
        raise ValueError(f"--max-wait-ms must be >= 0, got {args.max_wait_ms}")
    threads, workers = encode_threads(args)
    limits = Limits(
        workers=workers,
        max_client_batch=args.max_client_batch,
        max_batch_size=args.max_batch_size,
        encode_batch_size=args.batch_size,
        max_batch_tokens=args.max_batch_tokens,
        max_wait_ms=args.max_wait_ms or 1e-3,
        max_queue=args.max_queue,
        max_body_bytes=args.max_body_bytes,
        max_k=args.max_k,
        auto_truncate=args.auto_truncate,
    )
    api_key = api_key_from(args)
    hosts = HostPolicy(args.host, [h for item in args.allowed_hosts for h in item.split(",")])
    connections = fit_connections(args.max_connections)
    protocol = guarded_protocol(args.header_timeout, args.body_timeout, connections)
    sock = bind(args.host, args.port)  # before loading anything: a busy port fails at once
    try:
        logger.info("bound %s; loading %s", url_of(sock), args.model)
        import torch

        torch.set_num_threads(max(1, threads // workers))  # each worker's share
        release = None
        if not args.keep_malloc_threshold:
            from sentcl.training.allocator import PeriodicRelease

            # passes of varied shapes: free pages go back once a second (and once the resident set has grown
            # by --release-budget-mb since the last release, where given)
            budget = args.release_budget_mb * 2**20 if args.release_budget_mb else None
            release = PeriodicRelease(1.0, budget_bytes=budget).maybe
        if args.index and args.truncate_dim is None:  # the index's own truncation, as search applies it
            from sentcl.index.reader import index_truncate_dim

            args.truncate_dim = index_truncate_dim(args.index)
        encoder = load_model(args)
        index = (
            load_search_index(args.index, encoder, args.model, args.max_length, args.allow_model_mismatch)
            if args.index
            else None
        )
        app = create_app(
            encoder,
            model_name=args.model,
            index=index,
            limits=limits,
            max_length=args.max_length,
            api_key=api_key,
            backend=None if getattr(args, "model_backend", "auto") == "auto" else args.model_backend,
            hosts=hosts,
            after_pass=release,
        )
        if args.host not in ("127.0.0.1", "localhost", "::1"):
            logger.warning("serving on %s: reachable from other machines", args.host)
        logger.info("serving %s on %s (Ctrl-C stops)", args.model, url_of(sock))
        config = {
            "http": protocol,
            "timeout_keep_alive": args.keep_alive_timeout,
            "log_level": "warning" if not args.verbose else "info",
            "log_config": None,  # uvicorn's lines go through sentcl's log handler (files.shown)
        }
        listen(sock, args.host)
        serve_on(app, sock, config)
    finally:
        sock.close()
    return 0
