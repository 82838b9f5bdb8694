"""Log records of what the clients saw: connections lost and re-established, failovers
followed, cluster topology changes and redirects, scripts reloaded after NOSCRIPT, requests sent
again, timeouts.

The C++ core observes them (``connection/observer.hpp``) on whichever thread meets them, and
queues a record; a thread of this module (one per process, started by the bindings at the end
of the first call after the first record: a process whose clients meet no fault has none)
waits on the core's pipe and logs them through :mod:`logging`, so that no thread of a client
ever takes the GIL to log. A record carries an address, a script's name or an error's text:
never a key, a user id, a score or a credential. Each has ``record.redis_leaderboard_event``
(``"connection_lost"``, ...).

The loggers are ``redis_leaderboard.connection`` (connection_lost, reconnected, timeout),
``redis_leaderboard.failover``, ``redis_leaderboard.cluster`` (topology_change, moved, ask),
``redis_leaderboard.scripts`` (script_reload) and ``redis_leaderboard.retries`` (resend,
read_retry). ``redis_leaderboard`` has a ``NullHandler``: nothing is printed unless the
application configures logging.
"""

from __future__ import annotations

import logging
import os
import select
import threading
from typing import Optional

from ._core import records_fd, take_records

__all__ = ["EVENTS", "flush", "start"]

logging.getLogger("redis_leaderboard").addHandler(logging.NullHandler())

# event: (logger, level, message with the record's detail as %s)
EVENTS: dict[str, tuple[str, int, str]] = {
    "connection_lost": ("connection", logging.WARNING, "connection lost: %s"),
    "reconnected": ("connection", logging.INFO, "connection re-established to %s"),
    "timeout": ("connection", logging.WARNING, "timeout %s"),
    "failover": ("failover", logging.WARNING, "failover followed: %s"),
    "topology_change": ("cluster", logging.INFO, "cluster topology changed: %s"),
    "moved": ("cluster", logging.DEBUG, "MOVED followed: %s"),
    "ask": ("cluster", logging.DEBUG, "ASK followed: %s"),
    "script_reload": ("scripts", logging.INFO, "script %s loaded again after NOSCRIPT"),
    "resend": (
        "retries",
        logging.WARNING,
        "resent after its reply was lost (its submission id keeps it from applying twice): %s",
    ),
    "read_retry": ("retries", logging.INFO, "read sent again after its reply was lost: %s"),
}
_loggers = {name: logging.getLogger(f"redis_leaderboard.{name}") for name, _, _ in EVENTS.values()}

_lock = threading.Lock()  # one thread logs at a time: records keep their order
_started: Optional[int] = None  # the pid the pump thread runs in


def flush() -> None:
    """Logs the records waiting now, on this thread (tests, and before a metrics export)."""
    with _lock:
        records, dropped = take_records()
        for event, detail in records:
            logger_name, level, message = EVENTS[event]
            logger = _loggers[logger_name]
            if logger.isEnabledFor(level):
                logger.log(level, message, detail, extra={"redis_leaderboard_event": event})
        if dropped:
            _loggers["connection"].warning(
                "%d log records dropped (more than 1,024 waited)",
                dropped,
                extra={"redis_leaderboard_event": "dropped"},
            )


def _pump(fd: int) -> None:
    while True:
        try:
            select.select([fd], [], [])
        except (OSError, ValueError):  # the pipe is gone (a forked child made its own)
            return
        try:
            flush()
        except Exception:
            pass


def start() -> None:
    """Starts the pump thread, once per process (the bindings call this once records wait)."""
    global _started
    if _started == os.getpid():
        return
    with _lock:
        if _started == os.getpid():
            return
        fd = records_fd()
        threading.Thread(
            target=_pump, args=(fd,), name="redis-leaderboard-logs", daemon=True
        ).start()
        _started = os.getpid()


def _after_fork_in_child() -> None:
    # The core gave the child records of its own (no pipe, no queue: pthread_atfork); the
    # parent's pump thread is not in the child, which starts its own as any process does.
    global _started, _lock
    _lock = threading.Lock()
    _started = None


os.register_at_fork(after_in_child=_after_fork_in_child)
