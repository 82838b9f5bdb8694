"""MkDocs hooks for the docs site.

- The recorded benchmark results (``benchmarks/results``: tables and the chart) are pages of the
  site, read from where the benchmarks write them (no copy in ``docs/``).
- Every name of ``redis_leaderboard.__all__`` and ``redis_leaderboard.asyncio.__all__`` must be
  documented by a ``::: name`` block of the reference (or be listed in ``ALIASES`` as another
  documented name under a second name); a missing one is a warning, so the strict build fails.
"""

from __future__ import annotations

import ast
import logging
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "redis_leaderboard"
RESULTS = "benchmarks/results"
log = logging.getLogger("mkdocs.hooks.docs")
DIRECTIVE = re.compile(r"^::: ([\w.]+)\s*$", re.MULTILINE)
# Public names that are another documented name: name -> the name documented.
ALIASES = {
    "redis_leaderboard.AsyncRedisLeaderboard": "redis_leaderboard.asyncio.RedisLeaderboard",
}

documented: set[str] = set()


def _exported(module: Path, dotted: str) -> list[str]:
    tree = ast.parse(module.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            return [f"{dotted}.{ast.literal_eval(element)}" for element in node.value.elts]  # type: ignore[attr-defined]
    raise ValueError(f"{module} has no __all__")


def on_files(files: Files, config: Any) -> Files:
    for path in sorted((ROOT / RESULTS).iterdir()):
        if path.suffix in (".md", ".png"):
            files.append(
                File(
                    f"{RESULTS}/{path.name}",
                    src_dir=str(ROOT),
                    dest_dir=config["site_dir"],
                    use_directory_urls=config["use_directory_urls"],
                )
            )
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    documented.update(DIRECTIVE.findall(markdown))
    return markdown


def on_post_build(config: Any) -> None:
    public = _exported(PACKAGE / "__init__.py", "redis_leaderboard")
    public += _exported(PACKAGE / "asyncio.py", "redis_leaderboard.asyncio")
    missing = []
    for name in public:
        shown = ALIASES.get(name, name)
        if shown not in documented:
            missing.append(name)
    if missing:
        log.warning("the API reference does not document: %s", ", ".join(missing))
    else:
        log.info("the API reference documents all %d public names", len(public))
