"""cpp/leaderboard/scripts/generate.py, the build step that turns the Lua scripts into C++: how
a script's body is put together, and that a broken helper file or script stops the build with
the file and the reason."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "cpp" / "leaderboard" / "scripts"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate", SCRIPTS / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["generate"] = module
    spec.loader.exec_module(module)
    return module


generate = _load()

LIB = """\
-- A file comment: no helper's.

-- The width.
local WIDTH = 16

-- Twice x.
local function double(x)
  return x * 2
end

-- Twice double, and WIDTH.
local function quadruple(x)
  return double(double(x)) + WIDTH
end

local function unused()
  return 1
end
"""


def test_helpers_are_read_with_their_comments_and_uses() -> None:
    helpers = generate.parse_lib(LIB)
    assert [h.name for h in helpers] == ["WIDTH", "double", "quadruple", "unused"]
    assert helpers[0].text == "-- The width.\nlocal WIDTH = 16\n"
    assert helpers[2].uses == ["WIDTH", "double"]
    assert "file comment" not in "".join(h.text for h in helpers)


def test_a_script_carries_only_the_helpers_it_uses_transitively_in_file_order() -> None:
    helpers = generate.parse_lib(LIB)
    script = generate.build_script("demo", "#!lua flags=no-writes\nreturn quadruple(1)\n", helpers)
    body = script.body
    assert body.startswith("#!lua flags=no-writes\n-- The width.\nlocal WIDTH = 16\n")
    assert body.index("local function double") < body.index("local function quadruple")
    assert "unused" not in body
    assert body.endswith("return quadruple(1)\n")
    assert script.sha1 == hashlib.sha1(body.encode()).hexdigest()


def test_the_options_path_builds_its_own_helpers_after_the_guides_path() -> None:
    helpers = generate.parse_lib(LIB)
    text = (
        "#!lua\n-- demo: a test.\nif x then return double(1) end\n"
        "-- @options: boards with options\nreturn quadruple(2)\n"
    )
    body = generate.build_script("demo", text, helpers).body
    guide_return = body.index("return double(1)")
    # double is the guide path's, built once before it; quadruple (and WIDTH) only after it.
    assert body.index("local function double") < guide_return
    assert body.count("local function double") == 1
    assert guide_return < body.index("local WIDTH") < body.index("local function quadruple")


@pytest.mark.parametrize(
    ("lib", "message"),
    [
        ("x = 1\n", "_lib.lua:1: not a `local function`"),
        ("local function f()\n  return 1\n", 'local function f has no "end" line'),
        ("local function f()\n  return g()\nend\nlocal function g()\nend\n", "f uses g"),
        ("local A = 1\nlocal A = 2\n", "defined twice: A"),
    ],
)
def test_a_broken_helper_file_is_refused_naming_why(lib: str, message: str) -> None:
    with pytest.raises(generate.GenerateError, match=message.replace("(", r"\(")):
        generate.parse_lib(lib, "_lib.lua")


def _modules(folder: Path, **texts: str) -> Path:
    (folder / "lib").mkdir()
    for name, text in texts.items():
        (folder / "lib" / f"{name}.lua").write_text(text)
    return folder / "lib"


def test_modules_come_after_those_they_require_and_a_script_takes_helpers_across_them(
    tmp_path: Path,
) -> None:
    lib = _modules(
        tmp_path,
        # Named so that file order is not the order they must come in.
        a_sums="--: REQUIRES z_base\nlocal function twice(x)\n  return one(x) * 2\nend\n",
        z_base="local function one(x)\n  return x\nend\n",
    )
    helpers = generate.parse_modules(lib)
    assert [(h.module, h.name, h.uses) for h in helpers] == [
        ("z_base", "one", []),
        ("a_sums", "twice", ["one"]),
    ]
    script = generate.build_script("demo", "#!lua\nreturn twice(1)\n", helpers)
    assert script.body.index("local function one") < script.body.index("local function twice")


@pytest.mark.parametrize(
    ("texts", "message"),
    [
        (  # a helper of a module not required
            {"a": "local function f()\n  return g()\nend\n", "b": "local function g()\nend\n"},
            "lib/a.lua: f uses g of b, which its module does not require",
        ),
        (  # a requirement that names no module
            {"a": "--: REQUIRES nowhere\nlocal X = 1\n"},
            "lib/a.lua: requires nowhere, not a module of lib/",
        ),
        (  # a requirement the module does not use: the line must be true
            {"a": "--: REQUIRES b\nlocal X = 1\n", "b": "local Y = 2\n"},
            "lib/a.lua: requires b but uses none of it",
        ),
        (  # a cycle
            {
                "a": "--: REQUIRES b\nlocal function f()\n  return g\nend\n",
                "b": "--: REQUIRES a\nlocal function g()\n  return f\nend\n",
            },
            "modules require each other: a -> b -> a",
        ),
        (  # one name in two modules
            {"a": "local X = 1\n", "b": "local X = 2\n"},
            "lib: defined twice: X",
        ),
        (  # REQUIRES after a helper
            {"a": "local X = 1\n--: REQUIRES b\n", "b": "local Y = 2\n"},
            "lib/a.lua:2: REQUIRES belongs in the opening comment",
        ),
    ],
)
def test_a_broken_module_is_refused_naming_why(
    tmp_path: Path, texts: dict[str, str], message: str
) -> None:
    with pytest.raises(generate.GenerateError, match=re.escape(message)):
        generate.parse_modules(_modules(tmp_path, **texts))


def test_a_script_without_its_flags_line_is_refused() -> None:
    with pytest.raises(generate.GenerateError, match="must start with a #!lua line"):
        generate.build_script("demo", "return 1\n", [])


def test_the_real_scripts_each_get_a_registry_entry_and_their_body(tmp_path: Path) -> None:
    assert generate.main(["generate.py", str(SCRIPTS), str(tmp_path)]) == 0
    names = sorted(p.stem for p in SCRIPTS.glob("*.lua"))
    header = (tmp_path / "leaderboard" / "scripts.hpp").read_text()
    source = (tmp_path / "scripts.cpp").read_text()
    for name in names:
        assert f"extern const Script {name};" in header
        assert f'extern const Script {name}{{"{name}", R"lua(#!lua' in source
    # Nothing is rewritten when nothing changed (nothing recompiles for nothing).
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}
    os.utime(tmp_path / "scripts.cpp", ns=(1, 1))
    assert generate.main(["generate.py", str(SCRIPTS), str(tmp_path)]) == 0
    assert (tmp_path / "scripts.cpp").stat().st_mtime_ns == 1
    assert set(before) == {p for p in tmp_path.rglob("*") if p.is_file()}


def test_a_failed_build_says_which_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.lua").write_text("return 1\n")
    assert generate.main(["generate.py", str(tmp_path), str(tmp_path / "out")]) == 1
    assert "bad.lua must start with a #!lua line" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def run_cpp(main: Path, generated: Path, *sources: Path) -> list[str]:
    """The lines a C++ program prints, compiled (-Wall -Wextra -Werror) against the project's
    headers and the generated ones."""
    root = Path(__file__).resolve().parents[1]
    binary = main.with_suffix("")
    subprocess.run(
        ["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", f"-I{root / 'cpp'}",
         f"-I{generated}", str(main), *map(str, sources), "-o", str(binary)],
        check=True,
    )  # fmt: skip
    return subprocess.run(
        [str(binary)], check=True, capture_output=True, text=True
    ).stdout.splitlines()


def generated(tmp_path: Path, **scripts: str) -> Path:
    """The generator's output for the scripts given (name=text), in a folder of its own."""
    folder = tmp_path / "scripts"
    folder.mkdir()
    for name, text in scripts.items():
        (folder / f"{name}.lua").write_text(text)
    out = tmp_path / "out"
    assert generate.main(["generate.py", str(folder), str(out)]) == 0
    return out


DEMO = """\
#!lua
-- demo: a script of two calls.
--: KEYS board: the board
--: ARGV period: the period
--: CALL join: a placement alone
--: KEYS option_keys...: its option keys
--: ARGV user_id: the player
--: CALL settle: one cohort
--: KEYS record: the settlement's record
--: ARGV cohort: the cohort
--: ARGV token?: the call's token
return {call, board, option_keys_at, period, user_id, cohort, token, record}
"""


def test_a_declaration_gives_the_script_named_locals_and_cpp_a_function_per_call() -> None:
    script = generate.build_script("demo", DEMO, [])
    prologue = script.body.split("-- demo:")[0]
    assert prologue == (
        "#!lua\n"
        "-- The call's keys and arguments, as declared (generate.py).\n"
        "local board = KEYS[1]\n"
        "local call, period = ARGV[1], ARGV[2]\n"
        "local option_keys_at, user_id, record, cohort, token\n"
        "if call == 'join' then\n"
        "  option_keys_at = 2\n"
        "  user_id = ARGV[3]\n"
        "elseif call == 'settle' then\n"
        "  record = KEYS[2]\n"
        "  cohort, token = ARGV[3], ARGV[4]\n"
        "end\n"
    )
    assert [s[0] for s in script.signatures()] == ["demo_join", "demo_settle"]


def test_the_generated_calls_compile_and_send_their_arguments_in_the_declared_order(
    tmp_path: Path,
) -> None:
    """The C++ a declaration gives, compiled and run: each call's EVALSHA arguments."""
    out = generated(tmp_path, demo=DEMO)
    main = tmp_path / "main.cpp"
    main.write_text(
        """
#include <cstdio>
#include "leaderboard/script_calls.hpp"
using namespace rlb::leaderboard;
static void show(const Command& c) {
  std::printf("%s", std::string(c.script->name).c_str());
  for (const auto& a : c.argv) std::printf(" [%s]", a.c_str());
  std::printf("\\n");
}
int main() {
  show(calls::demo_join(arg::board{"b"}, arg::option_keys{{"o1", "o2"}}, arg::period{"p"},
                        arg::user_id{"ann"}));
  show(calls::demo_settle(arg::board{"b"}, arg::record{"r"}, arg::period{"p"},
                          arg::cohort{"3"}));
  show(calls::demo_settle(arg::board{"b"}, arg::record{"r"}, arg::period{"p"},
                          arg::cohort{"3"}, arg::token{"t"}));
  // An argument found in a built call by its name (argv_n), after a list of keys too.
  auto join = calls::demo_join(arg::board{"b"}, arg::option_keys{{"o1", "o2"}}, arg::period{"p"},
                               arg::user_id{"ann"});
  std::printf("%s\\n", join.argv.at(calls::argv_index(join, calls::argv_n::demo_join::user_id))
                          .c_str());
  auto settle = calls::demo_settle(arg::board{"b"}, arg::record{"r"}, arg::period{"p"},
                                   arg::cohort{"3"}, arg::token{"t"});
  std::printf("%s %s\\n",
              settle.argv.at(calls::argv_index(settle, calls::argv_n::demo_settle::period)).c_str(),
              settle.argv.at(calls::argv_index(settle, calls::argv_n::demo_settle::token)).c_str());
}
"""
    )
    root = Path(__file__).resolve().parents[1]
    assert run_cpp(main, out, out / "scripts.cpp") == [
        "demo [3] [b] [o1] [o2] [join] [p] [ann]",
        "demo [2] [b] [r] [settle] [p] [3]",
        "demo [2] [b] [r] [settle] [p] [3] [t]",
        "ann",
        "p t",
    ]
    # A misplaced argument does not compile.
    main.write_text(
        '#include "leaderboard/script_calls.hpp"\nusing namespace rlb::leaderboard;\n'
        'int main() { calls::demo_join(arg::board{"b"}, arg::option_keys{{}}, '
        'arg::user_id{"ann"}, arg::period{"p"}); }\n'
    )
    failed = subprocess.run(
        ["g++", "-std=c++17", "-fsyntax-only", f"-I{root / 'cpp'}", f"-I{out}", str(main)],
        capture_output=True,
        text=True,
    )
    assert failed.returncode != 0 and "could not convert" in failed.stderr


@pytest.mark.parametrize(
    ("declaration", "message"),
    [
        ("--: KEYS a...\n--: KEYS b\n", "a... must be last"),
        ("--: KEYS a\n--: ARGV b?\n--: ARGV c\n", "optional b\\? must follow"),
        ("--: KEYS a\n--: ARGV b?\n--: ARGV c...\n", "optional ones or a rest"),
        ("--: KEYS a?\n", "a key is never optional"),
        ("--: KEYS a\n--: ARGV a\n", "a is declared twice"),
        ("--: KEYS end\n", "end is a reserved word"),
        ("--: KEYS a\n--: ARGV b\n--: CALL x\n--: CALL x\n", "declared once"),
        ("--: ARGV b\n", "declares no KEYS"),
        ("--: KEYS a b\n", "a declaration is"),
        ("--: KEYS double_it\n", "a helper's name"),
    ],
)
def test_a_broken_declaration_is_refused_naming_why(declaration: str, message: str) -> None:
    helpers = generate.parse_lib("local function double_it(x)\n  return x * 2\nend\n")
    with pytest.raises(generate.GenerateError, match=message):
        generate.build_script("demo", "#!lua\n" + declaration + "return 1\n", helpers)


REPLIES = """\
#!lua
-- replies: a script of three calls that declare their replies.
--: KEYS board: the board
--: CALL write: a write
--: ARGV user_id: the player
--: ARGV tag?: a tag
--: REPLY submit: submit(user_id), tier: int, zone: text?, size: count,
--:   member: tiebreak
--: CALL top: the top
--: REPLY [user_id: text, score: score?, metadata: metadata]
--: CALL hidden: whether one is hidden
--: ARGV user_id: the player
--: REPLY bool
--: CALL plain: no reply declared (C++ builds it)
return 1
"""


def test_a_reply_is_declared_once_with_its_call() -> None:
    script = generate.build_script("replies", REPLIES, [])
    write, top, hidden, plain = script.calls[1:]
    assert write.reply is not None and write.reply.type == "fields"
    assert [(f.name, f.type, f.optional) for f in write.reply.children] == [
        ("submit", "submit", False),
        ("tier", "int", False),
        ("zone", "text", True),
        ("size", "count", False),
        ("member", "tiebreak", False),
    ]
    assert write.reply.children[0].arg == "user_id"
    assert top.reply is not None and top.reply.type == "records"
    assert [f.name for f in top.reply.children] == ["user_id", "score", "metadata"]
    assert hidden.reply == generate.ReplyNode("", "bool")
    assert plain.reply is None


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("--: REPLY a: int, a: text\n", "a twice"),
        ("--: REPLY a: number\n", "'number' is not a type"),
        ("--: REPLY a: submit(who)\n", "submit's who is not one of the call's arguments"),
        ("--: REPLY a: tiebreak, b: int\n", "a tiebreak is the last field"),
        ("--: REPLY tiebreak\n", "a tiebreak is a field"),
        ("--: REPLY a: int b: int\n", "left over"),
        ("--: REPLY a: [b: int\n", "ends where ']' was expected"),
        ("--: REPLY a: int\n--: REPLY b: int\n", "one REPLY"),
        ("--: REPLY a: in$t\n", "cannot read"),
    ],
)
def test_a_broken_reply_is_refused_naming_why(reply: str, message: str) -> None:
    text = "#!lua\n--: KEYS board\n--: ARGV user_id\n" + reply + "return 1\n"
    with pytest.raises(generate.GenerateError, match=message):
        generate.build_script("demo", text, [])


def test_a_script_of_several_calls_declares_each_calls_reply() -> None:
    text = "#!lua\n--: KEYS board\n--: REPLY int\n--: CALL a\n--: CALL b\nreturn 1\n"
    with pytest.raises(generate.GenerateError, match="declares each call's REPLY"):
        generate.build_script("demo", text, [])


def test_the_table_of_declared_calls_compiles_and_finds_each_by_name(tmp_path: Path) -> None:
    """The table a call built by name reads (script_table.cpp), compiled and run: only the
    calls that declare their reply, found by name, their keys, arguments and reply nodes."""
    out = generated(tmp_path, replies=REPLIES, demo=DEMO)
    main = tmp_path / "main.cpp"
    main.write_text(
        """
#include <cstdio>
#include "leaderboard/script_table.hpp"
using namespace rlb::leaderboard;
static void show(const table::Node& node, int depth) {
  std::printf("%*s%s:%d%s", depth * 2, "", node.name, static_cast<int>(node.type),
              node.optional ? "?" : "");
  if (node.arg >= 0) std::printf(" arg %d", node.arg);
  std::printf("\\n");
  for (int i = 0; i < node.count; ++i) show(table::kNodes[node.first + i], depth + 1);
}
int main() {
  for (const char* name : {"replies.write", "replies.top", "replies.hidden", "replies.plain",
                           "demo.join", "replies", "nothing"}) {
    const table::Call* call = table::find(name);
    if (call == nullptr) {
      std::printf("%s: none\\n", name);
      continue;
    }
    std::printf("%s: %s %s keys", call->name, std::string(call->script->name).c_str(), call->word);
    for (int i = 0; i < call->key_count; ++i) std::printf(" %s", call->keys[i].name);
    std::printf(" args");
    for (int i = 0; i < call->arg_count; ++i)
      std::printf(" %s%s", call->args[i].name,
                  call->args[i].kind == table::Kind::Optional ? "?" : "");
    std::printf(" user %d\\n", call->user_arg);
    show(*call->reply, 1);
  }
}
"""
    )
    assert run_cpp(main, out, out / "scripts.cpp", out / "script_table.cpp") == [
        "replies.write: replies write keys board args user_id tag? user 0",
        "  :0",
        "    submit:9 arg 0",
        "    tier:2",
        "    zone:4?",
        "    size:6",
        "    member:10",
        "replies.top: replies top keys board args user -1",
        "  :1",
        "    user_id:4",
        "    score:5?",
        "    metadata:8",
        "replies.hidden: replies hidden keys board args user_id user -1",
        "  :3",
        "replies.plain: none",
        "demo.join: none",
        "replies: none",
        "nothing: none",
    ]


def test_a_name_means_one_thing_in_every_script() -> None:
    one = generate.build_script("one", "#!lua\n--: KEYS a\n--: ARGV b\nreturn 1\n", [])
    two = generate.build_script("two", "#!lua\n--: KEYS a\n--: ARGV b...\nreturn 1\n", [])
    with pytest.raises(generate.GenerateError, match="b is a list here and a string"):
        generate.script_args_hpp([one, two])


def test_the_prologue_comes_after_the_helpers_just_before_the_scripts_own_text() -> None:
    """Locals declared above the helpers made every call of a tournament script cost ~10k more
    server instructions (callgrind): the prologue goes after them, on each path."""
    helpers = generate.parse_lib(LIB)
    text = (
        "#!lua\n--: KEYS board\nif x then return double(1) end\n"
        "-- @options: boards with options\nreturn quadruple(board)\n"
    )
    body = generate.build_script("demo", text, helpers).body
    assert (
        body.index("local function double")
        < body.index("local board = KEYS[1]")
        < body.index("if x then")
        < body.index("local function quadruple")
    )


WORDS_MODULE = """\
-- The words.
--: WORD sid submission_ttl call_token [submission_key]: an id
--: WORD rate# rate_max rate_per [rate_key]: a limit
--: WORD expire expire_at: a deadline
--: WORD gscope [guard_scope]: a scope
"""


def test_guard_words_are_declared_once_and_become_straight_lua() -> None:
    words: list[generate.Word] = []
    helpers = generate.read_helpers(WORDS_MODULE + "local X = 1\n", "lib/g.lua", words)
    assert [w.name for w in words] == ["sid", "rate", "expire", "gscope"]
    assert (words[1].numbers, words[1].fields, words[1].key) == (
        True,
        ["rate_max", "rate_per"],
        "rate_key",
    )
    assert [h.name for h in helpers] == ["read_guard_word", "GUARD_KEYED", "X"]
    assert helpers[0].text == (
        "-- The words.\n"
        "local function read_guard_word(w, word)\n"
        "  local name, a, b, c = string.match(word, '^(%a+):([^:]*):?([^:]*):?([^:]*)$')\n"
        "  if name == 'sid' then\n"
        "    w.submission_ttl, w.call_token = a ~= '' and a or nil, b ~= '' and b or nil\n"
        "    return 'submission_key'\n"
        "  elseif name == 'rate' then\n"
        "    w.rate_max, w.rate_per = tonumber(a), tonumber(b)\n"
        "    return 'rate_key'\n"
        "  elseif name == 'expire' then\n"
        "    w.expire_at = a ~= '' and a or nil\n"
        "  elseif name == 'gscope' then\n"
        "    return 'guard_scope'\n"
        "  end\n"
        "end\n"
    )
    assert helpers[1].text == "local GUARD_KEYED = {sid = true, rate = true, gscope = true}\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("--: WORD sid a [k]\n--: WORD sid b\n", "lib/g.lua:2: a word is"),
        ("--: WORD Sid a\n", "lib/g.lua:1: a word is"),
        ("--: WORD w a b c d\n", "lib/g.lua:1: a word has at most 3 fields"),
        ("--: WORD a x\nlocal X = 1\n--: WORD b y\n", "lib/g.lua:3: WORD lines are one block"),
    ],
)
def test_a_broken_word_is_refused_naming_why(text: str, message: str) -> None:
    with pytest.raises(generate.GenerateError, match=re.escape(message)):
        generate.read_helpers(text, "lib/g.lua", [])


def test_the_real_words_cpp_writes_are_the_fields_guard_fields_reads(
    tmp_path: Path, r: object
) -> None:
    """Every declared word, built by the generated C++ (word::add) and read by the generated
    table through the real guard_fields on a real server: each field and key comes back where
    the declaration says, the keys in the words' order, an empty field nil."""
    words: list[generate.Word] = []
    helpers = generate.parse_modules(SCRIPTS / "lib", words)
    out = tmp_path / "out"
    assert generate.main(["generate.py", str(SCRIPTS), str(out)]) == 0
    # Each word's values: its fields "<word>.<field>" (the second field of a word left empty),
    # its key "key:<word>".
    lines = [
        "#include <cstdio>",
        '#include "leaderboard/script_words.hpp"',
        "using namespace rlb::leaderboard;",
        "int main() {",
        '  std::string spec = "head";',
        "  std::vector<std::string> keys;",
    ]
    for word in words:
        values = [f'"{word.name}.{f}"' if i != 1 else '""' for i, f in enumerate(word.fields)]
        if word.key:
            values.append(f'"key:{word.name}"')
        keyed = "keys, " if word.key else ""
        lines.append(f"  word::add(spec, {keyed}word::{word.name}{{{', '.join(values)}}});")
    lines += [
        '  std::printf("%s\\n", spec.c_str());',
        '  for (const auto& k : keys) std::printf("%s\\n", k.c_str());',
        "}",
    ]
    main = tmp_path / "main.cpp"
    main.write_text("\n".join(lines) + "\n")
    spec, *keys = run_cpp(main, out)
    assert keys == [f"key:{w.name}" for w in words if w.key]
    # A script of the real helpers: guard_fields over the spec's words after "head", the keys
    # ending at the last of KEYS (two other keys before them); it returns the fields it set.
    script = generate.build_script(
        "roundtrip",
        "#!lua\n"
        "local spec = {}\n"
        "for word in string.gmatch(ARGV[1], '%S+') do spec[#spec + 1] = word end\n"
        "local w = guard_fields({}, spec, 2, #KEYS)\n"
        "local out = {}\n"
        "for name, value in pairs(w) do out[#out + 1] = name .. '=' .. tostring(value) end\n"
        "return out\n",
        helpers,
    )
    numbers = {f for w in words if w.numbers for f in w.fields}
    if numbers:  # a word of numbers: its fields sent as numbers
        spec = " ".join(
            word
            if not any(word.startswith(w.name + ":") for w in words if w.numbers)
            else ":".join(
                [word.split(":")[0], *("7" if part else "" for part in word.split(":")[1:])]
            )
            for word in spec.split(" ")
        )
    got = dict(
        item.split("=", 1)
        for item in r.eval(script.body, 2 + len(keys), "x1", "x2", *keys, spec)  # type: ignore[attr-defined]
    )
    expected = {}
    for word in words:
        for i, field in enumerate(word.fields):
            if i != 1:
                expected[field] = "7" if word.numbers else f"{word.name}.{field}"
        if word.key:
            expected[word.key] = f"key:{word.name}"
    if any(w.name in ("range", "maxinc") for w in words):
        expected["limits"] = "true"
    assert got == expected


def test_a_constant_is_declared_once_for_both_languages(tmp_path: Path) -> None:
    consts: list[generate.Const] = []
    helpers = generate.read_helpers(
        "--: CONST BIG 4294967296: a big one\nlocal function f()\n  return BIG\nend\n",
        "lib/c.lua",
        [],
        consts,
    )
    assert (helpers[0].name, helpers[0].text) == (
        "BIG",
        "-- a big one\nlocal BIG = 4294967296\n",
    )
    assert consts == [generate.Const("BIG", 4294967296, "a big one")]
    assert "inline constexpr long long BIG = 4294967296LL;" in generate.script_constants_hpp(consts)
    with pytest.raises(generate.GenerateError, match="a constant is"):
        generate.read_helpers("--: CONST big 1\n", "lib/c.lua", [], [])
    # The real one: C++'s unlimited max_entries is the scripts'.
    assert generate.main(["generate.py", str(SCRIPTS), str(tmp_path)]) == 0
    header = (tmp_path / "leaderboard" / "script_constants.hpp").read_text()
    assert "inline constexpr long long UNLIMITED = 4294967296LL;" in header
