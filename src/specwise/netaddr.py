"""Whether a host names this machine's loopback: the one test behind every "loopback only unless you opt in"
(``monitor --serve``/``--serve-metrics``, a launch file's ``--host``, a Ray cluster's address)."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """``localhost``, or an IP address in a loopback range: all of 127.0.0.0/8, ``::1`` however written (also in
    brackets, ``[::1]``) and an IPv4-mapped loopback (``::ffff:127.0.0.1``). A wildcard (``0.0.0.0``, ``::``) or
    any other name is not: a name can resolve anywhere."""
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host.lower() == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:  # a host name
        return False
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)
