"""Checks of a setting's text, shared by the command line's flags and the Python API's arguments.

Each check takes the text (``"4"``, ``"0.9"``, ``"http://host:8000"``) and returns the value, or raises
:class:`ValueRefusal` saying what was expected. The CLI turns a refusal into argparse's one-line error naming the
flag (:func:`specwise.cli.common.argparse_type`); :mod:`specwise.api` names its argument instead.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from specwise.errors import redact_url


class ValueRefusal(ValueError):
    """A setting's text that its check refuses; the message says what was expected (the caller names the setting)."""


def bounded(
    cast: Callable[[str], Any],
    what: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> Callable[[str], Any]:
    """A check: ``cast`` the text and check ``low <= value <= high`` (``<`` on an open end)."""

    def parse(text: str) -> Any:
        try:
            value = cast(text)
        except ValueError:
            raise ValueRefusal(f"expected {what}, got {text!r}") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueRefusal(f"expected {what}, got {text!r} (not a finite number)")
        if value != value or (low is not None and (value < low or (low_open and value == low))):
            raise ValueRefusal(f"expected {what}, got {text!r}")
        if high is not None and (value > high or (high_open and value == high)):
            raise ValueRefusal(f"expected {what}, got {text!r}")
        return value

    return parse


positive_int = bounded(int, "a positive integer", low=1)
non_negative_int = bounded(int, "an integer >= 0", low=0)
seed_int = bounded(int, "an integer in 0..2**63-1", low=0, high=2**63 - 1)
fraction = bounded(float, "a number in (0, 1]", low=0.0, high=1.0, low_open=True)
probability = bounded(float, "a number in [0, 1]", low=0.0, high=1.0)
alert_rate = bounded(
    float,
    "an acceptance rate strictly between 0 and 1 (at 0 no replica would ever alert, at 1 every replica would)",
    low=0.0,
    high=1.0,
    low_open=True,
    high_open=True,
)
"""``--min-acceptance`` of ``monitor`` and ``export prometheus-rules``: the rate below which a replica alerts."""
non_negative_float = bounded(float, "a number >= 0", low=0.0)
positive_float = bounded(float, "a number > 0", low=0.0, low_open=True)


def http_url(text: str, form: str = "http://HOST:PORT") -> str:
    """An http(s) URL with a host and a valid port (userinfo allowed; never echoed); ``form`` is the shape its
    refusals ask for."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ValueRefusal(f"not a valid URL ({exc}); expected {form}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueRefusal(f"expected {form} (or https://...), got {redact_url(text)!r}")
    if port is not None and not 0 < port < 65536:
        raise ValueRefusal(f"port {port} is not in 1..65535")
    return text


_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-]*|\[?[0-9A-Fa-f:.]+\]?")


def host_address(text: str) -> str:
    """A host name, an IPv4 or an IPv6 address (what ``vllm serve --host`` binds); nothing a shell would read."""
    if len(text) > 253 or not _HOST.fullmatch(text):
        raise ValueRefusal(f"expected a host name or IP address, got {text!r}")
    return text.strip("[]")
