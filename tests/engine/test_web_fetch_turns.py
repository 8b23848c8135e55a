"""web_fetch in real turns against the lab (`!fetch URL`): ask mode asks before anything is sent, a deny rule
refuses without asking, an allow rule fetches a loopback address without asking."""

from __future__ import annotations

from tests.engine.test_permissions_lab import asker


async def test_ask_mode_asks_before_fetching_and_a_no_sends_nothing(make_harness, site):
    site.routes["/guide"] = (200, {"Content-Type": "text/plain"}, b"hello")
    approve = asker(False)
    h = make_harness(approver=approve, approval="ask")
    await h.engine.submit(f"!fetch {site.url}/guide")
    assert approve.asked and approve.asked[0][0] == "web_fetch"
    assert f"web_fetch {site.url}/guide" in approve.asked[0][1]
    assert site.requests == [] and h.session.master[2].tool_results[0].is_error


async def test_a_deny_rule_refuses_without_asking_and_an_allow_rule_fetches(make_harness, site):
    site.routes["/guide"] = (200, {"Content-Type": "text/plain"}, b"hello from the site")
    approve = asker(True)
    h = make_harness(
        approver=approve, approval="never-ask", permissions={"deny": ("WebFetch(domain:127.0.0.1)",)}
    )
    await h.engine.submit(f"!fetch {site.url}/guide")
    result = h.session.master[2].tool_results[0]
    assert approve.asked == [] and result.is_error and "WebFetch(domain:127.0.0.1)" in result.content
    assert site.requests == []

    h = make_harness(approver=approve, approval="ask", permissions={"allow": ("WebFetch(domain:127.0.0.1)",)})
    await h.engine.submit(f"!fetch {site.url}/guide")
    assert approve.asked == []
    assert h.session.master[2].tool_results[0].content.endswith("hello from the site")
