"""User-facing errors.

Every mistake a user can make (unknown model, malformed file, impossible setting) raises
:class:`SpecwiseError` with a one-line message that says what is wrong and, where possible,
what to do instead. The CLI prints that line and exits non-zero; it never shows a traceback
for a ``SpecwiseError``.
"""

import datetime
import json
import math
import re
from collections.abc import Mapping
from typing import Literal


class SpecwiseError(Exception):
    """An error caused by the user's input, reported as one clear line."""


class NegativeAnswer(SpecwiseError):
    """Valid input whose answer is "no" -- the pair is incompatible, the deployment does not fit -- found where the
    command cannot go on to its report: one line, as an input error, but exit 1 ("the answer is no"), as
    ``check-pair`` and ``plan-memory`` give for the same answer when they can report it."""


class SpecError(SpecwiseError, ValueError):
    """An invalid value in a spec dataclass (raised from ``__post_init__``; names the field)."""


class FieldNames:
    """How the caller names a setting in its messages: a command-line flag (``--max-model-len 4096``) or a field
    of a file (``[deployment].max_model_len = 4096``). Library code that validates a request phrases its errors
    through this, so a TOML user never reads about flags and a CLI user never about tables."""

    def __init__(self, tables: dict[str, str] | None = None, default_table: str = "") -> None:
        self.tables = tables or {}
        self.default_table = default_table

    @property
    def is_file(self) -> bool:
        return bool(self.tables or self.default_table)

    def name(self, field: str) -> str:
        if not self.is_file:
            return "--" + field.replace("_", "-")
        return f"{self.tables.get(field, self.default_table)}.{field}"

    def setting(self, field: str, value: object) -> str:
        return f"{self.name(field)} = {value}" if self.is_file else f"{self.name(field)} {value}"


CLI_FLAGS = FieldNames()


def as_written(value: object, syntax: Literal["toml", "json"] = "toml") -> str:
    """``value``, read from a user's TOML (or JSON) file, as that file writes it, for a message's "got ...": true and
    false, a TOML date as 1979-05-27, a table as "a table" (a JSON object as "an object"), JSON's null and NaN, a
    list item by item; a string or a number as its repr, which both write alike ('x' is a TOML literal string)
    -- never Python's True, datetime.date(1979, 5, 27) or {'name': 'H100'}."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, datetime.date | datetime.time):  # a datetime is a date
        return value.isoformat()
    if isinstance(value, Mapping):
        return "a table" if syntax == "toml" else "an object"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(as_written(v, syntax) for v in value) + "]"
    if syntax == "json" and isinstance(value, float) and not math.isfinite(value):
        return json.dumps(value)  # NaN, Infinity: how Python's json reads them
    return repr(value)


def redact_url(url: str) -> str:
    """The URL with any ``user:password@`` replaced by ``***@`` (``user:pass@host/...`` without a scheme too) and
    the value of every secret-looking query parameter (``?token=...``, ``api_key``, ``password``...; an
    authenticating proxy's) by ``***``: for messages, logs and stored results."""
    if "://" not in url:
        authority, sep, rest = url.partition("/")
        url = "***@" + authority.rpartition("@")[2] + sep + rest if "@" in authority else url
    return redact_text(url)


_USERINFO_IN_TEXT = re.compile(r"(?<=://)[^/\s@\"']+@")  # within one URL: never across a JSON string's quotes
# The value of a query parameter whose name says it is a credential. A long word (token, secret, password,
# signature...) may end any name (access_token, authToken, X-Amz-Signature); a short one (key, sig, auth, pwd,
# session) must be the whole name or follow a separator (api_key, x-auth), so monkey= and turkey= are left alone.
_LONG_SECRET_NAMES = r"token|secret|passw(?:or)?d|credentials?|signature|bearer|jwt|apikey|session[_.-]?id"
_SHORT_SECRET_NAMES = r"key|sig|auth|pwd|session"
_SECRET_NAME = rf"(?:[\w.-]*(?:{_LONG_SECRET_NAMES})|(?:[\w.-]*[_.-])?(?:{_SHORT_SECRET_NAMES}))"
# The value ends where a URL's query value must (& # ;), at blanks, and at double quotes, angle brackets and
# backslashes, which a URL carries only %-encoded: a URL inside JSON or HTML keeps its closing quote (review s45a:
# monitor's JSON lines lost their '",' to the mask). A single quote is legal in a value, so it is masked with the rest
# (review s45d: "abc'def" left "def"). Punctuation that ends a URL in prose ("URL: HTTP 403", "URL.") stays outside
# the mask, and a value already masked (*** and then its end) stays as it is, so masking twice changes nothing.
_END = r"[&#;\s\"<>\\]"
_SECRET_QUERY = re.compile(
    rf"([?&;#]{_SECRET_NAME}=)(?:\*\*\*(?=[:.,)]*(?:{_END}|$))|[^&#;\s\"<>\\]*?(?=[:.,)]*(?:{_END}|$)))",
    re.IGNORECASE,
)


def redact_text(text: str) -> str:
    """Every URL userinfo (``user:password@``) in free ``text`` (an exception message, a URL) replaced by ``***@``
    and every secret-looking query value (:func:`redact_url`) by ``***``."""
    return _SECRET_QUERY.sub(r"\1***", _USERINFO_IN_TEXT.sub("***@", text))
