"""The URL parser (redis_leaderboard.options.parse_url) under atheris, a coverage-guided fuzzer
for Python: any text either raises ValueError or gives options that the C++ core (the asyncio
client's keyword options, checked by ``_core.ConnectionCore`` without connecting) accepts or
refuses with ValueError (options that do not go together, text that is not valid Unicode);
anything else (TypeError, another exception, a hang) is a finding.

    python cpp/fuzz/fuzz_url.py [libFuzzer flags] CORPUS_DIR...   # atheris importable
    python cpp/fuzz/fuzz_url.py --seeds OUT_DIR                    # the seeds: the tests' URLs

Run by .ci/fuzz, with the package installed (its _core) and atheris on PYTHONPATH.
"""

from __future__ import annotations

import ast
import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCHEMES = ("redis://", "rediss://", "unix://", "redis+sentinel://", "rediss+sentinel://")


def write_seeds(out: Path) -> None:
    """Every URL literal of the tests and the docs' examples, one file each."""
    urls = set()
    for path in sorted((ROOT / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value.lower().startswith(SCHEMES):
                    urls.add(node.value)
    out.mkdir(parents=True, exist_ok=True)
    for url in urls:
        data = url.encode("utf-8", "surrogatepass")
        (out / f"seed-{hashlib.sha1(data).hexdigest()}").write_bytes(data)
    print(f"url: {len(urls)} seeds", file=sys.stderr)


def main() -> None:
    if sys.argv[1:2] == ["--seeds"]:
        write_seeds(Path(sys.argv[2]))
        return
    import atheris

    with atheris.instrument_imports():
        from redis_leaderboard import _core, options

    def one(data: bytes) -> None:
        url = data.decode("utf-8", "surrogateescape")
        try:
            parsed = options.url_options(url)
        except ValueError:
            return
        try:
            _core.ConnectionCore(**parsed)
        except ValueError:
            return  # options that do not go together (ssl_keyfile without ssl_certfile...)
        except TypeError as exc:
            raise AssertionError(f"parse_url gave {url!r} options the core cannot take") from exc

    atheris.Setup(sys.argv, one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
