"""Gateway profiles: what stands in front of the model and how it enforces a body cap.

The gateway answers BEFORE the model sees the request, for every path but ``/_lab/*``. A request is
over the cap when its body (Content-Length, or the bytes read for a chunked body) is larger than the cap;
a cap of 0 means every request. Without ``--cap`` each profile uses the limit the real thing defaults to:

=============  ===========  ==========================================================================
profile        default cap  answer to a request over the cap
=============  ===========  ==========================================================================
none           no cap       (with --cap) the provider's own 413 JSON, in the wire format of the request
nginx          1 MiB        413 HTML exactly as nginx writes it, ``Server: nginx`` (answers on the
                            Content-Length, before reading the body, like nginx)
cloudflare     100 MiB      403 "Sorry, you have been blocked" page, ``server: cloudflare``, ``cf-ray``
akamai         1 MiB        403 "Access Denied … Reference #18.…", ``server: AkamaiGHost``
modsecurity    128 KiB      413 with Apache's stock page (SecRequestBodyNoFilesLimit), ``Server: Apache``;
                            and under the cap it judges content: a body whose JSON strings match one of a
                            handful of CRS-like patterns (SQL tautology, shell injection, PHP, path
                            traversal: app/lab/content_rules.py) gets Apache's stock 403, the deciding rule
                            only in /_lab/requests
aws-waf        8 KiB        403 HTML from an ALB (``server: awselb/2.0``): WAF SizeRestrictions_BODY
header-431     16 KiB       431 Request Header Fields Too Large, empty body, as Node's HTTP server sends it —
                            the cap is on the request's HEADER block (request line + headers), not
                            the body: a long key or token, cookies, custom headers
reset          1 MiB        reads up to the cap, then resets the connection (RST: ECONNRESET)
html-200       every req.   a captive-portal sign-in page with status 200 and text/html
apigw          10 MiB       API Gateway 413 ``{"message":"Request Too Long"}``,
                            ``x-amzn-ErrorType: RequestEntityTooLargeException``
apigw-waf      8 KiB        API Gateway behind a WAF web ACL: 403 ``{"message":"Forbidden"}``
beta-refuse    no cap       400 ``Unexpected value(s) `…` for the `anthropic-beta` header`` (Anthropic's
                            JSON error) on any request carrying that header (a proxy that knows no beta)
beta-strip     no cap       removes the ``anthropic-beta`` header on the way: the Anthropic wire then
                            refuses the beta's body fields (``context_management: Extra inputs are not
                            permitted``), as the real API does
=============  ===========  ==========================================================================
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from app.lab import pages
from app.lab.http import Response, aws_request_id
from app.sizes import KIB, MIB


@dataclass(frozen=True)
class Profile:
    name: str
    default_cap: int | None
    cap_origin: str
    verdict: str
    description: str
    early: bool = False  # answers from Content-Length before reading the body
    headers: bool = False  # the cap is on the header block, not the body
    betas: str = ""  # "refuse": 400 on any `anthropic-beta` header; "strip": the header is removed on the way


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            "none",
            None,
            "no gateway",
            "blocked:provider-413",
            "no gateway; a cap gives the provider's own 413 JSON",
        ),
        Profile(
            "nginx",
            MIB,
            "nginx's default client_max_body_size",
            "blocked:nginx-413",
            "nginx 413 HTML",
            early=True,
        ),
        Profile(
            "cloudflare",
            100 * MIB,
            "Cloudflare's plan body limit",
            "blocked:cloudflare-403",
            "Cloudflare 403 block page with cf-ray",
        ),
        Profile(
            "akamai",
            MIB,
            "a typical Akamai WAF body rule",
            "blocked:akamai-403",
            "Akamai 403 Access Denied … Reference #",
        ),
        Profile(
            "modsecurity",
            128 * KIB,
            "ModSecurity's SecRequestBodyNoFilesLimit",
            "blocked:modsecurity-413",
            "Apache + ModSecurity: 413 over the body limit, 403 for content the CRS refuses",
        ),
        Profile(
            "aws-waf",
            8 * KIB,
            "AWS WAF SizeRestrictions_BODY",
            "blocked:aws-waf-403",
            "AWS WAF 403 through an ALB (awselb/2.0)",
        ),
        Profile(
            "header-431",
            16 * KIB,
            "Node's default max header size",
            "blocked:header-431",
            "431 Request Header Fields Too Large when the request's headers exceed the cap",
            headers=True,
        ),
        Profile(
            "reset",
            MIB,
            "a proxy that resets large uploads",
            "reset",
            "connection reset after reading part of the body",
        ),
        Profile(
            "html-200",
            0,
            "a captive portal answers every request",
            "blocked:html-200",
            "captive-portal HTML with status 200",
        ),
        Profile(
            "apigw",
            10 * MIB,
            "API Gateway's 10 MB payload limit",
            "blocked:apigw-413",
            "API Gateway 413 JSON (RequestEntityTooLargeException)",
        ),
        Profile(
            "beta-refuse",
            None,
            "a gateway that knows no Anthropic beta",
            "blocked:beta-400",
            "400 Unexpected value(s) … for the `anthropic-beta` header, on any request that carries one",
            betas="refuse",
        ),
        Profile(
            "beta-strip",
            None,
            "a gateway that drops headers it does not know",
            "passed",
            "removes the `anthropic-beta` header: the API then refuses the beta's body fields",
            betas="strip",
        ),
        Profile(
            "apigw-waf",
            8 * KIB,
            "AWS WAF on API Gateway",
            "blocked:apigw-waf-403",
            "API Gateway 403 Forbidden JSON",
        ),
    )
}


class UnknownProfile(ValueError):
    pass


def profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise UnknownProfile(f"unknown gateway profile {name!r} (profiles: {', '.join(PROFILES)})") from None


def effective_cap(name: str, cap: int | None) -> int | None:
    return cap if cap is not None else profile(name).default_cap


def over_cap(cap: int | None, nbytes: int) -> bool:
    return cap is not None and (cap == 0 or nbytes > cap)


@dataclass(frozen=True)
class GatewayContext:
    """What a page needs to know about the request, and a serial number for its deterministic ids."""

    host: str = "api.example.com"
    path: str = "/"
    client_ip: str = "127.0.0.1"
    serial: int = 0
    seed: int = 0

    def _hex(self) -> str:
        return hashlib.sha256(f"{self.seed}:{self.serial}".encode()).hexdigest()

    @property
    def ray_id(self) -> str:
        return f"{self._hex()[:16]}-SJC"

    @property
    def akamai_reference(self) -> str:
        h = self._hex()
        return f"18.{h[16:24]}.{1718000000 + self.serial}.{h[24:32]}"


def block_page(name: str, ctx: GatewayContext) -> Response:
    """The page profile `name` answers an over-cap request with (not for `none` and `reset`)."""
    if name == "nginx":
        return pages.nginx_413()
    if name == "cloudflare":
        return pages.cloudflare_block(ctx.host, ctx.ray_id, ctx.client_ip)
    if name == "akamai":
        return pages.akamai_denied(ctx.host, ctx.path, ctx.akamai_reference)
    if name == "modsecurity":
        return pages.modsecurity_413()
    if name == "aws-waf":
        return pages.aws_waf_403()
    if name == "header-431":
        return pages.header_431()
    if name == "html-200":
        return pages.captive_portal()
    if name == "apigw":
        return pages.apigw_413(aws_request_id(), ctx.ray_id[:16])
    if name == "apigw-waf":
        return pages.apigw_403(aws_request_id(), ctx.ray_id[:16])
    raise UnknownProfile(f"profile {name!r} has no block page")


def beta_refused(header: str) -> Response:
    """Anthropic's JSON error for betas it does not know, as a gateway or a backend without them answers."""
    from app.lab.http import json_response

    values = ", ".join(f"`{b.strip()}`" for b in header.split(",") if b.strip())
    return json_response(
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": f"Unexpected value(s) {values} for the `anthropic-beta` header. Please consult our "
                f"documentation at docs.anthropic.com or try again without the header.",
            },
        },
    )
