"""The console's 413 and 404 pages over HTTP, from the console served by uvicorn (ASGI,
with ``DJANGO_DEBUG`` as the environment has it: on by default, as ``make run`` does),
with CSRF checked as a browser meets it."""

from __future__ import annotations

import httpx
import pytest

from tests.helpers.threads import everything

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_start_input_over_the_upload_limit_is_the_consoles_413(web, cookies):
    with httpx.Client(base_url=web.url, cookies=cookies) as browser:
        assert browser.get("/").status_code == 200  # sets the CSRF cookie
        token = browser.cookies["csrftoken"]
        before = everything()

        response = browser.post(
            "/runs/start/",
            data={
                "csrfmiddlewaretoken": token,
                "graph": "expense_approval",
                "input": "x" * 3_000_000,
            },
            headers={"referer": f"{web.url}/"},
        )

    assert response.status_code == 413
    assert "The form is too large" in response.text
    assert "RequestDataTooBig" not in response.text
    assert everything() == before


def test_an_unknown_page_is_the_consoles_404(web, cookies):
    response = httpx.get(f"{web.url}/no/such/page/", cookies=cookies)

    assert response.status_code == 404
    assert "<h1>Not found</h1>" in response.text
    assert "URLconf" not in response.text


def test_a_visit_to_an_address_that_only_takes_a_form_is_the_consoles_405(web, cookies):
    """Served over ASGI, as ``make run`` serves it (the unit tests go through the WSGI
    path): a reloaded form's address is a page of the console, not an empty one."""
    response = httpx.get(f"{web.url}/runs/start/", cookies=cookies)

    assert response.status_code == 405
    assert response.headers["Allow"] == "POST"
    assert "<h1>Nothing to see at this address</h1>" in response.text
    assert '<nav aria-label="Main">' in response.text
