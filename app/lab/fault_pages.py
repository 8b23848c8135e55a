"""Faults a gateway in front of the model answers with its own page (the lab stands in for a real Apache).

- ``html-400``: Apache's stock 400 page, as ModSecurity's rule 200002 answers a body it could not parse
  within its limits (more JSON values than ``SecArgumentsLimit``, 1,000 by default);
- ``408``: Apache's stock 408 page, as ``RequestReadTimeout`` answers an upload too slow for it.

Both come from the gateway, not the provider: an HTML page with ``Server: Apache``, never the wire format.
"""

from __future__ import annotations

from app.lab.http import Response

APACHE = "Apache/2.4.62 (Debian)"
PAGES = {
    "html-400": (
        400,
        "Bad Request",
        "<p>Your browser sent a request that this server could not understand.<br />\n</p>",
    ),
    "408": (408, "Request Timeout", "<p>Server timeout waiting for the HTTP request from the client.</p>"),
}
GATEWAY_FAULTS = tuple(PAGES)


def gateway_fault(kind: str, host: str = "127.0.0.1", port: int = 80) -> Response:
    status, title, text = PAGES[kind]
    body = (
        '<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">\n<html><head>\n'
        f"<title>{status} {title}</title>\n</head><body>\n<h1>{title}</h1>\n{text}\n<hr>\n"
        f"<address>{APACHE} Server at {host} Port {port}</address>\n</body></html>\n"
    )
    return Response(
        status,
        (("Server", APACHE), ("Content-Type", "text/html; charset=iso-8859-1"), ("Connection", "close")),
        body.encode("ascii"),
        close=True,
    )
