"""Checks for every field the demo accepts: each bad value becomes a ``BadRequest``
with a message meant for a person, before anything reaches the leaderboard.

Messages name a field by its label on the page (``LABELS``), so the page can show them as
they are; the error's ``field`` gives the API name."""

from __future__ import annotations

import math
import re
from typing import Any, Mapping, Optional

from .._redis_target import MAX_MAX_ENTRIES as MAX_MAX_ENTRIES  # the form's limit too

MAX_SCORE = 1e15  # integers stay exact in a double up to 2**53 (about 9e15)
MAX_COUNT = 1000
MAX_RANK = 1_000_000_000
MAX_USER_ID_CHARS = 200
MAX_NAME_CHARS = 100
MAX_DESCRIPTION_CHARS = 500

_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CONTROL_EXCEPT_WHITESPACE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


#: Each field's label on the page, which error messages use.
LABELS = {
    "user_id": "Player id",
    "score": "Score",
    "amount": "Amount",
    "name": "Name",
    "description": "Description",
    "max_entries": "Maximum entries",
    "count": "Count",
    "page": "Page",
    "page_size": "Page size",
    "bins": "Bins",
}


class BadRequest(Exception):
    """A request the demo refuses, with its HTTP status (4xx), a message and, when one field
    is at fault, that field's API name."""

    def __init__(self, message: str, status: int = 400, field: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.field = field

    def payload(self) -> dict[str, str]:
        """The JSON error body: ``{"error": message}``, plus ``"field"`` when known."""
        if self.field is None:
            return {"error": self.message}
        return {"error": self.message, "field": self.field}


def field_error(name: str, problem: str) -> BadRequest:
    """``problem`` (``"is required"``) about the field ``name``, in the page's words."""
    return BadRequest(f"{LABELS[name]} {problem}", field=name)


def positive_or_default(raw: Optional[str], default: int) -> int:
    """A query count as the guide reads it: ``int(raw)`` if that works and is at least 1,
    else ``default`` (missing, blank, ``abc``, ``2.5``, ``0`` and ``-3`` all give it)."""
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:  # also past Python's 4,300-digit limit for int(str)
        return default
    return value if value >= 1 else default


def number(fields: Mapping[str, Any], name: str) -> float:
    """A finite number within +-MAX_SCORE, from a JSON number or a decimal string."""
    value = fields.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise field_error(name, "is required")
    if isinstance(value, bool):
        raise field_error(name, "must be a number")
    if isinstance(value, str):
        text = value.strip()
        if len(text) > 64 or not _NUMBER.fullmatch(text):
            raise field_error(name, "must be a number, like 1200 or 12.5")
        result = float(text)
    elif isinstance(value, (int, float)):
        try:
            result = float(value)
        except OverflowError:
            result = math.inf
    else:
        raise field_error(name, "must be a number")
    if not math.isfinite(result) or abs(result) > MAX_SCORE:
        raise field_error(name, "must be a finite number between -1e15 and 1e15")
    return result + 0.0  # -0.0 -> 0.0


def integer(fields: Mapping[str, Any], name: str, *, minimum: int = 1, maximum: int) -> int:
    """A whole number in [minimum, maximum], from a JSON number or a decimal string."""
    value = fields.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise field_error(name, "is required")
    if isinstance(value, bool):
        raise field_error(name, "must be a whole number")
    if isinstance(value, str):
        text = value.strip()
        if len(text) > 32 or not _INTEGER.fullmatch(text):
            raise field_error(name, "must be a whole number")
        result = int(text)
    elif isinstance(value, int):
        result = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        result = int(value)
    else:
        raise field_error(name, "must be a whole number")
    if result < minimum:
        raise field_error(name, f"must be at least {minimum}")
    if result > maximum:
        raise field_error(name, f"must be at most {maximum:,}")
    return result


def text(
    fields: Mapping[str, Any],
    name: str,
    *,
    max_chars: int,
    required: bool = False,
    multiline: bool = False,
) -> str:
    """Trimmed text: valid Unicode, no control characters (tabs and newlines only where
    ``multiline``), at most ``max_chars`` characters. Missing and not required -> ``""``."""
    value = fields.get(name)
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise field_error(name, "must be text")
    value = value.strip()
    if required and not value:
        raise field_error(name, "is required")
    return check_text(value, name, max_chars=max_chars, multiline=multiline)


def check_text(value: str, name: str, *, max_chars: int, multiline: bool = False) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise field_error(name, "must be valid Unicode text") from None
    if len(value) > max_chars:
        raise field_error(name, f"must be at most {max_chars} characters")
    pattern = _CONTROL_EXCEPT_WHITESPACE if multiline else _CONTROL
    if pattern.search(value):
        raise field_error(name, "must not contain control characters")
    return value


def user_id(fields: Mapping[str, Any]) -> str:
    return text(fields, "user_id", max_chars=MAX_USER_ID_CHARS, required=True)


def path_user_id(value: str) -> str:
    """A user id taken from a URL path (already percent-decoded): not trimmed."""
    if not value:
        raise field_error("user_id", "must not be empty")
    return check_text(value, "user_id", max_chars=MAX_USER_ID_CHARS)


def name_and_description(fields: Mapping[str, Any]) -> tuple[str, str]:
    """The trimmed ``name`` and ``description``, each ``""`` when missing or blank."""
    name = text(fields, "name", max_chars=MAX_NAME_CHARS)
    description = text(fields, "description", max_chars=MAX_DESCRIPTION_CHARS, multiline=True)
    return name, description
