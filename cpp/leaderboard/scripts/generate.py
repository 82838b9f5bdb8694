"""Build the server-side scripts into C++: run by CMake at build time, tested by
tests/test_script_generator.py.

Reads every ``<name>.lua`` of this folder and the helpers' modules in ``lib/`` and writes, into the
output folder:

- ``scripts.cpp``: each script's body as Redis runs it, with its SHA1 (EVALSHA needs no
  SCRIPT LOAD round trip);
- ``leaderboard/scripts.hpp``: the registry, one ``extern const Script`` per script, named by
  its file, with the first line of the script's own comment: no list is kept by hand.

A script's body is its ``#!lua`` line (its flags, Redis 7.0+), then the helpers of ``lib/`` it
uses (transitively, in the modules' order), then its own text. Redis runs the whole chunk on
every call, and each ``local function`` is a closure built on every call, so a script carries
only what it uses. A script with a line starting ``-- @options`` has two paths: before it, the
guide's (a default board: the guide's commands only, ending in a return), after it the path of
boards with options; the helpers only the second path uses are placed just before it, so a call
that returns on the guide's path never builds them.

``lib/`` holds one module per concern shared by the scripts (``base``: keys, types and
permissions; ``options``; ``clock``; ``guards``; ``submissions``; ``removal_events``; ``expiry``;
``hiding``; ``board_write``; ``windows``; ``window_ahead``; ``leagues``). A module's opening
comment names the modules whose helpers it uses, ``--: REQUIRES base options``: it comes after
them, it may use no other's, and each it names it uses (the line stays true). A module holds
only ``local function NAME(...)`` blocks (ending at a line ``end``) and ``local NAME = <value>``
lines, each with the comment lines right above it; a helper may use only those above it in its
module and those of the modules it requires. Anything else there is an error, as is a script
without a ``#!lua`` line: the build stops with the file and the line.

A script declares its interface once, in ``--:`` lines among its opening comment::

    --: KEYS board: the board
    --: KEYS option_keys...: the board's option keys (board_spec in lib/options.lua)
    --: ARGV user_id: the user
    --: ARGV order?: on a board with options, its order

``NAME...`` is the rest of the list (last in it), ``NAME?`` may be left out (only after every
required one, and not in a list with a ``...``). From that declaration the script's body gets a
prologue of named locals, just before its own text, after the helpers (``local board,
option_keys_at = KEYS[1], 2``: a ``...`` name's local is the index of its first element), so
its text names what it reads (after the helpers: a closure of the script reaching a local
declared above them first walks the open upvalues of every helper, Lua 5.1's luaF_findupval,
~8-10k more server instructions a tournament call, measured with callgrind); and C++
gets, in ``leaderboard/script_args.hpp``, one type per name
(``arg::board``, a string; ``arg::option_keys``, a list; constructed explicitly, so a call
site names every argument) and, in ``leaderboard/script_calls.hpp``, one function per script
(``calls::entry(arg::board, ...)``, in the declared order) that builds its EVALSHA: a missing,
extra or misplaced argument is a compile error. A name means one thing in every script (a
string, or a list).

A script of several calls (a league's submit, join, close, ...) declares its common keys and
arguments, then each call after a ``--: CALL word`` line with its own (after the common ones)::

    --: KEYS state: the period's state
    --: ARGV period: the period's id
    --: CALL join: a placement alone
    --: ARGV user_id: the player

ARGV[1] is then the call's word (the local ``call``), and C++ gets one function per call,
``calls::league_join(arg::state, arg::period, arg::user_id)``, which sends the word.

A write's guard words are declared once, in a module of ``lib/`` (``--: WORD name[#] field...
[key]: about``; ``#``: its fields are numbers; ``[key]``: it names one of the script's KEYS,
which goes to that field of ``w``): Lua gets ``read_guard_word(w, word)`` (straight code, no
table built per call) and the set ``GUARD_KEYED``, C++ ``leaderboard/script_words.hpp``
(``word::rate{...}``, ``word::text``, ``word::add(spec, keys, ...)``).

A constant both languages need is declared once too, ``--: CONST NAME integer: about`` in a
module: a helper ``local NAME = integer`` there, ``constants::NAME`` in C++
(``leaderboard/script_constants.hpp``).

Usage: ``python generate.py <scripts folder> <output folder>``. A file whose content would not
change is not rewritten (so nothing recompiles for nothing).
"""

from __future__ import annotations

import hashlib
import itertools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

LIB = "lib"  # the helpers' folder: one module per concern
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FUNCTION = re.compile(r"^local function ([A-Za-z_][A-Za-z0-9_]*)\(")
_VALUE = re.compile(r"^local ([A-Za-z_][A-Za-z0-9_]*) = ")
_CONST = re.compile(r"^--: CONST ([A-Z][A-Z0-9_]*) (-?[0-9]+)(?:: (.*))?$")
_WORD = re.compile(r"^--: WORD ([a-z]+)(#?)((?: [a-z_]+)*)(?: \[([a-z_]+)\])?(?:: (.*))?$")
# What the WORD declarations become in Lua: a function that reads one word into `w`, and the
# set of the words that name a key.
READ_WORD, KEYED_WORDS = "read_guard_word", "GUARD_KEYED"
_SCRIPT_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class GenerateError(Exception):
    """A script or the helpers break a rule of this file's docstring."""


def identifiers(code: str) -> set[str]:
    """The identifiers of Lua code, comments left out (a helper named in a comment is no use)."""
    return set(_IDENTIFIER.findall(re.sub(r"--[^\n]*", "", code)))


@dataclass
class Word:
    """A guard word (``--: WORD``): how a write's option travels in a script's spec, as
    ``name:field:field...`` (space-separated from the others), and the key it names, if any
    (a spec's keyed words' keys are the script's last KEYS, in the words' order)."""

    name: str
    numbers: bool  # its fields are numbers (tonumber in Lua)
    fields: list[str]  # the fields of `w` (the write's plan) they set, in order
    key: str | None  # the field of `w` its key goes to; None: it names no key
    about: str


@dataclass
class Const:
    """A constant both languages need (``--: CONST NAME integer: about``): a Lua local of the
    module that declares it, and ``constants::NAME`` in C++."""

    name: str
    value: int
    about: str


@dataclass
class Helper:
    name: str
    text: str  # its comment lines, then its definition, each line ending in "\n"
    uses: list[str] = field(default_factory=list)  # the helpers it uses (all above it)
    module: str = ""  # the module (lib/<module>.lua) that defines it


def read_helpers(
    text: str, path: str, words: list[Word] | None = None, consts: list[Const] | None = None
) -> list[Helper]:
    """The helpers one module's text defines, in file order (their uses not linked yet); its
    ``--: WORD`` lines, appended to ``words``, become two more where the first of them is:
    ``read_guard_word(w, word)`` and the set ``GUARD_KEYED`` (see ``lua_words``)."""
    helpers: list[Helper] = []
    table: list[Helper] = []
    comments = ""
    current: Helper | None = None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, 1):
        if current is not None:  # inside a function: up to its "end" line
            current.text += line + "\n"
            if line == "end":
                current = None
        elif match := _FUNCTION.match(line):
            current = Helper(match[1], comments + line + "\n")
            helpers.append(current)
            comments = ""
        elif match := _VALUE.match(line):
            helpers.append(Helper(match[1], comments + line + "\n"))
            comments = ""
        elif line.startswith("--: CONST"):
            const = _CONST.match(line)
            if consts is None or not const:
                raise GenerateError(
                    f"{path}:{number}: a constant is `--: CONST NAME integer[: about]`, "
                    "in lib/ only"
                )
            consts.append(Const(const[1], int(const[2]), const[3] or ""))
            about = f"-- {const[3]}\n" if const[3] else ""
            helpers.append(Helper(const[1], comments + about + f"local {const[1]} = {const[2]}\n"))
            comments = ""
        elif line.startswith("--: WORD"):
            if words is None or (table and helpers[-1] is not table[-1]):
                raise GenerateError(f"{path}:{number}: WORD lines are one block, in lib/ only")
            word = _WORD.match(line)
            if not word or word[1] in {w.name for w in words}:
                raise GenerateError(
                    f"{path}:{number}: a word is `--: WORD name[#] field... [key][: about]`, "
                    "declared once"
                )
            fields = word[3].split()
            if len(fields) > 3:
                raise GenerateError(f"{path}:{number}: a word has at most 3 fields")
            words.append(Word(word[1], word[2] == "#", fields, word[4], word[5] or ""))
            if not table:
                table = [Helper(READ_WORD, comments), Helper(KEYED_WORDS, "")]
                helpers += table
                comments = ""
        elif line.startswith("--: REQUIRES"):
            if number != 1 and not all(earlier.startswith("--") for earlier in lines[:number]):
                raise GenerateError(f"{path}:{number}: REQUIRES belongs in the opening comment")
            comments = ""
        elif line.startswith("--"):
            comments += line + "\n"
        elif line == "":
            comments = ""  # a comment paragraph of the file, not of a helper
        else:
            raise GenerateError(
                f"{path}:{number}: not a `local function` or a `local NAME = ` line: {line}"
            )
    if current is not None:
        raise GenerateError(f'{path}: local function {current.name} has no "end" line')
    if table and words is not None:
        table[0].text += lua_read_word(words)
        table[1].text += lua_keyed_words(words)
    return helpers


def lua_read_word(words: list[Word]) -> str:
    """Lua reading one guard word into `w` (its fields, an empty one nil, ``#``: numbers), which
    returns the field of `w` its key goes to (nil: it names no key). Straight code, not a table
    of the words: Redis builds a script's tables on every call (a table of the words cost a
    write ~13k more server instructions)."""
    lines = [
        "local function " + READ_WORD + "(w, word)",
        "  local name, a, b, c = string.match(word, '^(%a+):([^:]*):?([^:]*):?([^:]*)$')",
    ]
    for i, word in enumerate(words):
        lines.append(f"  {'if' if i == 0 else 'elseif'} name == '{word.name}' then")
        if word.fields:
            values = [
                f"tonumber({v})" if word.numbers else f"{v} ~= '' and {v} or nil"
                for v in "abc"[: len(word.fields)]
            ]
            fields = ", ".join(f"w.{f}" for f in word.fields)
            lines.append(f"    {fields} = {', '.join(values)}")
        if word.key:
            lines.append(f"    return '{word.key}'")
    lines += ["  end", "end"]
    return "\n".join(lines) + "\n"


def lua_keyed_words(words: list[Word]) -> str:
    """The Lua set of the guard words that name a key."""
    keyed = ", ".join(f"{w.name} = true" for w in words if w.key)
    return f"local {KEYED_WORDS} = {{{keyed}}}\n"


def _link(helpers: list[Helper], visible: dict[str, set[str]], path_of: dict[str, str]) -> None:
    """Sets each helper's ``uses``: a helper may use those above it in its own module and those
    of the modules its module requires (``visible``: module -> the modules it may use)."""
    module_of = {helper.name: helper.module for helper in helpers}
    twice = sorted({h.name for h in helpers if [o.name for o in helpers].count(h.name) > 1})
    if twice:
        raise GenerateError(f"{LIB}: defined twice: {', '.join(twice)}")
    index = {helper.name: i for i, helper in enumerate(helpers)}
    for i, helper in enumerate(helpers):
        path = path_of[helper.module]
        for other in sorted(identifiers(helper.text) & module_of.keys()):
            if other == helper.name:
                continue
            if module_of[other] not in visible[helper.module]:
                raise GenerateError(
                    f"{path}: {helper.name} uses {other} of {module_of[other]}, "
                    "which its module does not require"
                )
            if index[other] > i:
                raise GenerateError(
                    f"{path}: {helper.name} uses {other}, which is defined below it"
                )
            helper.uses.append(other)


def parse_lib(text: str, path: str = "lib.lua") -> list[Helper]:
    """The helpers of one module's text, in file order, each with the helpers it uses."""
    helpers = read_helpers(text, path)
    _link(helpers, {"": {""}}, {"": path})
    return helpers


def parse_modules(
    folder: Path, words: list[Word] | None = None, consts: list[Const] | None = None
) -> list[Helper]:
    """The helpers of every module of ``folder`` (``lib/*.lua``), each module's after those of
    the modules it requires: its ``--: REQUIRES a b`` line (in its opening comment) names the
    modules whose helpers it uses, and it may use no others."""
    texts = {path.stem: path.read_text() for path in sorted(folder.glob("*.lua"))}
    path_of = {name: f"{LIB}/{name}.lua" for name in texts}
    requires: dict[str, list[str]] = {}
    for name, text in texts.items():
        lines = [line.split()[2:] for line in text.split("\n") if line.startswith("--: REQUIRES")]
        requires[name] = [word for line in lines for word in line]
        for other in requires[name]:
            if other not in texts:
                raise GenerateError(f"{path_of[name]}: requires {other}, not a module of {LIB}/")
    order: list[str] = []
    visible: dict[str, set[str]] = {}

    def visit(name: str, chain: list[str]) -> None:
        if name in visible:
            return
        if name in chain:
            raise GenerateError(f"{LIB}: modules require each other: {' -> '.join([*chain, name])}")
        for other in requires[name]:
            visit(other, [*chain, name])
        visible[name] = {name}.union(*(visible[other] for other in requires[name]))
        order.append(name)

    for name in texts:
        visit(name, [])
    helpers: list[Helper] = []
    for name in order:
        own = read_helpers(
            texts[name],
            path_of[name],
            words if words is not None else [],
            consts if consts is not None else [],
        )
        for helper in own:
            helper.module = name
        helpers += own
    _link(helpers, visible, path_of)
    for name in order:  # a requirement it does not use is an error too: the line must be true
        used = {h.module for u in helpers if u.module == name for h in helpers if h.name in u.uses}
        for other in requires[name]:
            if other not in used:
                raise GenerateError(f"{path_of[name]}: requires {other} but uses none of it")
    return helpers


def helpers_used(code: str, helpers: list[Helper], exclude: set[str]) -> tuple[str, set[str]]:
    """The text of the helpers ``code`` uses, transitively, in the modules' order, but those in
    ``exclude``; and the names of all it uses (``exclude``'s included)."""
    by_name = {helper.name: helper for helper in helpers}
    used = identifiers(code)
    wanted = {helper.name for helper in helpers if helper.name in used}
    queue = list(wanted)
    while queue:
        for other in by_name[queue.pop()].uses:
            if other not in wanted:
                wanted.add(other)
                queue.append(other)
    text = "".join(helper.text + "\n" for helper in helpers if helper.name in wanted - exclude)
    return text, wanted


@dataclass
class Param:
    name: str
    kind: str  # "one", "optional" or "rest"
    about: str


@dataclass
class Call:
    """One call of a script: its keys and arguments, after the script's common ones."""

    name: str  # "" for a script of one call; else the word its ARGV[1] carries
    about: str
    keys: list[Param] = field(default_factory=list)
    args: list[Param] = field(default_factory=list)
    reply: ReplyNode | None = None  # its declared reply (``--: REPLY``), if any
    reply_text: str = ""  # as declared, while its lines are read


@dataclass
class Script:
    name: str
    body: str  # as Redis runs it
    summary: str  # the first sentence of its own comment
    # Its declaration: the common keys and arguments (calls[0] with name ""), then each call's
    # own; empty: it declares nothing (yet).
    calls: list[Call] = field(default_factory=list)

    @property
    def sha1(self) -> str:
        return hashlib.sha1(self.body.encode()).hexdigest()

    def signatures(self) -> list[tuple[str, str, list[Param], list[Param]]]:
        """(C++ function name, call word, keys, args) of each way to call the script."""
        return [(f, w, k, a) for f, w, k, a, _ in self.declared_calls()]

    def declared_calls(
        self,
    ) -> list[tuple[str, str, list[Param], list[Param], ReplyNode | None]]:
        """(C++ function name, call word, keys, args, declared reply) of each way to call the
        script."""
        if not self.calls:
            return []
        common, own = self.calls[0], self.calls[1:]
        if not own:
            return [(self.name, "", common.keys, common.args, common.reply)]
        return [
            (
                f"{self.name}_{call.name}",
                call.name,
                common.keys + call.keys,
                common.args + call.args,
                call.reply,
            )
            for call in own
        ]


# The types a declared reply's values take (``--: REPLY``), and what each is in Python.
REPLY_TYPES = {
    "int": "an integer",
    "bool": "an integer, 1 (True) or 0 (False)",
    "text": "a string",
    "score": "a number sent as a string (a float)",
    "count": "a number sent as a string, whole (an int)",
    "texts": "an array of strings (a list)",
    "metadata": "a flat array field, value, ... (a dict)",
    "submit": "submit()'s reply on a board (lib/board_write.lua) for the player in the argument "
    "named in parentheses (a SubmitResult)",
    "tiebreak": "a ranked member (tie-break columns' values; nil: none given), present only when "
    "the board has tie-break columns (a dict: column -> value or None)",
}


@dataclass
class ReplyNode:
    """A declared reply, or one of its parts: ``fields`` (an array of exactly these, a dict),
    ``records`` (a flat array of repeated fields, a list of dicts) or one of REPLY_TYPES."""

    name: str  # its field's name ("": the reply itself)
    type: str
    optional: bool = False  # nil (Lua's false) is None
    arg: str = ""  # a submit's player: the argument that names them
    children: list[ReplyNode] = field(default_factory=list)


_REPLY_TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*|[\[\]():,?])")


def parse_reply(text: str, where: str, args: list[Param]) -> ReplyNode:
    """A call's declared reply (``--: REPLY``)::

        reply  := value | fields
        fields := name ':' value (',' name ':' value)*
        value  := TYPE ['(' argument ')'] ['?'] | '[' fields ']' ['?']

    ``[...]`` is a flat array of records; ``?``: nil (Lua's false) is None; a ``submit`` names
    the argument (of the call's own) that holds its player."""
    tokens: list[str] = []
    at = 0
    while at < len(text.rstrip()):
        match = _REPLY_TOKEN.match(text, at)
        if not match:
            raise GenerateError(f"{where}: REPLY: cannot read {text[at:].strip()!r}")
        tokens.append(match[1])
        at = match.end()
    names = {p.name for p in args if p.kind != "rest"}

    def fail(what: str) -> GenerateError:
        return GenerateError(f"{where}: REPLY {text.strip()}: {what}")

    def take(expected: str | None = None) -> str:
        if not tokens:
            raise fail(f"ends where {repr(expected) if expected else 'more'} was expected")
        token = tokens.pop(0)
        if expected is not None and token != expected:
            raise fail(f"{expected!r} expected, not {token!r}")
        return token

    def value(name: str) -> ReplyNode:
        token = take()
        if token == "[":
            node = ReplyNode(name, "records", children=fields())
            take("]")
        elif token in REPLY_TYPES:
            node = ReplyNode(name, token)
            if token == "submit":
                take("(")
                node.arg = take()
                if node.arg not in names:
                    raise fail(f"submit's {node.arg} is not one of the call's arguments")
                take(")")
        else:
            raise fail(f"{token!r} is not a type ({', '.join(REPLY_TYPES)}) or a [list]")
        if tokens and tokens[0] == "?":
            take()
            node.optional = True
        return node

    def fields() -> list[ReplyNode]:
        out: list[ReplyNode] = []
        while True:
            name = take()
            if not _IDENTIFIER.fullmatch(name):
                raise fail(f"{name!r} is not a field's name")
            if any(f.name == name for f in out):
                raise fail(f"{name} twice")
            take(":")
            out.append(value(name))
            if not tokens or tokens[0] != ",":
                break
            take(",")
        tiebreaks = [i for i, f in enumerate(out) if f.type == "tiebreak"]
        if tiebreaks and tiebreaks != [len(out) - 1]:
            raise fail("a tiebreak is the last field (it is there only with tie-break columns)")
        return out

    if len(tokens) >= 2 and tokens[1] == ":":
        root = ReplyNode("", "fields", children=fields())
    else:
        root = value("")
        if root.type == "tiebreak":
            raise fail("a tiebreak is a field")
    if tokens:
        raise fail(f"{' '.join(tokens)!r} left over")
    return root


def build_script(name: str, text: str, helpers: list[Helper]) -> Script:
    """One script's body, from its file's text."""
    if not _SCRIPT_NAME.match(name):
        raise GenerateError(f"{name}.lua: a script's name is lower case letters, digits and _")
    shebang = re.match(r"#!lua[^\n]*\n", text)
    if not shebang:
        raise GenerateError(f"{name}.lua must start with a #!lua line declaring its flags")
    own = text[shebang.end() :]
    calls = parse_declaration(name, own)
    declared = {p.name for call in calls for p in call.keys + call.args}
    clash = declared & {h.name for h in helpers}
    if clash:
        raise GenerateError(f"{name}.lua declares {', '.join(sorted(clash))}, a helper's name")
    prologue = lua_prologue(calls) if calls else ""
    split = own.find("\n-- @options")
    if split == -1:
        lib, _ = helpers_used(own, helpers, set())
        body = shebang[0] + lib + prologue + own
    else:
        guide, options = own[: split + 1], own[split + 1 :]
        lib_guide, names = helpers_used(guide, helpers, set())
        lib_options, _ = helpers_used(options, helpers, names)
        body = shebang[0] + lib_guide + prologue + guide + lib_options + options
    return Script(name, body, first_sentence(own), calls)


_DECLARATION = re.compile(r"^--: (KEYS|ARGV|CALL) ([a-z][a-z0-9_]*)(\.\.\.|\?)?(?:: (.*))?$")
_REPLY = re.compile(r"^--: REPLY (.+)$")
_REPLY_MORE = re.compile(r"^--:   +(.+)$")  # a REPLY's next line
# Names a declaration may not take: Lua's and C++'s keywords, and the generated code's own.
_RESERVED = set(
    "and break do else elseif end false for function goto if in local nil not or repeat return "
    "then true until while auto bool case catch char class const continue default delete double "
    "enum explicit extern float friend inline int long namespace new operator private protected "
    "public register short signed sizeof static struct switch template this throw try typedef "
    "union unsigned using virtual void volatile call out value".split()
)


def _check_list(where: str, params: list[Param]) -> None:
    """A list's rules: a rest is last; optional ones go last, never with a rest; no optional
    key."""
    if any(p.kind == "rest" for p in params) and any(p.kind == "optional" for p in params):
        raise GenerateError(f"{where}: a list has optional ones or a rest, not both")
    for i, param in enumerate(params):
        later = params[i + 1 :]
        if param.kind == "rest" and later:
            raise GenerateError(f"{where}: {param.name}... must be last")
        if param.kind == "optional" and any(p.kind != "optional" for p in later):
            raise GenerateError(f"{where}: optional {param.name}? must follow every required one")
    if any(p.kind == "rest" for p in params) and any(p.kind == "optional" for p in params):
        raise GenerateError(f"{where}: a list has optional ones or a rest, not both")


def parse_declaration(name: str, own: str) -> list[Call]:
    """A script's declaration: its common keys and arguments, then each call's (empty: it
    declares nothing)."""
    calls = [Call("", "")]
    replying = False  # the line before was the current call's REPLY (or its next line)
    for number, line in enumerate(own.split("\n"), 2):
        if not line.startswith("--:"):
            replying = False
            continue
        where = f"{name}.lua:{number}"
        if (more := _REPLY_MORE.match(line)) and replying:
            calls[-1].reply_text += " " + more[1]
            continue
        if reply := _REPLY.match(line):
            if calls[-1].reply_text:
                raise GenerateError(f"{where}: a call declares one REPLY")
            calls[-1].reply_text, replying = reply[1], True
            continue
        replying = False
        match = _DECLARATION.match(line)
        if not match:
            raise GenerateError(
                f"{where}: a declaration is `--: KEYS|ARGV name[...|?][: about]` or "
                "`--: CALL word[: about]` or `--: REPLY shape`"
            )
        which, word, mark, about = match[1], match[2], match[3], match[4] or ""
        if which != "CALL" and word in _RESERVED:  # a call's word is only a string
            raise GenerateError(f"{where}: {word} is a reserved word")
        if which == "CALL":
            if mark or any(call.name == word for call in calls):
                raise GenerateError(f"{where}: a call is a word, declared once")
            calls.append(Call(word, about))
            continue
        kind = {"...": "rest", "?": "optional", None: "one"}[mark]
        if which == "KEYS" and kind == "optional":
            raise GenerateError(f"{where}: a key is never optional (declare a rest)")
        mine = [p.name for p in calls[0].keys + calls[0].args + calls[-1].keys + calls[-1].args]
        if word in mine:
            raise GenerateError(f"{where}: {word} is declared twice")
        (calls[-1].keys if which == "KEYS" else calls[-1].args).append(Param(word, kind, about))
    if len(calls) == 1 and not calls[0].keys and not calls[0].args:
        return []
    if not calls[0].keys:
        raise GenerateError(f"{name}.lua: declares no KEYS before its calls")
    for call in calls[1:] or calls:
        both = calls[0] if call is calls[0] else call
        keys = calls[0].keys + (call.keys if call is not calls[0] else [])
        args = calls[0].args + (call.args if call is not calls[0] else [])
        label = f"{name}.lua" + (f", call {both.name}" if both.name else "")
        _check_list(f"{label} KEYS", keys)
        _check_list(f"{label} ARGV", args)
        if call.reply_text:
            call.reply = parse_reply(call.reply_text, label, args)
    if len(calls) > 1 and calls[0].reply_text:
        raise GenerateError(f"{name}.lua: a script of several calls declares each call's REPLY")
    return calls


def _assign(table: str, params: list[Param], first: int) -> tuple[list[str], list[str]]:
    """The locals and values of `params`, the list's elements from `first` on."""
    names = [p.name + "_at" if p.kind == "rest" else p.name for p in params]
    values = [str(i) if p.kind == "rest" else f"{table}[{i}]" for i, p in enumerate(params, first)]
    return names, values


def lua_prologue(calls: list[Call]) -> str:
    """The named locals of a declared script's KEYS and ARGV (a rest's: the index of its first
    element). A script of several calls: ARGV[1] is the call's word, local ``call``; each
    call's own keys and arguments are set by it."""
    lines = ["-- The call's keys and arguments, as declared (generate.py)."]
    common, own = calls[0], calls[1:]
    first_arg = 2 if own else 1
    for table, params, first in (("KEYS", common.keys, 1), ("ARGV", common.args, first_arg)):
        names, values = _assign(table, params, first)
        if table == "ARGV" and own:
            names, values = ["call", *names], ["ARGV[1]", *values]
        if names:
            lines.append(f"local {', '.join(names)} = {', '.join(values)}")
    if own:
        union: list[str] = []
        for call in own:
            for table, params, first in (
                ("KEYS", call.keys, 1 + len(common.keys)),
                ("ARGV", call.args, first_arg + len(common.args)),
            ):
                for local in _assign(table, params, first)[0]:
                    if local not in union:
                        union.append(local)
        if union:
            lines.append(f"local {', '.join(union)}")
        branch = "if"  # only the calls that take their own: no comparison for the others
        for call in own:
            sets: list[str] = []
            for table, params, first in (
                ("KEYS", call.keys, 1 + len(common.keys)),
                ("ARGV", call.args, first_arg + len(common.args)),
            ):
                names, values = _assign(table, params, first)
                if names:
                    sets.append(f"  {', '.join(names)} = {', '.join(values)}")
            if sets:
                lines.append(f"{branch} call == '{call.name}' then")
                lines += sets
                branch = "elseif"
        if branch == "elseif":
            lines.append("end")
    return "\n".join(lines) + "\n"


def first_sentence(text: str) -> str:
    """The first sentence of the comment that opens ``text`` (what the script is for)."""
    words: list[str] = []
    for line in text.split("\n"):
        if not line.startswith("--") or line.startswith("-- @"):
            break
        for word in line[2:].split():
            words.append(word)
            if word.endswith(".") or (word.endswith(":") and len(words) > 12):
                return " ".join(words).rstrip(":.") + "."
    return " ".join(words)


def _comment(text: str, width: int = 98) -> list[str]:
    """``text`` as C++ comment lines of at most ``width`` columns."""
    lines: list[str] = []
    line = "//"
    for word in text.split():
        if len(line) + 1 + len(word) > width and line != "//":
            lines.append(line)
            line = "//"
        line += " " + word
    lines.append(line)
    return lines


def build_all(
    folder: Path, words: list[Word] | None = None, consts: list[Const] | None = None
) -> list[Script]:
    """Every script of ``folder``, by name (and the guard words and constants of its modules
    into ``words`` and ``consts``)."""
    helpers = parse_modules(folder / LIB, words, consts)
    return [
        build_script(path.stem, path.read_text(), helpers) for path in sorted(folder.glob("*.lua"))
    ]


def _header(about: str, includes: list[str], namespace: str) -> list[str]:
    """A generated header's opening: what it holds (a comment, ending "Do not edit."), its
    includes (system ones first) and the namespace it opens."""
    system = [f"#include <{name}>" for name in includes if not name.endswith(".hpp")]
    local = [f'#include "{name}"' for name in includes if name.endswith(".hpp")]
    out = [*_comment(about + " Generated by generate.py. Do not edit."), "#pragma once", ""]
    for group in (system, local):
        if group:
            out += [*group, ""]
    return [*out, f"namespace {namespace} {{"]


def script_constants_hpp(consts: list[Const]) -> str:
    """C++ for the constants the modules of ``lib/`` declare (``--: CONST``)."""
    out = _header(
        "The constants the scripts and C++ share, declared once in cpp/leaderboard/scripts/lib/"
        " (`--: CONST` lines).",
        [],
        "rlb::leaderboard::constants",
    )
    for const in consts:
        out += _comment(f"{const.name}: {const.about}")
        out.append(f"inline constexpr long long {const.name} = {const.value}LL;")
    out.append("}  // namespace rlb::leaderboard::constants")
    return "\n".join(out) + "\n"


def script_words_hpp(words: list[Word]) -> str:
    """C++ for the guard words: a struct per word (its fields, then its key), its text, and an
    ``add`` that appends it to a spec, after a space (and its key to the keys, in lockstep)."""
    out = _header(
        "The guard words of the scripts' specs, declared once in cpp/leaderboard/scripts/lib/"
        " (`--: WORD` lines).",
        ["string", "vector"],
        "rlb::leaderboard::word",
    )
    for word in words:
        out += _comment(f"{word.name}: {word.about}")
        members = [*word.fields, *([word.key] if word.key else [])]
        out.append(f"struct {word.name} {{")
        out += [f"  std::string {m};" + ("  // its key" if m == word.key else "") for m in members]
        out.append("};")
        text = ' + ":" + '.join(f"w.{f}" for f in word.fields)
        out += [
            f"inline std::string text(const {word.name}&{' w' if word.fields else ''}) {{",
            f'  return std::string("{word.name}:")' + (f" + {text}" if word.fields else "") + ";",
            "}",
        ]
        params = "std::string& spec, " + ("std::vector<std::string>& keys, " if word.key else "")
        out += [
            f"inline void add({params}const {word.name}& w) {{",
            "  spec += ' ';  // each word after a space, as the scripts split a spec",
            "  spec += text(w);",
            *([f"  keys.push_back(w.{word.key});"] if word.key else []),
            "}",
        ]
    out.append("}  // namespace rlb::leaderboard::word")
    return "\n".join(out) + "\n"


def _cpp_string(text: str) -> str:
    """``text`` as a C++ raw string literal (split where it would hold its own delimiter)."""
    delimiter = "lua"
    if f'){delimiter}"' in text:
        raise GenerateError(f'a script holds ){delimiter}", the end of its C++ literal')
    return f'R"{delimiter}({text}){delimiter}"'


def scripts_cpp(scripts: list[Script]) -> str:
    out = [
        "// Generated by cpp/leaderboard/scripts/generate.py from cpp/leaderboard/scripts/*.lua.",
        "// Do not edit.",
        '#include "leaderboard/scripts.hpp"',
        "",
        "namespace rlb::leaderboard::scripts {",
    ]
    for script in scripts:
        out.append(
            f'extern const Script {script.name}{{"{script.name}", {_cpp_string(script.body)}, '
            f'"{script.sha1}"}};'
        )
    out.append("}  // namespace rlb::leaderboard::scripts")
    return "\n".join(out) + "\n"


def scripts_hpp(scripts: list[Script]) -> str:
    out = [
        "// The server-side scripts of cpp/leaderboard/scripts/*.lua, embedded at build time.",
        "// Generated by cpp/leaderboard/scripts/generate.py. Do not edit.",
        "#pragma once",
        "",
        "#include <string>",
        "#include <string_view>",
        "#include <vector>",
        "",
        "namespace rlb::leaderboard {",
        "",
        "struct Script {",
        "  std::string_view name;",
        "  std::string_view body;  // its #!lua line, the lib/ helpers it uses, then its text",
        "  std::string_view sha1;  // hex, as EVALSHA wants it",
        "};",
        "",
        "// One command. With a script, argv is {numkeys, keys..., args...} and it is sent as",
        "// EVALSHA (EVAL after a NOSCRIPT reply); otherwise argv is the whole command.",
        "struct Command {",
        "  const Script* script = nullptr;",
        "  std::vector<std::string> argv;",
        "};",
        "",
        "namespace scripts {",
    ]
    for script in scripts:
        out += _comment(f"{script.name}.lua: {script.summary}")
        out.append(f"extern const Script {script.name};")
    out += ["}  // namespace scripts", "", "}  // namespace rlb::leaderboard"]
    return "\n".join(out) + "\n"


def _shapes(scripts: list[Script]) -> dict[str, str]:
    """Each declared name's C++ shape ("one": a string, "rest": a list), the same everywhere."""
    shapes: dict[str, str] = {}
    where: dict[str, str] = {}
    for script in scripts:
        for call in script.calls:
            for param in call.keys + call.args:
                shape = "rest" if param.kind == "rest" else "one"
                if shapes.setdefault(param.name, shape) != shape:
                    raise GenerateError(
                        f"{script.name}.lua: {param.name} is a list here and a string in "
                        f"{where[param.name]}.lua (or the other way round): a name means one "
                        "thing"
                    )
                where.setdefault(param.name, script.name)
    return dict(sorted(shapes.items()))


def script_args_hpp(scripts: list[Script]) -> str:
    out = _header(
        "The named arguments of the scripts' calls (see script_calls.hpp), one type per name"
        " declared in cpp/leaderboard/scripts/*.lua.",
        ["string", "utility", "vector"],
        "rlb::leaderboard::arg",
    )
    for name, shape in _shapes(scripts).items():
        value = "std::vector<std::string>" if shape == "rest" else "std::string"
        out += [
            f"struct {name} {{",
            f"  explicit {name}({value} v) : value(std::move(v)) {{}}",
            f"  {value} value;",
            "};",
        ]
    out.append("}  // namespace rlb::leaderboard::arg")
    return "\n".join(out) + "\n"


def script_calls_hpp(scripts: list[Script]) -> str:
    out = _header(
        "One function per declared call of a script: its EVALSHA, built from named arguments in"
        " the order its declaration gives (cpp/leaderboard/scripts/<name>.lua; a script of"
        " several calls has one per call, <script>_<call>).",
        [
            "cstddef",
            "optional",
            "string",
            "utility",
            "vector",
            "leaderboard/script_args.hpp",
            "leaderboard/scripts.hpp",
        ],
        "rlb::leaderboard::calls",
    )
    out += [
        "",
        "// The index in a built Command's argv (numkeys, the KEYS, the ARGV) of ARGV's n-th (from",
        "// 0) argument: with the argv_n constants below, an argument found by its name.",
        "inline std::size_t argv_index(const Command& command, std::size_t n) {",
        "  return 1 + static_cast<std::size_t>(std::stoul(command.argv.at(0))) + n;",
        "}",
    ]
    for script in scripts:
        abouts = {p.name: p.about for c in script.calls for p in c.keys + c.args if p.about}
        for function, word, keys, args in script.signatures():
            params = [
                f"std::optional<arg::{p.name}> {p.name} = std::nullopt"
                if p.kind == "optional"
                else f"arg::{p.name} {p.name}"
                for p in keys + args
            ]
            about = next((c.about for c in script.calls if c.name == word and c.about), "")
            out += ["", *_comment(f"{script.name}.lua: {about or script.summary}")]
            for p in keys + args:
                if p.name in abouts:
                    out += _comment(f"{p.name}: {abouts[p.name]}")
            out.append(f"inline Command {function}({', '.join(params)}) {{")
            fixed_keys = sum(1 for p in keys if p.kind == "one")
            rest_key = next((p for p in keys if p.kind == "rest"), None)
            count = str(fixed_keys) + (f" + {rest_key.name}.value.size()" if rest_key else "")
            size = f"1 + {count} + {(1 if word else 0) + sum(1 for p in args if p.kind != 'rest')}"
            for p in args:
                if p.kind == "rest":
                    size += f" + {p.name}.value.size()"
            out += [
                f"  Command out{{&scripts::{script.name}, {{}}}};",
                f"  out.argv.reserve({size});",
                f"  out.argv.push_back(std::to_string({count}));",
            ]
            for i, p in enumerate(keys + args):
                if word and i == len(keys):
                    out.append(f'  out.argv.emplace_back("{word}");')
                if p.kind == "rest":
                    out.append(
                        f"  for (auto& v : {p.name}.value) out.argv.push_back(std::move(v));"
                    )
                elif p.kind == "optional":
                    out += [
                        f"  if (!{p.name}) return out;",
                        f"  out.argv.push_back(std::move({p.name}->value));",
                    ]
                else:
                    out.append(f"  out.argv.push_back(std::move({p.name}.value));")
            if word and not args:
                out.append(f'  out.argv.emplace_back("{word}");')
            out += ["  return out;", "}"]
            fixed = list(itertools.takewhile(lambda p: p.kind != "rest", args))
            if fixed:
                first = 1 if word else 0
                out.append(f"namespace argv_n::{function} {{  // where its arguments stand in ARGV")
                out += [
                    f"constexpr std::size_t {p.name} = {first + i};" for i, p in enumerate(fixed)
                ]
                out.append(f"}}  // namespace argv_n::{function}")
    out.append("}  // namespace rlb::leaderboard::calls")
    return "\n".join(out) + "\n"


_TYPE_NAMES = {"fields": "Fields", "records": "Records", **{t: t.capitalize() for t in REPLY_TYPES}}


def script_table_hpp() -> str:
    """C++ for the table of declared calls (script_table.cpp): what a call built by name sends,
    and how its reply is read."""
    out = _header(
        "The scripts' calls that declare their reply, by name: their keys, arguments and reply"
        " (`--: KEYS`, `--: ARGV`, `--: REPLY` in cpp/leaderboard/scripts/*.lua), for a call"
        " built by name (leaderboard/script_call.hpp); the other calls C++ builds itself"
        " (script_calls.hpp).",
        ["cstdint", "string_view", "leaderboard/scripts.hpp"],
        "rlb::leaderboard::table",
    )
    out += [
        "",
        "enum class Kind : std::uint8_t { One, Optional, Rest };",
        "struct Param {",
        "  const char* name;",
        "  Kind kind;",
        "};",
        "",
        "// What a reply (or one of its parts) is: an array of fields (a record), a flat array of",
        "// repeated fields (a list of records), or one value (generate.py's REPLY_TYPES).",
        "enum class Type : std::uint8_t {",
        "  " + ", ".join(_TYPE_NAMES.values()),
        "};",
        "struct Node {",
        '  const char* name;  // its field\'s; "": the reply itself',
        "  Type type;",
        "  bool optional;  // nil (Lua's false) is None",
        "  std::uint16_t first, count;  // Fields, Records: kNodes[first, first + count)",
        "  std::int16_t arg;  // Submit: the index in the call's arguments of its player's",
        "};",
        "",
        "struct Call {",
        '  const char* name;  // "<script>", or "<script>.<call>" for a script of several calls',
        "  const Script* script;",
        '  const char* word;  // "", or the call\'s word (ARGV[1])',
        "  const Param* keys;",
        "  std::uint16_t key_count;",
        "  const Param* args;  // after the word",
        "  std::uint16_t arg_count;",
        "  const Node* reply;  // its declared reply",
        "  std::int16_t user_arg;  // the index in args of the player its reply's submit names; -1",
        "};",
        "",
        "extern const Node kNodes[];",
        '// The declared call `name` ("team.submit"); nullptr if there is none.',
        "const Call* find(std::string_view name);",
        "}  // namespace rlb::leaderboard::table",
    ]
    return "\n".join(out) + "\n"


def script_table_cpp(scripts: list[Script]) -> str:
    """The table of declared calls (see script_table_hpp), sorted by name."""
    nodes: list[tuple[ReplyNode, int, int]] = []  # (node, first child, its arg index)
    calls: list[tuple[str, str, str, list[Param], list[Param], int]] = []
    users: dict[str, int] = {}  # the call's user_arg

    def place(node: ReplyNode, slot: int, args: list[Param]) -> None:
        first = len(nodes) if node.children else 0
        nodes.extend([(node, 0, -1)] * len(node.children))
        arg = [p.name for p in args].index(node.arg) if node.arg else -1
        nodes[slot] = (node, first, arg)
        for i, child in enumerate(node.children):
            place(child, first + i, args)

    for script in scripts:
        for _, word, keys, args, reply in script.declared_calls():
            if reply is None:  # built by C++ only
                continue
            root = len(nodes)
            nodes.append((reply, 0, -1))
            place(reply, root, args)
            name = f"{script.name}.{word}" if word else script.name
            calls.append((name, script.name, word, keys, args, root))
            submits = [n for n in [reply, *reply.children] if n.type == "submit"]
            users[name] = [p.name for p in args].index(submits[0].arg) if submits else -1
    calls.sort()
    kinds = {"one": "One", "optional": "Optional", "rest": "Rest"}
    out = [
        "// Generated by cpp/leaderboard/scripts/generate.py from cpp/leaderboard/scripts/*.lua.",
        "// Do not edit.",
        '#include "leaderboard/script_table.hpp"',
        "",
        "#include <algorithm>",
        "#include <iterator>",
        "#include <string_view>",
        "",
        "namespace rlb::leaderboard::table {",
        "namespace {",
    ]
    for i, (name, _, _, keys, args, _) in enumerate(calls):
        for label, params in (("keys", keys), ("args", args)):
            if params:
                items = ", ".join(f'{{"{p.name}", Kind::{kinds[p.kind]}}}' for p in params)
                out.append(f"constexpr Param {label}_{i}[] = {{{items}}};  // {name}")
    out += ["}  // namespace", ""]
    out.append("extern const Node kNodes[] = {")
    for node, first, arg in nodes:
        out.append(
            f'    {{"{node.name}", Type::{_TYPE_NAMES[node.type]}, '
            f"{'true' if node.optional else 'false'}, {first}, {len(node.children)}, {arg}}},"
        )
    if not nodes:
        out.append('    {"", Type::Int, false, 0, 0, -1},')
    out += ["};", "", "namespace {", "const Call kCalls[] = {"]
    if not calls:
        out.append('    {"", nullptr, "", nullptr, 0, nullptr, 0, nullptr, -1},')
    for i, (name, script, word, keys, args, root) in enumerate(calls):
        key_list = f"keys_{i}, {len(keys)}" if keys else "nullptr, 0"
        arg_list = f"args_{i}, {len(args)}" if args else "nullptr, 0"
        out.append(
            f'    {{"{name}", &scripts::{script}, "{word}", {key_list}, {arg_list}, '
            f"&kNodes[{root}], {users[name]}}},"
        )
    out += [
        "};",
        "}  // namespace",
        "",
        "const Call* find(std::string_view name) {",
        "  const auto* end = std::end(kCalls);",
        "  auto before = [](const Call& c, std::string_view n) { return c.name < n; };",
        "  const auto* at = std::lower_bound(std::begin(kCalls), end, name, before);",
        "  return at != end && at->script != nullptr && at->name == name ? at : nullptr;",
        "}",
        "}  // namespace rlb::leaderboard::table",
    ]
    return "\n".join(out) + "\n"


def write_if_changed(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.read_text() == text:
        return
    partial = path.with_suffix(path.suffix + ".new")
    partial.write_text(text)
    partial.replace(path)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(f"usage: {argv[0]} <scripts folder> <output folder>", file=sys.stderr)
        return 2
    folder, output = Path(argv[1]), Path(argv[2])
    words: list[Word] = []
    consts: list[Const] = []
    try:
        scripts = build_all(folder, words, consts)
    except GenerateError as error:
        print(f"generate.py: {error}", file=sys.stderr)
        return 1
    write_if_changed(output / "scripts.cpp", scripts_cpp(scripts))
    try:
        args_hpp, calls_hpp = script_args_hpp(scripts), script_calls_hpp(scripts)
    except GenerateError as error:
        print(f"generate.py: {error}", file=sys.stderr)
        return 1
    write_if_changed(output / "leaderboard" / "scripts.hpp", scripts_hpp(scripts))
    write_if_changed(output / "leaderboard" / "script_args.hpp", args_hpp)
    write_if_changed(output / "leaderboard" / "script_calls.hpp", calls_hpp)
    write_if_changed(output / "leaderboard" / "script_words.hpp", script_words_hpp(words))
    write_if_changed(output / "leaderboard" / "script_constants.hpp", script_constants_hpp(consts))
    write_if_changed(output / "leaderboard" / "script_table.hpp", script_table_hpp())
    write_if_changed(output / "script_table.cpp", script_table_cpp(scripts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
