"""Every gateway profile, through the three real SDKs: what the client sees, and what the lab recorded.

Each test sends one request over the cap per wire (anthropic, openai, bedrock) and one under it.
"""

from __future__ import annotations

import anthropic
import openai
import pytest
from botocore.exceptions import ClientError, ConnectionClosedError

CAP = 2048
OVER = "x" * 4096


def over_cap_all_wires(sdk):
    """Send an over-cap request on each wire; return what each raised (or returned)."""
    outcomes = []
    for ask in (sdk.ask_anthropic, sdk.ask_openai, sdk.ask_bedrock):
        try:
            outcomes.append(ask(OVER))
        except Exception as exc:  # the point of the test is what is raised
            outcomes.append(exc)
    return outcomes


def assert_under_cap_passes(sdk, lab):
    before = len(lab.requests())
    assert "You said: “small”" in sdk.ask_anthropic("small").content[0].text
    assert lab.requests()[before]["verdict"] == "passed"


def bedrock_error(exc):
    assert isinstance(exc, ClientError), exc
    return exc.response["Error"], exc.response["ResponseMetadata"]


def verdicts(lab):
    return [(r["verdict"], r["status"]) for r in lab.requests()]


def test_nginx_413_html(sdk, lab):
    lab.configure(gateway="nginx", cap=CAP)
    a, o, b = over_cap_all_wires(sdk)
    assert isinstance(a, anthropic.ContentTooLargeError)
    assert str(a).startswith("<html>\r\n<head><title>413 Request Entity Too Large</title></head>")
    assert "<hr><center>nginx</center>" in str(a) and a.response.headers["server"] == "nginx"
    assert type(o) is openai.APIStatusError and o.status_code == 413 and str(o) == "Error code: 413"
    assert "413 Request Entity Too Large" in o.response.text and o.response.headers["connection"] == "close"
    error, meta = bedrock_error(b)
    assert (
        error["Code"] == "413"
        and "<center><h1>413 Request Entity Too Large</h1></center>" in error["Message"]
    )
    assert meta["HTTPHeaders"]["server"] == "nginx" and meta["HTTPStatusCode"] == 413
    assert verdicts(lab) == [("blocked:nginx-413", 413)] * 3
    assert [r["bytes"] > CAP for r in lab.requests()] == [True] * 3
    assert_under_cap_passes(sdk, lab)


def test_cloudflare_403_block_page(sdk, lab):
    lab.configure(gateway="cloudflare", cap=CAP)
    a, o, b = over_cap_all_wires(sdk)
    assert isinstance(a, anthropic.PermissionDeniedError) and "Sorry, you have been blocked" in str(a)
    assert a.response.headers["server"] == "cloudflare" and a.response.headers["cf-ray"].endswith("-SJC")
    assert isinstance(o, openai.PermissionDeniedError) and o.response.headers["cf-ray"]
    assert "Cloudflare Ray ID" in o.body
    error, meta = bedrock_error(b)
    assert error["Code"] == "403" and error["Message"].startswith("<!DOCTYPE html>")
    assert meta["HTTPHeaders"]["cf-ray"] and meta["HTTPHeaders"]["server"] == "cloudflare"
    rays = {a.response.headers["cf-ray"], o.response.headers["cf-ray"], meta["HTTPHeaders"]["cf-ray"]}
    assert len(rays) == 3  # one ray per request
    assert verdicts(lab) == [("blocked:cloudflare-403", 403)] * 3
    assert_under_cap_passes(sdk, lab)


def test_akamai_access_denied(sdk, lab):
    lab.configure(gateway="akamai", cap=CAP)
    a, o, b = over_cap_all_wires(sdk)
    assert isinstance(a, anthropic.PermissionDeniedError) and "Access Denied" in str(a)
    assert "Reference&#32;&#35;18&#46;" in str(a) and a.response.headers["server"] == "AkamaiGHost"
    assert isinstance(o, openai.PermissionDeniedError) and "errors&#46;edgesuite&#46;net" in o.body
    error, meta = bedrock_error(b)
    assert error["Code"] == "403" and "Access Denied" in error["Message"]
    assert meta["HTTPHeaders"]["server"] == "AkamaiGHost"
    assert verdicts(lab) == [("blocked:akamai-403", 403)] * 3
    assert_under_cap_passes(sdk, lab)


def test_modsecurity_413_over_the_body_limit(sdk, lab):
    """Issue 36: as Debian's Apache + ModSecurity answer a body over SecRequestBodyNoFilesLimit — a 413 with
    Apache's stock page, not a 403 naming ModSecurity."""
    lab.configure(gateway="modsecurity", cap=CAP)
    a, o, b = over_cap_all_wires(sdk)
    assert (
        isinstance(a, anthropic.APIStatusError)
        and a.status_code == 413
        and "Request Entity Too Large" in str(a)
    )
    assert a.response.headers["server"].startswith("Apache/2.4")
    assert (
        isinstance(o, openai.APIStatusError) and o.status_code == 413 and "capacity limit" in o.response.text
    )
    error, meta = bedrock_error(b)
    assert meta["HTTPStatusCode"] == 413
    assert verdicts(lab) == [("blocked:modsecurity-413", 413)] * 3
    assert_under_cap_passes(sdk, lab)


def test_aws_waf_403_through_an_alb(sdk, lab):
    lab.configure(gateway="aws-waf", cap=CAP)
    a, o, b = over_cap_all_wires(sdk)
    assert isinstance(a, anthropic.PermissionDeniedError) and "<h1>403 Forbidden</h1>" in str(a)
    assert a.response.headers["server"] == "awselb/2.0"
    assert isinstance(o, openai.PermissionDeniedError) and o.response.headers["server"] == "awselb/2.0"
    assert o.response.headers["content-type"] == "text/html"
    error, meta = bedrock_error(b)
    assert error["Code"] == "403" and "403 Forbidden" in error["Message"]
    assert meta["HTTPHeaders"]["server"] == "awselb/2.0"
    assert verdicts(lab) == [("blocked:aws-waf-403", 403)] * 3
    assert_under_cap_passes(sdk, lab)


def test_header_431_judges_the_headers_not_the_body(sdk, lab):
    """As Node, Envoy and Kestrel do: 431 when the header block is over the cap; any body passes."""
    lab.configure(gateway="header-431", cap=CAP)
    big_body = sdk.ask_anthropic("x" * (64 * CAP))  # a body far over the cap: headers are small, it passes
    assert "You said" in big_body.content[0].text
    token = "t" * (2 * CAP)  # a long gateway token in a custom header
    outcomes = []
    for ask in (sdk.ask_anthropic, sdk.ask_openai):
        try:
            outcomes.append(ask("small", extra_headers={"x-gateway-token": token}))
        except Exception as exc:  # the point of the test is what is raised
            outcomes.append(exc)
    a, o = outcomes
    assert isinstance(a, anthropic.RequestHeaderFieldsTooLargeError) and a.status_code == 431
    assert type(o) is openai.APIStatusError and o.status_code == 431 and o.response.content == b""
    assert o.response.headers["connection"] == "close"
    assert verdicts(lab) == [("passed", 200), ("blocked:header-431", 431), ("blocked:header-431", 431)]
    assert all(r["header_bytes"] > CAP for r in lab.requests()[1:])
    assert_under_cap_passes(sdk, lab)


def test_reset_after_part_of_the_body(sdk, lab):
    lab.configure(gateway="reset", cap=CAP)
    a, o, b = over_cap_all_wires(sdk)
    for exc in (a, o):
        assert type(exc).__name__ == "APIConnectionError" and str(exc) == "Connection error."
        assert "Connection reset by peer" in str(exc.__cause__)
        assert len(exc.request.content) > CAP  # what the client tried to send
    assert isinstance(b, ConnectionClosedError) and "reset" in repr(b.kwargs["error"]).lower()
    assert verdicts(lab) == [("reset", None)] * 3
    assert_under_cap_passes(sdk, lab)


def test_captive_portal_html_200(sdk, lab):
    lab.configure(gateway="html-200", cap=CAP)
    a, o, b = over_cap_all_wires(sdk)
    assert isinstance(a, str) and "Please sign in to continue" in a  # create() returns the page
    assert isinstance(o, str) and o.startswith("<!DOCTYPE html>")
    assert isinstance(b, dict) and "output" not in b and b["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert b["ResponseMetadata"]["HTTPHeaders"]["content-type"] == "text/html"
    assert verdicts(lab) == [("blocked:html-200", 200)] * 3
    assert_under_cap_passes(sdk, lab)
    lab.configure(cap=None)  # a captive portal's default: every request
    assert isinstance(sdk.ask_anthropic("small"), str)


def test_api_gateway_413_and_403_json(sdk, lab):
    lab.configure(gateway="apigw", cap=CAP)
    a, o, b = over_cap_all_wires(sdk)
    assert isinstance(a, anthropic.ContentTooLargeError) and a.body == {"message": "Request Too Long"}
    assert a.response.headers["x-amzn-ErrorType"] == "RequestEntityTooLargeException"
    assert (
        type(o) is openai.APIStatusError
        and o.status_code == 413
        and o.body == {"message": "Request Too Long"}
    )
    error, meta = bedrock_error(b)
    assert error == {"Code": "RequestEntityTooLargeException", "Message": "Request Too Long"}
    assert meta["HTTPStatusCode"] == 413
    assert verdicts(lab) == [("blocked:apigw-413", 413)] * 3
    assert_under_cap_passes(sdk, lab)
    lab.configure(gateway="apigw-waf")
    lab.clear_requests()
    a, o, b = over_cap_all_wires(sdk)
    assert isinstance(a, anthropic.PermissionDeniedError) and a.body == {"message": "Forbidden"}
    assert isinstance(o, openai.PermissionDeniedError)
    assert bedrock_error(b)[0]["Code"] == "ForbiddenException"
    assert verdicts(lab) == [("blocked:apigw-waf-403", 403)] * 3


def test_no_gateway_with_a_cap_gives_the_providers_own_413(sdk, lab):
    lab.configure(gateway="none", cap=CAP)
    a, o, b = over_cap_all_wires(sdk)
    assert isinstance(a, anthropic.ContentTooLargeError) and a.type == "request_too_large"
    assert type(o) is openai.APIStatusError and o.code == "request_too_large"
    assert bedrock_error(b)[0]["Code"] == "RequestEntityTooLargeException"
    assert verdicts(lab) == [("blocked:provider-413", 413)] * 3
    assert_under_cap_passes(sdk, lab)


def test_the_gateway_answers_before_the_model(sdk, lab):
    """A blocked request is never a model request: it does not use up a scheduled fault."""
    lab.configure(gateway="nginx", cap=CAP, faults="429@1")
    with pytest.raises(anthropic.ContentTooLargeError):
        sdk.ask_anthropic(OVER)
    with pytest.raises(anthropic.RateLimitError):
        sdk.ask_anthropic("small")
    assert [r["verdict"] for r in lab.requests()] == ["blocked:nginx-413", "fault:429"]
    assert "input_tokens" not in lab.requests()[0]  # the model side never parsed it
    # token counting (bulkhead probe's free request) sits behind the same gateway
    with pytest.raises(anthropic.ContentTooLargeError):
        sdk.anthropic.messages.count_tokens(model="lab-1", messages=[{"role": "user", "content": OVER}])
    assert (
        sdk.anthropic.messages.count_tokens(
            model="lab-1", messages=[{"role": "user", "content": "s"}]
        ).input_tokens
        == 1
    )
