"""Every example of README.md and of the docs site (docs/pages) runs, against real servers.

Each page's fenced ``python`` blocks run in order, in one namespace per page (a page is one
story: a later block uses what an earlier one made), statement by statement, on a private
redis-server started here. The examples are written for a Redis on localhost:6379; the test
points them at its own server by rewriting that address (``localhost:6379`` and
``port=6379``) and sets ``$REDIS_URL``, so no example ever reaches the machine's own Redis (a
block still naming 6379 after the rewrite fails the test).

Shown output is checked: a top-level statement followed by a comment ``# -> value`` (on its
last line, or on the next line, continued by comment lines indented after the ``#``) must
produce a value whose ``repr`` matches, ``...`` standing for anything (doctest's ELLIPSIS,
whitespace normalised). Output that depends on the clock or on timing is shown in plain
comments instead.

A block that needs another deployment says so in an HTML comment on the line before its fence:

- ``<!-- docs-test: cluster -->``, ``<!-- docs-test: tls -->``, ``<!-- docs-test: sentinel -->``:
  run against the test suite's launcher for it (``redis_cluster``, ``tls_redis_server``,
  ``sentinel_topology``), its addresses, passwords and certificate paths substituted for the
  example's (``SUBSTITUTIONS``);
- ``<!-- docs-test: not-run -->``: cannot run here; it must be listed in ``NOT_RUN`` below with
  the reason, and every entry of ``NOT_RUN`` must match such a block (so none is skipped
  silently, and the list cannot go stale).
"""

from __future__ import annotations

import ast
import doctest
import inspect
import re
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import DATA_PASSWORD, SENTINEL_PASSWORD, RedisServer, Runner

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "pages").rglob("*.md"))]
FENCE = re.compile(r"^```(\w*)\s*$")
MARKER = re.compile(r"^<!--\s*docs-test:\s*([\w-]+)\s*-->\s*$")
KINDS = {"cluster", "tls", "sentinel", "not-run"}
# Seconds a page may take before the test fails it (an example that waits for ever).
PAGE_TIMEOUT = 120

# Blocks marked not-run: (page, the block's first line) -> why it cannot run here.
NOT_RUN: dict[tuple[str, str], str] = {
    (
        "docs/pages/deployment/tls.md",
        "# Redis Cloud (public CA: nothing to configure)",
    ): "hosted services' addresses: no such server is reachable from the tests",
}


@dataclass
class Block:
    page: str
    line: int  # 1-based line of the first code line in the page
    code: str
    kind: str = "redis"  # the deployment it runs against


@dataclass
class Page:
    path: Path
    blocks: list[Block] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path.relative_to(ROOT).as_posix()


def read_page(path: Path) -> Page:
    page = Page(path)
    lines = path.read_text(encoding="utf-8").split("\n")
    index = 0
    while index < len(lines):
        match = FENCE.match(lines[index])
        if match and match.group(1):
            language = match.group(1)
            end = index + 1
            while end < len(lines) and lines[end].rstrip() != "```":
                end += 1
            assert end < len(lines), f"{page.name}:{index + 1}: unclosed code fence"
            marker = MARKER.match(lines[index - 1]) if index else None
            if language == "python":
                kind = marker.group(1) if marker else "redis"
                assert marker is None or kind in KINDS, (
                    f"{page.name}:{index}: unknown docs-test marker {kind!r}"
                )
                code = "\n".join(lines[index + 1 : end])
                page.blocks.append(Block(page.name, index + 2, code, kind))
            else:
                assert not marker, f"{page.name}:{index}: a docs-test marker on a {language} block"
            index = end + 1
        else:
            assert not MARKER.match(lines[index]) or (
                index + 1 < len(lines) and FENCE.match(lines[index + 1])
            ), f"{page.name}:{index + 1}: a docs-test marker must come right before a fence"
            index += 1
    return page


ALL_PAGES = [read_page(path) for path in PAGES]


def first_line(block: Block) -> str:
    return block.code.strip().split("\n", 1)[0]


# --- expected output -----------------------------------------------------------------------------


TRACEBACK = "# Traceback (most recent call last):"


def expected_outputs(code: str) -> dict[int, str]:
    """``# -> value`` comments: the 1-based line each starts on -> the value shown. A statement
    that raises shows ``# Traceback (most recent call last):`` on the next line, then
    ``# ExceptionName: message``: that line -> ``"raises ExceptionName: message"``."""
    lines = code.split("\n")
    found: dict[int, str] = {}
    number = 0
    while number < len(lines):
        text = lines[number]
        position = text.find("# -> ")
        if text.strip() == TRACEBACK:
            assert number + 1 < len(lines), "a traceback comment with no exception line"
            found[number + 1] = "raises " + lines[number + 1].strip()[1:].strip()
            number += 2
        elif position >= 0 and not _in_string(text, position):
            shown = [text[position + 5 :].strip()]
            follow = number + 1
            while follow < len(lines) and re.match(r"^\s*#\s{2,}\S", lines[follow]):
                shown.append(lines[follow].strip()[1:].strip())
                follow += 1
            found[number + 1] = " ".join(shown)
            number = follow
        else:
            number += 1
    return found


def _in_string(text: str, position: int) -> bool:
    return text[:position].count('"') % 2 == 1 or text[:position].count("'") % 2 == 1


CHECKER = doctest.OutputChecker()
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def check_output(where: str, shown: str, value: Any) -> None:
    got = repr(value)
    assert CHECKER.check_output(shown + "\n", got + "\n", FLAGS), (
        f"{where}: the page shows {shown}\n but the example gives {got}"
    )


# --- running -------------------------------------------------------------------------------------


class PageTimeout(Exception):
    pass


def run_block(block: Block, code: str, namespace: dict[str, Any], runner: Runner) -> None:
    tree = ast.parse(code, filename=block.page)
    shown = expected_outputs(code)
    owners: dict[int, ast.stmt] = {}
    lines = code.split("\n")
    ends = {(statement.end_lineno or statement.lineno): statement for statement in tree.body}
    for line in shown:
        own_line = lines[line - 1].lstrip().startswith("#")  # else trailing its statement
        statement = ends.get(line - 1 if own_line else line)
        if statement is not None:
            owners[line] = statement
    assert set(owners) == set(shown), (
        f"{block.page}:{block.line}: '# -> ' on lines {sorted(set(shown) - set(owners))} "
        "follows no statement"
    )
    checked = {id(statement): shown[line] for line, statement in owners.items()}
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    filename = f"{block.page}:{block.line}"
    for statement in tree.body:
        where = f"{block.page}:{block.line + statement.lineno - 1}"
        expected = checked.get(id(statement))
        if expected is not None and expected.startswith("raises "):
            name, _, message = expected[len("raises ") :].partition(": ")
            module = ast.Module(body=[statement], type_ignores=[])
            compiled = compile(module, filename, "exec", flags=flags)
            with pytest.raises(Exception) as raised:
                _run(compiled, namespace, runner)
            assert type(raised.value).__name__ == name, f"{where}: raised {raised.value!r}"
            assert CHECKER.check_output(message + "\n", str(raised.value) + "\n", FLAGS), (
                f"{where}: the page shows {message!r}, the example raised {str(raised.value)!r}"
            )
        elif expected is not None:
            assert isinstance(statement, ast.Expr), f"{where}: '# -> ' after a non-expression"
            compiled = compile(ast.Expression(statement.value), filename, "eval", flags=flags)
            value = _run(compiled, namespace, runner)
            check_output(where, expected, value)
        else:
            module = ast.Module(body=[statement], type_ignores=[])
            compiled = compile(module, filename, "exec", flags=flags)
            _run(compiled, namespace, runner)


def _run(compiled: Any, namespace: dict[str, Any], runner: Runner) -> Any:
    if compiled.co_flags & inspect.CO_COROUTINE:
        return runner.run(eval(compiled, namespace))
    return eval(compiled, namespace)


@pytest.fixture(scope="module")
def docs_server() -> Iterator[RedisServer]:
    """The examples' own server: each page starts from an empty one."""
    server = RedisServer()
    yield server
    server.cleanup()


Substitute = Callable[[str], str]


def substitutions(kind: str, request: pytest.FixtureRequest, server: RedisServer) -> Substitute:
    """How a block of ``kind`` is pointed at the test's deployment of that kind."""
    if kind == "redis":
        pairs = [
            ("localhost:6379", f"127.0.0.1:{server.port}"),
            ("port=6379", f"port={server.port}"),
        ]
    elif kind == "cluster":
        cluster = request.getfixturevalue("redis_cluster")
        nodes = cluster.startup_nodes
        pairs = [
            ('[("10.0.0.1", 6379), ("10.0.0.2", 6379)]', repr(nodes[:2])),
            (
                "10.0.0.1:6379,10.0.0.2:6379",
                f"{nodes[0][0]}:{nodes[0][1]},{nodes[1][0]}:{nodes[1][1]}",
            ),
        ]
    elif kind == "tls":
        tls = request.getfixturevalue("tls_redis_server")
        certificates = request.getfixturevalue("certificates")
        pairs = [
            ('host="redis.internal", port=6380', f'host="localhost", port={tls.tls_port}'),
            ("/etc/redis/ca.pem", certificates.ca),
            ("/etc/redis/client.crt", certificates.client_cert),
            ("/etc/redis/client.key", certificates.client_key),
        ]
    elif kind == "sentinel":
        topology = request.getfixturevalue("sentinel_topology")
        addresses = topology.addresses
        pairs = [
            (
                '[("10.0.0.1", 26379), ("10.0.0.2", 26379), ("10.0.0.3", 26379)]',
                repr(addresses),
            ),
            ("10.0.0.1,10.0.0.2,10.0.0.3", ",".join(f"{h}:{p}" for h, p in addresses)),
            ('"sentinel-pass"', repr(SENTINEL_PASSWORD)),
            ('"data-pass"', repr(DATA_PASSWORD)),
        ]
    else:
        raise AssertionError(kind)

    def apply(code: str) -> str:
        for old, new in pairs:
            code = code.replace(old, new)
        return code

    return apply


def test_not_run_list_matches_the_pages() -> None:
    marked = {
        (block.page, first_line(block))
        for page in ALL_PAGES
        for block in page.blocks
        if block.kind == "not-run"
    }
    assert marked == set(NOT_RUN), (
        f"marked not-run but not listed: {sorted(marked - set(NOT_RUN))}; "
        f"listed but not marked: {sorted(set(NOT_RUN) - marked)}"
    )


def test_every_page_has_been_read() -> None:
    """The pages found are the site's and README; the count of examples, for the record."""
    names = {page.name for page in ALL_PAGES}
    assert "README.md" in names and "docs/pages/getting-started.md" in names
    run = sum(1 for page in ALL_PAGES for block in page.blocks if block.kind != "not-run")
    assert run >= 30, f"only {run} examples run"


@pytest.mark.parametrize(
    "page", [page for page in ALL_PAGES if page.blocks], ids=lambda page: page.name
)
def test_examples_run(
    page: Page,
    docs_server: RedisServer,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    with docs_server.redis_py() as r:
        r.flushall()
    monkeypatch.setenv("REDIS_URL", f"redis://127.0.0.1:{docs_server.port}/0")
    monkeypatch.chdir(tmp_path)  # an example writing a file writes it here
    namespace: dict[str, Any] = {"__name__": "__docs__"}

    def timeout(signum: int, frame: Any) -> None:
        raise PageTimeout(f"{page.name} took more than {PAGE_TIMEOUT} s")

    previous = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(PAGE_TIMEOUT)
    try:
        with Runner() as runner:
            for block in page.blocks:
                if block.kind == "not-run":
                    continue
                code = substitutions(block.kind, request, docs_server)(block.code)
                if block.kind == "redis":
                    assert "6379" not in code, (
                        f"{block.page}:{block.line}: names port 6379 after the rewrite"
                    )
                    # A client made with no address connects to localhost:6379 (the
                    # machine's own Redis), which no rewrite can redirect.
                    assert not re.search(r"\bClient\(\s*\)", code), (
                        f"{block.page}:{block.line}: Client() with no address; write "
                        'Client(host="localhost", port=6379)'
                    )
                run_block(block, code, namespace, runner)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        for value in list(namespace.values()):
            close = getattr(value, "close", None)
            if close is not None and type(value).__module__.startswith("redis_leaderboard"):
                try:
                    close()
                except Exception:
                    pass


def test_readme_links_resolve() -> None:
    """README's relative links (into docs/pages, the benchmarks) name files that exist, and
    their #anchors headings of those pages (the docs build checks the site's own links)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    relative = [link for link in links if "://" not in link and not link.startswith("#")]
    assert len(relative) >= 20
    for link in relative:
        path, _, anchor = link.partition("#")
        target = ROOT / path
        assert target.exists(), f"README links to {link}, which does not exist"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", target.read_text(encoding="utf-8"), re.MULTILINE)
            slugs = {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in headings}
            assert anchor in slugs, f"README links to {link}: no such heading"
