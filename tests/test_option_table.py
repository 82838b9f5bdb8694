"""Client options are declared once: one table in the compiled module (``_core.option_table()``,
``cpp/bindings/conversions.cpp``) that every client constructor reads its arguments through. What
cannot be generated from it at run time, because type checkers read it, mirrors it and is checked
here: the :class:`ClientOptions`/:class:`AsyncClientOptions` dataclasses (names, order, defaults),
the stub's constructors and ``_*Options`` TypedDicts (names, positions, defaults, types), and the
signatures ``help()`` shows. A new option added to one and not the others fails here. None of
these tests needs a server: the clients connect on their first call, not when they are made."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import ssl
from pathlib import Path
from typing import Any

import pytest
from mypy import api as mypy_api

import redis_leaderboard
from redis_leaderboard import _core
from redis_leaderboard import asyncio as rl_asyncio
from redis_leaderboard.cluster import AsyncClusterClient, ClusterClient
from redis_leaderboard.options import OPTION_TABLE, AsyncClientOptions, ClientOptions

STUB = Path(_core.__file__).with_name("_core.pyi")
NODES = [("127.0.0.1", 1)]  # never connected to: the clients connect on their first call

# Where the stub's type differs from the dataclass field's on purpose: the constructors take any
# iterable of (host, port) pairs; the frozen dataclass keeps a tuple.
STUB_TYPES = {"sentinels": "Optional[Iterable[tuple[str, int]]]"}


def options_of(client: str) -> list[Any]:
    return [option for option in OPTION_TABLE if client in option.clients]


def field_types() -> dict[str, Any]:
    return {field.name: field.type for field in dataclasses.fields(AsyncClientOptions)}


# --- the dataclasses ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dataclass", "client"), [(ClientOptions, "Client"), (AsyncClientOptions, "AsyncCore")]
)
def test_the_dataclasses_are_the_option_table(dataclass: Any, client: str) -> None:
    fields = [(field.name, repr(field.default)) for field in dataclasses.fields(dataclass)]
    table = [(option.name, repr(option.default)) for option in options_of(client)]
    assert fields == table


def test_the_cluster_clients_take_the_table_s_cluster_options() -> None:
    cluster = [option.name for option in options_of("ClusterClient")]
    # Every ClientOptions field the table gives the cluster clients, and one of their own.
    assert [*ClientOptions().cluster_kwargs(), "read_from_replicas"] == cluster
    assert [o.name for o in OPTION_TABLE if not o.clients] == []


# --- the stub ------------------------------------------------------------------------------------


def stub_classes() -> dict[str, ast.ClassDef]:
    tree = ast.parse(STUB.read_text())
    return {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}


def typed_dict_keys(classes: dict[str, ast.ClassDef], name: str) -> dict[str, str]:
    """A stub TypedDict's keys (its bases' first) and their annotations, as written."""
    keys: dict[str, str] = {}
    for base in classes[name].bases:
        if isinstance(base, ast.Name) and base.id in classes:
            keys.update(typed_dict_keys(classes, base.id))
    for item in classes[name].body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            keys[item.target.id] = ast.unparse(item.annotation)
    return keys


def stub_constructor(name: str) -> list[tuple[str, str, str, Any]]:
    """``(name, "positional"|"keyword", annotation, default)`` for each option a stub
    constructor takes, its ``**options: Unpack[...]`` TypedDict's keys included."""
    classes = stub_classes()
    init = next(
        item
        for item in classes[name].body
        if isinstance(item, ast.FunctionDef) and item.name == "__init__"
    )
    args = init.args
    defaults = [None] * (len(args.args) - len(args.defaults)) + list(args.defaults)
    out = []
    for arg, default in zip(args.args[1:], defaults[1:]):
        value = ast.literal_eval(default) if default is not None else inspect.Parameter.empty
        out.append((arg.arg, "positional", ast.unparse(arg.annotation), value))
    assert not args.kwonlyargs, "keyword-only options belong in the TypedDict"
    assert args.kwarg is not None
    unpacked = args.kwarg.annotation
    assert isinstance(unpacked, ast.Subscript) and ast.unparse(unpacked.value) == "Unpack"
    assert isinstance(unpacked.slice, ast.Name)
    for key, annotation in typed_dict_keys(classes, unpacked.slice.id).items():
        out.append((key, "keyword", annotation, inspect.Parameter.empty))
    return out


@pytest.mark.parametrize(
    ("stub_class", "client", "leading"),
    [
        ("Client", "Client", []),
        ("AsyncCore", "AsyncCore", []),
        ("ClusterClient", "ClusterClient", ["startup_nodes"]),
        ("AsyncClusterCore", "ClusterClient", ["startup_nodes"]),
    ],
)
def test_the_stub_is_the_option_table(stub_class: str, client: str, leading: list[str]) -> None:
    stub = stub_constructor(stub_class)
    assert [name for name, *_ in stub[: len(leading)]] == leading
    stub = stub[len(leading) :]
    by_position = client != "ClusterClient"
    table = options_of(client)
    # The same names, the positional ones in the table's order and with its defaults.
    assert sorted(name for name, *_ in stub) == sorted(option.name for option in table)
    positional = [(name, default) for name, kind, _, default in stub if kind == "positional"]
    expected = [(o.name, o.default) for o in table if o.positional and by_position]
    assert positional == expected
    # The types of the dataclass fields (read_from_replicas: the cluster clients' own).
    types = {**field_types(), **STUB_TYPES, "read_from_replicas": "bool"}
    assert {name: annotation for name, _, annotation, _ in stub} == {
        option.name: types[option.name] for option in table
    }


# --- what users see: signatures, help() ----------------------------------------------------------

PUBLIC: list[tuple[Any, str, list[str]]] = [
    (redis_leaderboard.Client, "Client", []),
    (rl_asyncio.Client, "AsyncCore", []),
    (ClusterClient, "ClusterClient", ["startup_nodes"]),
    (AsyncClusterClient, "ClusterClient", ["startup_nodes"]),
]


@pytest.mark.parametrize(("cls", "client", "leading"), PUBLIC)
def test_the_signatures_are_the_option_table(cls: Any, client: str, leading: list[str]) -> None:
    by_position = client != "ClusterClient"
    parameters = list(inspect.signature(cls).parameters.values())
    assert [p.name for p in parameters[: len(leading)]] == leading
    shown = [(p.name, p.kind, repr(p.default)) for p in parameters[len(leading) :]]
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    keyword = inspect.Parameter.KEYWORD_ONLY
    assert shown == [
        (o.name, positional if o.positional and by_position else keyword, repr(o.default))
        for o in options_of(client)
    ]
    if "__init__" in vars(cls):  # a Python __init__ forwarding to the core: it shows them too
        assert list(inspect.signature(cls.__init__).parameters)[1:] == [p.name for p in parameters]


@pytest.mark.parametrize(
    ("core", "client"),
    [
        (_core.Client, "Client"),
        (_core.AsyncCore, "AsyncCore"),
        (_core.ClusterClient, "ClusterClient"),
        (_core.AsyncClusterCore, "ClusterClient"),
    ],
)
def test_the_compiled_docstrings_show_the_option_table(core: Any, client: str) -> None:
    first = core.__init__.__doc__.splitlines()[0]
    assert first.startswith("__init__(self, ")
    shown = re.findall(r"(\w+)=([^,)]*)", first)
    assert shown == [(o.name, repr(o.default)) for o in options_of(client)]


# --- what the constructors take ------------------------------------------------------------------


def make(cls: Any, leading: list[str], **options: Any) -> Any:
    return cls(NODES, **options) if leading else cls(**options)


@pytest.mark.parametrize(("cls", "client", "leading"), PUBLIC)
def test_each_constructor_takes_its_options_and_refuses_the_others(
    cls: Any, client: str, leading: list[str]
) -> None:
    make(cls, leading, **{o.name: o.default for o in options_of(client)}).close()
    name = "ClusterClient" if leading else "Client"
    for option in OPTION_TABLE:
        if client not in option.clients:
            with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword "):
                make(cls, leading, **{option.name: option.default})
    misspelt = "sockt_timeout"
    with pytest.raises(TypeError) as error:
        make(cls, leading, **{misspelt: 1.0})
    assert str(error.value) == (
        f"{name}() got an unexpected keyword argument 'sockt_timeout' "
        "(did you mean 'socket_timeout'?)"
    )


def test_the_dataclasses_are_the_clients_keyword_arguments() -> None:
    redis_leaderboard.Client(**ClientOptions().kwargs()).close()
    rl_asyncio.Client(**AsyncClientOptions().kwargs()).close()
    ClusterClient(NODES, **ClientOptions().cluster_kwargs()).close()
    AsyncClusterClient(NODES, **ClientOptions().cluster_kwargs()).close()


@pytest.mark.parametrize("cls", [redis_leaderboard.Client, rl_asyncio.Client])
def test_positional_options(cls: Any) -> None:
    positional = [o.name for o in options_of("Client") if o.positional]
    assert positional == [
        "host",
        "port",
        "db",
        "username",
        "password",
        "socket_timeout",
        "socket_connect_timeout",
        "client_name",
        "unix_socket_path",
    ]
    client = cls("h", 1, 2, "u", "p", 1.0, 2.0, "n", None)
    assert "h:1" in repr(client)
    client.close()
    with pytest.raises(TypeError, match=r"^Client\(\) takes at most 9 positional arguments"):
        cls("h", 1, 2, "u", "p", 1.0, 2.0, "n", None, 1024)
    with pytest.raises(TypeError, match=r"^Client\(\) got multiple values for argument 'host'$"):
        cls("h", host="h")


# A bad value of each kind the table reads: (option, value, exception, message).
BAD_VALUES = [
    ("host", 5, TypeError, "host must be a str, not int"),
    ("host", "", ValueError, "host must not be empty"),
    # A NUL in any text option: C would read "h\0x" as host "h", another server.
    ("host", "h\x00x", ValueError, "host must not contain a NUL character"),
    ("unix_socket_path", "/tmp/s\x00", ValueError, "unix_socket_path must not contain a NUL"),
    ("password", "p\x00w", ValueError, "password must not contain a NUL character"),
    ("client_name", "n\x00", ValueError, "client_name must not contain a NUL character"),
    ("ssl_ca_certs", "/ca\x00", ValueError, "ssl_ca_certs must not contain a NUL character"),
    ("ssl_ciphers", "A\x00B", ValueError, "ssl_ciphers must not contain a NUL character"),
    ("port", "6379", TypeError, "port must be an int, not str"),
    ("port", 1.5, TypeError, "port must be an int, not float"),
    ("port", 70000, ValueError, "port must be between 1 and 65535"),
    ("db", -1, ValueError, "db must not be negative"),
    ("username", 1, TypeError, "username must be a str or None, not int"),
    ("socket_timeout", "1", TypeError, "socket_timeout must be a number or None, not str"),
    ("socket_timeout", -1, ValueError, "timeouts must be positive numbers of seconds or None"),
    ("max_reply_bytes", -1, TypeError, "max_reply_bytes must be an int >= 0 or None, not -1"),
    ("max_reply_bytes", 10, ValueError, "max_reply_bytes must be at least 1024"),
    ("ssl", "yes", TypeError, "ssl must be a bool, not str"),
    ("ssl_cert_reqs", "bad", ValueError, "ssl_cert_reqs must be 'required', 'optional' or"),
    ("ssl_cert_reqs", 1.0, TypeError, "ssl_cert_reqs must be a str or an ssl.VerifyMode"),
    ("ssl_min_version", "TLSv1.1", ValueError, "ssl_min_version must be TLSv1.2 or TLSv1.3"),
    ("ssl_keyfile", "/k", ValueError, "ssl_keyfile needs ssl_certfile"),
    ("sentinels", "h:26379", TypeError, "sentinels must be (host, port) pairs, not str"),
    ("sentinels", [("h", "x")], TypeError, "sentinels must be (host, port) pairs, not ('h', 'x')"),
    ("sentinels", [], ValueError, "sentinels must name at least one sentinel"),
    ("sentinels", [("h", 1)], ValueError, "sentinels need a service_name"),
    ("service_name", "s", ValueError, "service_name needs sentinels"),
    ("client_cache", 1, TypeError, "client_cache must be a bool, not int"),
    # Checked whether the cache is on or not, by both clients (the asyncio one once took any).
    ("client_cache_size", "x", TypeError, "client_cache_size must be an int, not str"),
    ("client_cache_max_bytes", 0, ValueError, "client_cache_max_bytes must be at least 1"),
    ("max_in_flight", 1.0, TypeError, "max_in_flight must be an int >= 0, not float"),
    ("max_pending", -1, TypeError, "max_pending must be an int >= 0, not -1"),
    ("read_from_replicas", "no", TypeError, "read_from_replicas must be a bool, not str"),
]


@pytest.mark.parametrize(("option", "value", "exception", "message"), BAD_VALUES)
def test_a_bad_value_is_an_error_naming_the_option(
    option: str, value: Any, exception: type[Exception], message: str
) -> None:
    clients = next(o.clients for o in OPTION_TABLE if o.name == option)
    tried = 0
    for cls, client, leading in PUBLIC:
        if client in clients:
            with pytest.raises(exception) as error:
                make(cls, leading, **{option: value})
            assert type(error.value) is exception
            assert str(error.value).startswith(message)
            tried += 1
    assert tried


def test_good_values_of_other_types_are_taken_as_before() -> None:
    # What pybind11's typed parameters took, the table takes: bytes for str, an int for a bool
    # or a float, ssl's enums, any iterable of (host, port) pairs.
    for cls in (redis_leaderboard.Client, rl_asyncio.Client):
        for options in [
            {"password": b"secret", "socket_timeout": 2, "ssl": 1},
            {
                "ssl": True,
                "ssl_cert_reqs": ssl.CERT_NONE,
                "ssl_min_version": ssl.TLSVersion.TLSv1_3,
            },
            {"ssl": None, "ssl_cert_reqs": None},
            {"sentinels": iter([("127.0.0.1", 1), ["127.0.0.1", 2]]), "service_name": "s"},
        ]:
            cls(**options).close()
    ClusterClient(iter(NODES), ssl_check_hostname=0).close()


# --- what type checkers see ----------------------------------------------------------------------

# A user's code: every line marked "# error" must be a mypy --strict error, and no other.
USER_CODE = """
import redis_leaderboard
import redis_leaderboard.asyncio as aio
from redis_leaderboard import ClusterClient

redis_leaderboard.Client("h", 1, 0, "u", "p", 1.0, 2.0, "n", None, ssl=True)
aio.Client("h", 1, ssl_ca_certs="x", max_in_flight=3, client_cache_size=5)
ClusterClient([("h", 1)], username="u", read_from_replicas=True)
aio.ClusterClient([("h", 1)], socket_timeout=1.0, ssl_cert_reqs="none")
redis_leaderboard.Client(hots="h")  # error
aio.Client(max_in_flght=3)  # error
ClusterClient([("h", 1)], db=1)  # error: no database but 0 on a cluster
aio.ClusterClient([("h", 1)], read_from_replica=True)  # error
aio.Client(ssl_ciphers=1)  # error
redis_leaderboard.Client(max_in_flight=3)  # error: the asyncio client's only
"""


def test_mypy_catches_a_misspelt_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = tmp_path / "user.py"
    user.write_text(USER_CODE)
    package = Path(redis_leaderboard.__file__).parent.parent
    if "site-packages" not in package.parts:  # a source tree on PYTHONPATH, not installed
        monkeypatch.setenv("MYPYPATH", str(package))
    out, err, status = mypy_api.run(
        ["--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(user)]
    )
    errors = {int(line.split(":")[1]) for line in out.splitlines() if ": error:" in line}
    expected = {n for n, line in enumerate(USER_CODE.splitlines(), 1) if "# error" in line}
    assert errors == expected, out + err
    assert status == 1
    assert 'Unexpected keyword argument "hots" for "Client"' in out
    assert 'Unexpected keyword argument "max_in_flght" for "Client"' in out
