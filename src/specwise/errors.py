"""User-facing errors.

Every mistake a user can make (unknown model, malformed file, impossible setting) raises
:class:`SpecwiseError` with a one-line message that says what is wrong and, where possible,
what to do instead. The CLI prints that line and exits non-zero; it never shows a traceback
for a ``SpecwiseError``.
"""

import re


class SpecwiseError(Exception):
    """An error caused by the user's input, reported as one clear line."""


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


def redact_url(url: str) -> str:
    """The URL with any ``user:password@`` replaced by ``***@`` (for messages, logs and stored results)."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable URL>"
    if "@" not in parts.netloc:
        if "@" in url and not parts.netloc:  # "user:pass@host/..." (no "//"): hide up to the last "@"
            return "***@" + url.rsplit("@", 1)[1]
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, f"***@{host}", parts.path, parts.query, parts.fragment))


_USERINFO_IN_TEXT = re.compile(r"(?<=://)[^/\s@]+@")


def redact_text(text: str) -> str:
    """Every URL userinfo (``user:password@``) in free ``text`` (an exception message) replaced by ``***@``."""
    return _USERINFO_IN_TEXT.sub("***@", text)
