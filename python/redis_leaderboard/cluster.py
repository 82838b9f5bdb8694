"""Redis Cluster clients: ``ClusterClient`` (blocking) and ``AsyncClusterClient``
(asyncio, exported as ``redis_leaderboard.asyncio.ClusterClient``).

Both route each request by its keys' hash slot (CRC16 of the key's hash tag), learn the slot map
with ``CLUSTER SHARDS`` (``CLUSTER SLOTS`` on Redis 6.2), follow ``MOVED`` (updating the map) and
``ASK`` (``ASKING``), wait out ``TRYAGAIN``/``CLUSTERDOWN`` and a failover within the request's
timeout, and never send again a request whose reply was lost.
"""

from __future__ import annotations

import asyncio
import atexit
import inspect
import weakref
from typing import Any, Callable, Iterable, Optional, TypeVar

from ._core import AsyncClusterCore, Operation
from ._core import ClusterClient as CoreClusterClient
from ._core import ping as ping_operation
from ._types import AsyncRun
from .options import (
    _boolean,
    _host_and_port,
    constructor_signature,
    parse_url,
    require_hash_tag,
    takes_options_of,
)

__all__ = ["AsyncClusterClient", "ClusterClient", "cluster_url_options", "require_hash_tag"]

_Self = TypeVar("_Self", bound="ClusterClient")
T = TypeVar("T")
# startup_nodes, then the cluster options of the compiled clients' option table.
_SIGNATURE = constructor_signature(
    "ClusterClient",
    inspect.Parameter(
        "startup_nodes",
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        annotation="Iterable[tuple[str, int]]",
    ),
)


def cluster_url_options(url: str, **overrides: Any) -> dict[str, Any]:
    """The cluster client's keyword arguments for
    ``redis://[[user]:password@]host:port[,host:port...]?cluster=true[&read_from_replicas=true]``
    (``rediss://`` for TLS), with each of ``overrides`` that is not None. Every host named is a
    startup node; the other query keys are those of ``redis_leaderboard.options.parse_url``
    (``db`` must be 0: a cluster has no other)."""
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, not {type(url).__name__}")
    scheme, separator, rest = url.partition("://")
    if scheme.lower() not in ("redis", "rediss") or not separator:
        raise ValueError("a cluster URL starts with redis:// or rediss://")
    rest, _, query = rest.partition("?")
    kept: list[str] = []
    cluster: Optional[bool] = None
    read_from_replicas: Optional[bool] = None
    for pair in query.split("&") if query else ():
        key, _, value = pair.partition("=")
        if key == "cluster":
            cluster = _boolean(value)
        elif key == "read_from_replicas":
            read_from_replicas = _boolean(value)
        elif pair:
            kept.append(pair)
    if cluster is False:
        raise ValueError("Redis URL: ?cluster=false is not a cluster; use Client.from_url")
    userinfo, at, hostpart = rest.rpartition("@")
    hosts, slash, path = hostpart.partition("/")
    names = [name for name in hosts.split(",")]
    if not names or not all(names):
        raise ValueError("Redis URL: a cluster URL names host:port[,host:port...]")
    single = f"{scheme}://{userinfo}{at}{names[0]}{slash}{path}"
    if kept:
        single += "?" + "&".join(kept)
    options = parse_url(single)
    if options.db != 0:
        raise ValueError("Redis URL: Redis Cluster has database 0 only")
    out: dict[str, Any] = {
        name: value for name, value in options.cluster_kwargs().items() if value is not None
    }
    startup: list[tuple[str, int]] = []
    for name in names:
        parsed = _host_and_port(name)
        startup.append((parsed["host"], parsed.get("port", 6379)))
    out["startup_nodes"] = startup
    if read_from_replicas is not None:
        out["read_from_replicas"] = read_from_replicas
    out.update((name, value) for name, value in overrides.items() if value is not None)
    return out


class ClusterClient(CoreClusterClient):
    """A blocking Redis Cluster client, safe to share between threads.

    ``ClusterClient(startup_nodes=[(host, port), ...], **options)``: any node of the cluster
    will do (the others are learnt from it). ``options``: ``username``, ``password``,
    ``socket_timeout``, ``socket_connect_timeout``, ``client_name``, ``max_reply_bytes``, the
    ``ssl_*`` arguments of ``redis_leaderboard.Client`` (the same for every node), and
    ``read_from_replicas=True`` to send the requests that only read to a replica of their
    shard (``READONLY``; a replica may lag its primary by a few milliseconds).

    One connection pool per node; every request goes to the node serving its keys' slot. A
    request waits for its slot's owner (``TRYAGAIN`` during a migration, ``CLUSTERDOWN``, a
    failover under way, a node it cannot connect to) at most ``socket_timeout`` seconds from
    the call (10 s without one), then raises ``TimeoutError``. A write whose connection
    dropped after it was sent raises ``ConnectionError`` and is never sent again (it may have
    been applied), unless it carries an idempotency key (a ``submission_id``): then it is sent
    again, to the node serving its slot then, at most ``retries`` times, and raises
    ``ConnectionError`` after the last attempt. A read may be retried once on a fresh
    connection within its timeout.
    """

    is_cluster = True
    __signature__ = _SIGNATURE

    @classmethod
    def from_url(cls: type[_Self], url: str, **overrides: Any) -> _Self:
        """A client for ``redis://[[user]:password@]host:port[,host:port...]?cluster=true``
        (``rediss://`` for TLS; ``&read_from_replicas=true``); keyword arguments that are not
        None win over the URL's."""
        return cls(**cluster_url_options(url, **overrides))


_open_clients: weakref.WeakSet[AsyncClusterClient] = weakref.WeakSet()


class AsyncClusterClient:
    """The asyncio Redis Cluster client: the options and behaviour of ``ClusterClient``,
    each call a future. Driven by the event loop, as the one-node asyncio client (no I/O
    thread): a call is routed by its keys' hash slot when it is made, and the calls of a turn
    of the loop go in one pipelined write per node, every node at once. A client is bound to
    the event loop it is first used on."""

    is_cluster = True
    __signature__ = _SIGNATURE

    @takes_options_of(AsyncClusterCore, _SIGNATURE)
    def __init__(self, *args: Any, **options: Any) -> None:
        """``AsyncClusterClient(startup_nodes=[(host, port), ...], **options)``, the options
        of ``ClusterClient``."""
        self._core = AsyncClusterCore(*args, **options)
        _open_clients.add(self)

    @classmethod
    def from_url(cls, url: str, **overrides: Any) -> AsyncClusterClient:
        """As ``ClusterClient.from_url``."""
        return cls(**cluster_url_options(url, **overrides))

    def dedicated(self) -> AsyncClusterClient:
        """A new client with this one's options (its own connections), for calls that hold a
        connection, as reading events does."""
        client = AsyncClusterClient.__new__(AsyncClusterClient)
        client._core = self._core.dedicated()
        _open_clients.add(client)
        return client

    @property
    def run(self) -> AsyncRun:
        """``run(operation)``: submit a ``redis_leaderboard._core.Board`` operation; await
        the result (the C++ core's own method)."""
        return self._core.run

    def run_many(self, operations: Iterable[Operation[Any]]) -> list[asyncio.Future[Any]]:
        """Submit operations together (the calls of one turn of the loop: one pipelined write
        per node, every node at once); one future each."""
        run = self._core.run
        return [run(operation) for operation in operations]

    def run_pipelined(
        self,
        operations: Iterable[Operation[Any]],
        on_result: Callable[[Any], object],
        window: int = 4,
    ) -> asyncio.Future[None]:
        """As ``redis_leaderboard.asyncio.Client.run_pipelined``: up to ``window`` operations
        in flight, ``on_result`` getting each result in order; the first error is raised once
        the operations in flight are done."""
        return self._core.run_pipelined(operations, on_result, window, asyncio.get_running_loop())

    async def ping(self) -> bool:
        """PING a node."""
        result: bool = await self.run(ping_operation())
        return result

    def shards(self) -> list[dict[str, Any]]:
        """The slot map, as ``ClusterClient.shards`` (blocking if it was not read yet)."""
        return self._core.shards()

    def refresh(self) -> None:
        """Read the slot map again now (blocking)."""
        self._core.refresh()

    def stats(self) -> dict[str, int]:
        """As the sync client's, with ``calls``, ``redirects`` and ``retries``."""
        return self._core.stats()

    async def aclose(self) -> None:
        """Close every node's connection; unfinished calls fail with ``ConnectionError``."""
        self.close()

    def close(self) -> None:
        """Close every node's connection; calls in flight fail with ``ConnectionError``."""
        self._core.close()

    async def __aenter__(self) -> AsyncClusterClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"redis_leaderboard.asyncio.ClusterClient({self._core.address()})"


@atexit.register
def _close_open_clients() -> None:
    for client in list(_open_clients):
        try:
            client._core.close()
        except Exception:
            pass  # best effort at exit
