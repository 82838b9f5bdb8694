"""A Griffe extension: the API reference shows each public class as Python runs it, and checks
its docstrings.

Griffe reads the source without importing it (the compiled ``_core`` is read from its stub), so
it sees how a method is *written*; this extension shows what the drivers *make* of it:

- A ``@one_trip`` or ``@plan`` method (``redis_leaderboard._drive``) is written once, returning
  ``Sent[X]`` or ``Plan[X]``; a class deriving from ``SyncDriven`` gets a method returning ``X``
  and one deriving from ``AsyncDriven`` a coroutine method (``_drive._install`` at run time). So
  each such method, inherited ones included, becomes a member of the public class returning
  ``X``, labelled ``async`` on the asyncio classes.
- ``name = on_current(LeaderboardBase.name)`` (periodic boards) is the plain board's method run on
  the current period: shown as that method, its docstring pointing at the plain one's.
- ``__doc__ = other.__doc__`` in a class body gives the class ``other``'s docstring, as it does
  at run time.
- Parameters whose name starts with ``_`` (internal plumbing between the package's classes)
  are left out of signatures.

Checks (each a warning, so ``mkdocs build --strict`` fails):

- every public class, function, method and property reachable from ``redis_leaderboard.__all__``
  and ``redis_leaderboard.asyncio.__all__`` has a docstring;
- no docstring uses reStructuredText roles (``:class:`X```): cross-references are Markdown,
  ``[X][redis_leaderboard.X]``;
- every board method that talks to Redis (``@one_trip``, ``@plan``, forwarded) states its
  cost in a ``Redis cost:`` section, in the modules whose docstrings follow this style
  (``COST_CHECKED``).

``PENDING`` lists the objects whose docstrings are edited elsewhere and not yet fixed: their
problems are reported as information, and an entry that no longer has a problem is a warning
(so the list only shrinks).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

PACKAGE = "redis_leaderboard"
DRIVE = f"{PACKAGE}._drive"
# Modules whose board methods must state their Redis cost (a "Redis cost:" section).
COST_CHECKED = (
    f"{PACKAGE}.boards.plain",
    f"{PACKAGE}.boards.seasons",
    f"{PACKAGE}.boards.events",
    f"{PACKAGE}.boards.sharded",
    f"{PACKAGE}.boards.league",
    f"{PACKAGE}.boards.tournament",
)
ROLE = re.compile(r":(?:class|meth|func|attr|mod|exc|data|obj):`~?([^`]+)`")

# Objects (by their canonical path) whose docstrings live in files edited by others: what each
# still needs. Reported as information; the build fails once an entry is fixed (remove it).
PENDING: dict[str, str] = {}

logger = griffe.get_logger("griffe_driven")


def _decorator_kind(function: griffe.Function) -> str | None:
    for decorator in function.decorators:
        path = decorator.callable_path
        if path in (f"{DRIVE}.one_trip", f"{DRIVE}.plan"):
            return path.rsplit(".", 1)[1]
    return None


def _unwrapped(returns: Any) -> Any:
    """``Sent[X]``/``Plan[X]`` -> ``X``."""
    if isinstance(returns, griffe.ExprSubscript) and str(returns.left) in ("Sent", "Plan"):
        return returns.slice
    return returns


def _driven(cls: griffe.Class) -> str | None:
    for base in cls.mro():
        if base.path == f"{DRIVE}.SyncDriven":
            return "sync"
        if base.path == f"{DRIVE}.AsyncDriven":
            return "async"
    return None


def _copy(
    function: griffe.Function, cls: griffe.Class, loader: griffe.GriffeLoader, doc: str | None
) -> griffe.Function:
    """``function`` as the driven class ``cls`` has it."""
    copy = griffe.Function(
        function.name,
        lineno=function.lineno,
        endlineno=function.endlineno,
        parameters=griffe.Parameters(*function.parameters),
        returns=_unwrapped(function.returns),
        decorators=[],
    )
    copy.labels = set(function.labels)
    if _driven(cls) == "async":
        copy.labels.add("async")
    value = doc if doc is not None else (function.docstring.value if function.docstring else None)
    if value is not None:
        copy.docstring = griffe.Docstring(
            value,
            lineno=function.docstring.lineno if function.docstring else None,
            endlineno=function.docstring.endlineno if function.docstring else None,
            parent=copy,
            parser=loader.docstring_parser,
            parser_options=loader.docstring_options,
        )
    # Where the function was written (for its source and for the checks below).
    copy.extra["griffe_driven"] = {"written_in": function.path, "kind": _decorator_kind(function)}
    return copy


def _forwarded_target(attribute: griffe.Attribute) -> griffe.Function | None:
    """``on_current(LeaderboardBase.name)``: the function it forwards to."""
    value = attribute.value
    if isinstance(value, griffe.ExprCall) and str(value.function) == "on_current":
        target = value.arguments[0]
        resolved = attribute.parent.modules_collection.get_member(  # type: ignore[union-attr]
            _resolve(attribute, str(target))
        )
        if isinstance(resolved, griffe.Alias):
            resolved = resolved.final_target
        if isinstance(resolved, griffe.Function):
            return resolved
    return None


def _resolve(obj: griffe.Object, dotted: str) -> str:
    head, _, rest = dotted.partition(".")
    module = obj.module
    base = module.members[head]
    path = base.target_path if isinstance(base, griffe.Alias) else base.path
    return f"{path}.{rest}" if rest else path


class Driven(griffe.Extension):
    """See the module."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if pkg.name != PACKAGE:
            return
        classes = list(_classes(pkg))
        for cls in classes:
            for name in HIDDEN & set(cls.members):
                del cls.members[name]
            self._class_doc(cls)
            self._hide_private_parameters(cls)
        # Forwarded methods first (periodic boards), then what the drivers make.
        for cls in classes:
            for name, member in list(cls.members.items()):
                if isinstance(member, griffe.Attribute):
                    target = _forwarded_target(member)
                    if target is not None:
                        doc = (
                            f"[`RedisLeaderboard.{name}`][{PACKAGE}.RedisLeaderboard.{name}], "
                            "run on the current period's board: same parameters, result and "
                            "Redis cost."
                        )
                        copy = _copy(target, cls, loader, doc)
                        copy.extra["griffe_driven"]["kind"] = "forwarded"
                        cls.set_member(name, copy)
        for cls in classes:
            if _driven(cls) is None:
                continue
            for name, member in list(cls.all_members.items()):
                target = member.final_target if isinstance(member, griffe.Alias) else member
                if isinstance(target, griffe.Function):
                    marker = target.extra.get("griffe_driven", {})
                    if _decorator_kind(target) or marker.get("kind") == "forwarded":
                        copy = _copy(
                            target,
                            cls,
                            loader,
                            target.docstring.value if target.docstring else None,
                        )
                        if marker:
                            copy.extra["griffe_driven"] = dict(marker)
                        cls.set_member(name, copy)
        check(pkg)
        _roles_as_code(pkg)

    def _class_doc(self, cls: griffe.Class) -> None:
        attribute = cls.members.get("__doc__")
        if isinstance(attribute, griffe.Attribute) and cls.docstring is None:
            source = str(attribute.value)
            if source.endswith(".__doc__"):
                other = cls.modules_collection.get_member(_resolve(cls, source[: -len(".__doc__")]))
                if isinstance(other, griffe.Alias):
                    other = other.final_target
                if other.docstring is not None:
                    cls.docstring = griffe.Docstring(
                        other.docstring.value,
                        lineno=other.docstring.lineno,
                        endlineno=other.docstring.endlineno,
                        parent=cls,
                        parser=other.docstring.parser,
                        parser_options=other.docstring.parser_options,
                    )
            del cls.members["__doc__"]

    def _hide_private_parameters(self, cls: griffe.Class) -> None:
        init = cls.members.get("__init__")
        if isinstance(init, griffe.Function):
            kept = [p for p in init.parameters if not p.name.startswith("_")]
            if len(kept) != len(init.parameters):
                init.parameters = griffe.Parameters(*kept)


def _classes(module: griffe.Module | griffe.Class) -> Any:
    for member in module.members.values():
        if isinstance(member, griffe.Alias):
            continue
        if isinstance(member, griffe.Class):
            yield member
            yield from _classes(member)
        elif isinstance(member, griffe.Module):
            yield from _classes(member)


# Plumbing between the package's classes, not API: left out of the reference (and the checks).
HIDDEN = {
    "redis",
    "guards",
    "periods_of",
    "is_cluster",
}


def _public_names(pkg: griffe.Module) -> list[str]:
    names: list[str] = []
    for module in (pkg, pkg["asyncio"]):
        exported = module.members["__all__"].value
        for element in getattr(exported, "elements", []):
            names.append(f"{module.path}.{str(element).strip(chr(39) + chr(34))}")
    return names


def check(pkg: griffe.Module) -> None:
    """The checks of the module's docstring, on every public name of both APIs."""
    seen: set[str] = set()
    problems: dict[str, list[str]] = {}

    def problem(obj: Any, what: str) -> None:
        found = problems.setdefault(obj.path, [])
        if what not in found:
            found.append(what)

    def visit(obj: Any, public_path: str) -> None:
        if isinstance(obj, griffe.Alias):
            obj = obj.final_target
        key = f"{public_path}|{obj.path}"
        if key in seen:
            return
        seen.add(key)
        docstring = obj.docstring.value if obj.docstring else ""
        if not docstring.strip():
            problem(obj, "no docstring")
        elif ROLE.search(docstring):
            problem(obj, "reStructuredText roles: " + ", ".join(ROLE.findall(docstring)))
        marker = obj.extra.get("griffe_driven", {})
        if marker.get("kind") in ("one_trip", "plan", "forwarded"):
            written_in = marker["written_in"]
            if written_in.rsplit(".", 2)[0] in COST_CHECKED and marker["kind"] != "forwarded":
                if "Redis cost:" not in docstring:
                    problem(obj, f"no 'Redis cost:' section (written in {written_in})")
        if isinstance(obj, griffe.Class):
            for name, member in obj.all_members.items():
                if name.startswith("_") or name in HIDDEN:
                    continue
                target = member.final_target if isinstance(member, griffe.Alias) else member
                if isinstance(target, (griffe.Function, griffe.Attribute, griffe.Class)):
                    visit(target, f"{public_path}.{name}")

    for path in _public_names(pkg):
        name = path.rsplit(".", 1)[1]
        if name == "__version__":
            continue
        visit(pkg.modules_collection.get_member(path), path)
    for path, what in sorted(problems.items()):
        text = f"{path}: {'; '.join(what)}"
        if path in PENDING:
            logger.info("pending docstring fix: %s", text)
        else:
            logger.warning("docstring: %s", text)
    for path in sorted(set(PENDING) - set(problems)):
        logger.warning("PENDING lists %s, which has no problem now: remove it", path)


def _roles_as_code(obj: Any) -> None:
    """Shows the reStructuredText roles left in pending docstrings as code, not as markup."""
    if isinstance(obj, griffe.Alias):
        return
    if obj.docstring is not None and ROLE.search(obj.docstring.value):
        obj.docstring.value = ROLE.sub(r"`\1`", obj.docstring.value)
    for member in obj.members.values():
        _roles_as_code(member)
