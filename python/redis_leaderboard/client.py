"""The blocking ``Client``: the compiled client, with URLs read in Python."""

from __future__ import annotations

from typing import Any, Iterable, Optional, TypeVar

from ._core import Client as CoreClient
from .options import constructor_signature, sentinel_options, url_options

__all__ = ["Client"]

_Self = TypeVar("_Self", bound="Client")


class Client(CoreClient):
    __doc__ = CoreClient.__doc__
    # The options are the compiled constructor's (its one option table); inspect.signature and
    # help() read them here.
    __signature__ = constructor_signature("Client")

    @classmethod
    def from_url(cls: type[_Self], url: str, **overrides: Any) -> _Self:
        """A client for ``redis://[[user]:password@]host[:port][/db][?key=value...]``,
        ``rediss://...`` (TLS), ``unix://[[user]:password@]/path[?db=N...]`` or
        ``redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/service_name[/db]``
        (see ``redis_leaderboard.options.parse_url``); keyword arguments (any of the
        constructor's) that are not None win over the URL's."""
        return cls(**url_options(url, **overrides))

    @classmethod
    def from_sentinel(
        cls: type[_Self],
        sentinels: Iterable[tuple[str, int]],
        service_name: str = "mymaster",
        *,
        sentinel_username: Optional[str] = None,
        sentinel_password: Optional[str] = None,
        sentinel_ssl: bool = False,
        **client_options: Any,
    ) -> _Self:
        """A client of the primary that ``sentinels`` name ``service_name``.

        The sentinels are asked (in turn, each within the client's timeouts, else 2 s) before
        every new connection, so a reconnection after a failover finds the new primary; the
        client also listens for Sentinel's ``+switch-master``, and a ``READONLY`` reply (the
        server became a replica) closes the connection so the next call asks again. A write
        whose reply was lost raises ``ConnectionError`` and is never resent, unless it carries
        a ``submission_id`` (resent at most ``retries`` times); a read may be retried once on
        a fresh connection within its timeout; calls not yet sent go to the new primary.
        ``sentinel_username``/``sentinel_password`` are the sentinels' credentials
        (``username``/``password`` the data nodes');
        ``sentinel_ssl=True`` talks TLS to the sentinels with the ``ssl_*`` settings.
        ``client_options`` are the constructor's (``password``, ``db``, ``ssl``, timeouts...).
        """
        return cls(
            **sentinel_options(
                sentinels,
                service_name,
                sentinel_username,
                sentinel_password,
                sentinel_ssl,
                client_options,
            )
        )
