"""The blocking :class:`Client`: the compiled client, with URLs read in Python."""

from __future__ import annotations

from typing import Optional, TypeVar

from . import _core
from .options import url_options

__all__ = ["Client"]

_Self = TypeVar("_Self", bound="Client")


class Client(_core.Client):
    __doc__ = _core.Client.__doc__

    @classmethod
    def from_url(
        cls: type[_Self],
        url: str,
        *,
        socket_timeout: Optional[float] = None,
        socket_connect_timeout: Optional[float] = None,
        client_name: Optional[str] = None,
        max_reply_bytes: Optional[int] = None,
    ) -> _Self:
        """A client for ``redis://[[user]:password@]host[:port][/db][?key=value...]`` or
        ``unix://[[user]:password@]/path[?db=N...]`` (see
        :func:`redis_leaderboard.options.parse_url`); the keyword arguments given win over the
        URL's. ``rediss://`` raises ``ValueError`` (TLS is not supported yet)."""
        return cls(
            **url_options(
                url,
                socket_timeout=socket_timeout,
                socket_connect_timeout=socket_connect_timeout,
                client_name=client_name,
                max_reply_bytes=max_reply_bytes,
            )
        )
