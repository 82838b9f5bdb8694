"""``redis-leaderboard demo`` / ``python -m redis_leaderboard.demo``: options and main loop.

Which Redis the demo uses:

1. ``--embedded-redis``: a private ``redis-server`` child (see
   ``redis_leaderboard._redis_server``);
2. ``--redis-url``, else ``--redis-host``/``--redis-port``, else ``$REDIS_URL``: that Redis,
   which must answer (an error otherwise, never a silent fallback);
3. nothing configured: Redis on localhost:6379 if it answers, else a private ``redis-server``.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from typing import Any, Optional

from .. import AuthenticationError, Client, RedisError, RedisLeaderboard, ResponseError
from .._redis_server import RedisServer, RedisServerError
from .._redis_target import (
    DEFAULT_REDIS_HOST,
    DEFAULT_REDIS_PORT,
    MAX_MAX_ENTRIES,
    SOCKET_TIMEOUT,
    RedisTarget,
    add_redis_arguments,
    connect_configured,
    ping,
    port_number,
)
from .._redis_target import StartupError as DemoError
from .server import DemoApp, DemoServer

log = logging.getLogger("redis_leaderboard.demo")

PROBE_CONNECT_TIMEOUT = 1.0


def _max_entries(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= MAX_MAX_ENTRIES:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_MAX_ENTRIES:,}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The demo's options: the guide's, plus --redis-url, --key and --embedded-redis."""
    web = parser.add_argument_group("web server")
    web.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: %(default)s)"
    )
    web.add_argument(
        "--port",
        default=8080,
        type=port_number,
        help="port to listen on, 0 for any free port (default: %(default)s)",
    )
    web.add_argument("--quiet", action="store_true", help="do not log each request")
    redis, board = add_redis_arguments(parser)
    redis.add_argument(
        "--embedded-redis",
        action="store_true",
        help="start a private redis-server for the demo (the default when no Redis is "
        "configured and none answers on localhost:6379)",
    )
    board.add_argument(
        "--no-events",
        dest="events",
        action="store_false",
        help="do not record change events: the page polls every 2 s instead of receiving "
        "Server-Sent Events (events=True is recorded with the board; clients writing it must "
        "pass it too)",
    )
    board.add_argument(
        "--tz",
        default="UTC",
        help="the time zone of the Today and This week tabs, e.g. Europe/Amsterdam "
        "(default: %(default)s)",
    )
    board.add_argument(
        "--max-entries",
        metavar="N",
        default=100,
        type=_max_entries,
        help="how many players the board keeps (default: %(default)s)",
    )


def _start_embedded(reason: str, web_port: int) -> RedisTarget:
    try:
        # Never on the port the demo is about to listen on (free until then).
        embedded = RedisServer(dir_prefix="redis-leaderboard-demo-", avoid_ports=(web_port,))
    except RedisServerError as exc:
        raise DemoError(
            f"{reason}, and {exc} or point the demo at a running Redis with --redis-url"
        ) from None
    try:
        embedded.start()
    except RedisServerError as exc:
        raise DemoError(f"{reason}, but the private redis-server did not start: {exc}") from None
    log.info(
        "%s: started a private redis-server (pid %s) on %s:%s with its data in %s; "
        "it stops when the demo does.",
        reason[0].upper() + reason[1:],
        embedded.pid,
        embedded.host,
        embedded.port,
        embedded.dir,
    )
    client = Client(
        host=embedded.host,
        port=embedded.port,
        socket_timeout=SOCKET_TIMEOUT,
        socket_connect_timeout=SOCKET_TIMEOUT,
        client_name="redis-leaderboard-demo",
    )
    try:
        ping(client, embedded.url)
    except DemoError:
        embedded.cleanup()
        raise
    return RedisTarget(client, f"private redis-server at {embedded.url}", embedded)


def connect(
    args: argparse.Namespace,
    *,
    default_host: str = DEFAULT_REDIS_HOST,
    default_port: int = DEFAULT_REDIS_PORT,
) -> RedisTarget:
    """The Redis the options name (see the module's docstring), answering PING."""
    explicit_host = args.redis_host is not None or args.redis_port is not None
    if args.embedded_redis:
        if args.redis_url or explicit_host:
            raise DemoError(
                "--embedded-redis cannot be combined with --redis-url, --redis-host or --redis-port"
            )
        return _start_embedded("--embedded-redis was given", args.port)
    target = connect_configured(args, default_host=default_host, default_port=default_port)
    if target is not None:
        return target
    options: dict[str, Any] = {
        "socket_timeout": SOCKET_TIMEOUT,
        "socket_connect_timeout": SOCKET_TIMEOUT,
        "client_name": "redis-leaderboard-demo",
    }
    # Nothing configured: the guide's localhost:6379 if it answers, else a private server.
    client = Client(
        host=default_host,
        port=default_port,
        socket_timeout=SOCKET_TIMEOUT,
        socket_connect_timeout=PROBE_CONNECT_TIMEOUT,
        client_name="redis-leaderboard-demo",
    )
    try:
        client.ping()
    except (AuthenticationError, ResponseError) as exc:
        client.close()
        raise DemoError(
            f"Redis at {default_host}:{default_port} answers but refused PING ({exc}): pass "
            "--redis-url redis://:PASSWORD@localhost:6379/0, or --embedded-redis"
        ) from None
    except RedisError:
        client.close()
        return _start_embedded(
            f"no Redis configured and nothing answering on {default_host}:{default_port}",
            args.port,
        )
    client.close()
    client = Client(host=default_host, port=default_port, **options)
    return RedisTarget(client, f"redis://{default_host}:{default_port}/0")


def serve(server: DemoServer, embedded: Optional[RedisServer] = None) -> int:
    """Serve until SIGINT/SIGTERM/SIGHUP (or the private redis-server dies); 0 when asked to
    stop, 1 if the private server died."""
    stop = threading.Event()
    received: list[str] = []

    def on_signal(signum: int, _frame: object) -> None:
        received.append(signal.Signals(signum).name)
        stop.set()

    handled = [signal.SIGINT, signal.SIGTERM]
    if hasattr(signal, "SIGHUP"):
        handled.append(signal.SIGHUP)
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {sig: signal.signal(sig, on_signal) for sig in handled}
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="demo-http", daemon=True
    )
    thread.start()
    status = 0
    try:
        while not stop.wait(0.5):
            if embedded is not None and not embedded.running():
                log.error("The private redis-server exited unexpectedly; stopping the demo.")
                status = 1
                break
    finally:
        if received:
            log.info("Received %s; stopping.", received[0])
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return status


def run(args: argparse.Namespace) -> int:
    """Run the demo with parsed options; the process's exit status."""
    if not logging.getLogger().handlers:
        logging.basicConfig(
            level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S"
        )
    if args.quiet:
        logging.getLogger("redis_leaderboard.demo.access").setLevel(logging.WARNING)
    try:
        target = connect(args)
    except DemoError as exc:
        print(f"redis-leaderboard demo: error: {exc}", file=sys.stderr)
        return 1
    try:
        log.info("Redis: %s", target.description)
        board = RedisLeaderboard(
            target.client, key=args.key, max_entries=args.max_entries, events=args.events
        )
        try:
            app = DemoApp(board, tz=args.tz)
        except ValueError as exc:  # an unknown --tz
            raise DemoError(f"--tz: {exc}") from None
        try:
            if app.seed_if_empty():
                log.info("Board %r was empty: added the guide's six sample players.", args.key)
            else:
                log.info("Board %r has %d players.", args.key, board.get_size())
        except RedisError as exc:
            raise DemoError(f"cannot use the board {args.key!r}: {exc}") from None
        try:
            server = DemoServer((args.host, args.port), app)
        except OSError as exc:
            raise DemoError(
                f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}; "
                "choose another --port"
            ) from None
        log.info("Demo running at %s (Ctrl+C to stop)", server.url)
        status = serve(server, target.embedded)
        log.info("Demo stopped.")
        return status
    except DemoError as exc:
        print(f"redis-leaderboard demo: error: {exc}", file=sys.stderr)
        return 1
    finally:
        target.close()


def build_parser(prog: Optional[str] = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Run the leaderboard demo web page (the redis.io guide's demo server).",
    )
    add_arguments(parser)
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m redis_leaderboard.demo``."""
    args = build_parser("python -m redis_leaderboard.demo").parse_args(argv)
    return run(args)
