"""The pages gateways answer with, byte for byte as the real ones write them (pure functions).

Sources: nginx 1.22 (checked against a running nginx), the Cloudflare, Akamai, ALB/WAF, Mod_Security and
API Gateway captures in ``reference/error-vectors.jsonl``. Each function returns a complete `Response`;
ids (Cloudflare Ray, Akamai reference, request ids) are passed in so the functions stay pure.
"""

from __future__ import annotations

from app.lab.http import Response, json_body

CRLF = "\r\n"


def nginx_413() -> Response:
    """nginx's own 413 (client_max_body_size), `server_tokens off`: 176 bytes of CRLF-separated HTML."""
    body = CRLF.join(
        [
            "<html>",
            "<head><title>413 Request Entity Too Large</title></head>",
            "<body>",
            "<center><h1>413 Request Entity Too Large</h1></center>",
            "<hr><center>nginx</center>",
            "</body>",
            "</html>",
            "",
        ]
    )
    return Response(
        413,
        (("Server", "nginx"), ("Date", ""), ("Content-Type", "text/html")),
        body.encode("ascii"),
        close=True,
    )


def cloudflare_block(host: str, ray_id: str, client_ip: str = "127.0.0.1") -> Response:
    """Cloudflare's WAF block page ("Sorry, you have been blocked"), 403, with `cf-ray`."""
    ray = ray_id.split("-")[0]
    body = f"""<!DOCTYPE html>
<!--[if lt IE 7]> <html class="no-js ie6 oldie" lang="en-US"> <![endif]-->
<!--[if gt IE 8]><!--> <html class="no-js" lang="en-US"> <!--<![endif]-->
<head>
<title>Attention Required! | Cloudflare</title>
<meta charset="UTF-8" />
<meta http-equiv="Content-Type" content="text/html; charset=UTF-8" />
<meta name="robots" content="noindex, nofollow" />
<link rel="stylesheet" id="cf_styles-css" href="/cdn-cgi/styles/cf.errors.css" />
</head>
<body>
  <div id="cf-wrapper">
    <div id="cf-error-details" class="cf-error-details-wrapper">
      <div class="cf-wrapper cf-header cf-error-overview">
        <h1 data-translate="block_headline">Sorry, you have been blocked</h1>
        <h2 class="cf-subheadline"><span data-translate="unable_to_access">You are unable to access</span> {host}</h2>
      </div>
      <div class="cf-section cf-wrapper">
        <div class="cf-columns two">
          <div class="cf-column">
            <h2 data-translate="blocked_why_headline">Why have I been blocked?</h2>
            <p data-translate="blocked_why_detail">This website is using a security service to protect itself from online attacks. The action you just performed triggered the security solution. There are several actions that could trigger this block including submitting a certain word or phrase, a SQL command or malformed data.</p>
          </div>
          <div class="cf-column">
            <h2 data-translate="blocked_resolve_headline">What can I do to resolve this?</h2>
            <p data-translate="blocked_resolve_detail">You can email the site owner to let them know you were blocked. Please include what you were doing when this page came up and the Cloudflare Ray ID found at the bottom of this page.</p>
          </div>
        </div>
      </div>
      <div class="cf-error-footer cf-wrapper w-240 lg:w-full py-10 sm:py-4 sm:px-8 mx-auto text-center sm:text-left border-solid border-0 border-t border-gray-300">
        <p class="text-13">
          <span class="cf-footer-item sm:block sm:mb-1">Cloudflare Ray ID: <strong class="font-semibold">{ray}</strong></span>
          <span class="cf-footer-separator sm:hidden">&bull;</span>
          <span id="cf-footer-item-ip" class="cf-footer-item hidden sm:block sm:mb-1">Your IP: {client_ip}</span>
          <span class="cf-footer-separator sm:hidden">&bull;</span>
          <span class="cf-footer-item sm:block sm:mb-1"><span>Performance &amp; security by</span> <a rel="noopener noreferrer" href="https://www.cloudflare.com/5xx-error-landing" id="brand_link" target="_blank">Cloudflare</a></span>
        </p>
      </div>
    </div>
  </div>
</body>
</html>
"""
    headers = (
        ("content-type", "text/html; charset=UTF-8"),
        ("server", "cloudflare"),
        ("cf-ray", ray_id),
        (
            "cache-control",
            "private, max-age=0, no-store, no-cache, must-revalidate, post-check=0, pre-check=0",
        ),
        ("x-frame-options", "SAMEORIGIN"),
        ("referrer-policy", "same-origin"),
    )
    return Response(403, headers, body.encode("utf-8"), close=True)


def _akamai_escape(text: str) -> str:
    table = {
        ":": "&#58;",
        "/": "&#47;",
        ".": "&#46;",
        " ": "&#32;",
        "#": "&#35;",
        "?": "&#63;",
        "=": "&#61;",
        "&": "&#38;",
        "-": "&#45;",
    }
    return "".join(table.get(ch, ch) for ch in text)


def akamai_denied(host: str, path: str, reference: str) -> Response:
    """Akamai's "Access Denied … Reference #18.…" page (server AkamaiGHost), 403."""
    url = _akamai_escape(f"http://{host}{path}")
    ref = _akamai_escape(reference)
    body = (
        f"<HTML><HEAD>\n<TITLE>Access Denied</TITLE>\n</HEAD><BODY>\n<H1>Access Denied</H1>\n \n"
        f'You don\'t have permission to access "{url}" on this server.<P>\n'
        f"Reference&#32;&#35;{ref}\n"
        f"<P>https&#58;&#47;&#47;errors&#46;edgesuite&#46;net&#47;{ref}</P>\n</BODY>\n</HTML>\n"
    )
    headers = (
        ("server", "AkamaiGHost"),
        ("mime-version", "1.0"),
        ("content-type", "text/html"),
        ("expires", "0"),
        ("cache-control", "max-age=0, no-cache, no-store"),
        ("pragma", "no-cache"),
    )
    return Response(403, headers, body.encode("ascii"), close=True)


APACHE_SERVER = "Apache/2.4.71 (Debian)"
_APACHE_DOCTYPE = (
    '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN" "http://www.w3.org/TR/html4/strict.dtd">\n'
)


def modsecurity_413() -> Response:
    """Apache + ModSecurity refusing a body over SecRequestBodyNoFilesLimit: Apache's stock 413 page,
    byte for byte as Debian 12's Apache 2.4 sends it (ModSecurity itself is not named)."""
    body = (
        _APACHE_DOCTYPE + "<html><head>\n<title>413 Request Entity Too Large</title>\n</head><body>\n"
        "<h1>Request Entity Too Large</h1>\n"
        "The requested resource does not allow request data with POST requests, or the amount of data provided in\n"
        "the request exceeds the capacity limit.\n</body></html>\n"
    )
    return Response(
        413,
        (
            ("Server", APACHE_SERVER),
            ("Connection", "close"),
            ("Content-Type", "text/html; charset=iso-8859-1"),
        ),
        body.encode("latin-1"),
        close=True,
    )


def modsecurity_403(host: str = "") -> Response:
    """Apache + ModSecurity + CRS refusing content (an anomaly score over the threshold): Apache's stock 403
    page, as Debian 12 sends it — no rule, no ModSecurity, no ID in it."""
    body = (
        _APACHE_DOCTYPE + "<html><head>\n<title>403 Forbidden</title>\n</head><body>\n<h1>Forbidden</h1>\n"
        "<p>You don't have permission to access this resource.</p>\n</body></html>\n"
    )
    return Response(
        403,
        (("Server", APACHE_SERVER), ("Content-Type", "text/html; charset=iso-8859-1")),
        body.encode("latin-1"),
    )


def aws_waf_403() -> Response:
    """An AWS WAF block (e.g. SizeRestrictions_BODY) as an ALB sends it: `server: awselb/2.0`, HTML."""
    body = CRLF.join(
        [
            "<html>",
            "<head><title>403 Forbidden</title></head>",
            "<body>",
            "<center><h1>403 Forbidden</h1></center>",
            "</body>",
            "</html>",
            "",
        ]
    )
    return Response(
        403, (("server", "awselb/2.0"), ("content-type", "text/html")), body.encode("ascii"), close=True
    )


def header_431() -> Response:
    """431 Request Header Fields Too Large as Node's HTTP server sends it (checked against Node 20): no
    body, `Connection: close`, the request's body never read."""
    return Response(431, (), b"", close=True)


def captive_portal() -> Response:
    """A captive portal's sign-in page, served with status 200 where the API's JSON should be."""
    body = (
        "<!DOCTYPE html><html><head><title>Network Login</title></head><body>"
        "<h1>Please sign in to continue</h1><form action='/login'></form></body></html>"
    )
    return Response(
        200, (("content-type", "text/html"), ("cache-control", "no-store")), body.encode("ascii"), close=True
    )


def apigw_413(request_id: str, apigw_id: str) -> Response:
    """Amazon API Gateway's payload limit: 413 `{"message":"Request Too Long"}`."""
    return Response(
        413,
        (
            ("content-type", "application/json"),
            ("x-amzn-RequestId", request_id),
            ("x-amzn-ErrorType", "RequestEntityTooLargeException"),
            ("x-amz-apigw-id", apigw_id),
        ),
        json_body({"message": "Request Too Long"}),
        close=True,
    )


def apigw_403(request_id: str, apigw_id: str) -> Response:
    """API Gateway with a WAF web ACL attached: 403 `{"message":"Forbidden"}`."""
    return Response(
        403,
        (
            ("content-type", "application/json"),
            ("x-amzn-RequestId", request_id),
            ("x-amzn-ErrorType", "ForbiddenException"),
            ("x-amz-apigw-id", apigw_id),
        ),
        json_body({"message": "Forbidden"}),
        close=True,
    )
