"""Sensitive values in a real browser: a viewer sees masks on the inspector and never the
value; a tenant admin reveals one value in place, and the reveal is on the audit trail."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from durable import engine
from durable.graphs import get_graph
from durable.models import Role
from durable.redaction import MASK
from tests.helpers.browser import log_in, new_page, shot
from tests.helpers.redaction_graphs import CARD, MARKER
from tests.helpers.threads import head
from tests.helpers.users import member

pytestmark = pytest.mark.django_db(transaction=True)


def _sensitive_thread():
    thread = engine.create_thread("redaction")
    get_graph("redaction").invoke({"customer": "ada"}, engine.config_for(thread))
    return thread


def test_a_viewer_sees_masks_and_no_reveal_button(chromium, web):
    thread = _sensitive_thread()
    member("vera", role=Role.VIEWER)
    page = new_page(chromium)
    log_in(page, web.url, "vera")
    for url in (f"/threads/{thread.pk}/", f"/threads/{thread.pk}/checkpoints/{head(thread)}/"):
        page.goto(web.url + url)
        expect(page.get_by_text(MASK).first).to_be_visible()
        assert MARKER not in page.content(), url
    masked = page.get_by_test_id("masked-values")
    expect(masked).to_contain_text("payment.card_number")
    expect(masked.get_by_role("button", name="Reveal payment.card_number")).to_have_count(0)
    shot(page, "redaction-viewer")


def test_an_admin_reveals_one_value_and_the_audit_trail_shows_it(chromium, web):
    thread = _sensitive_thread()
    member("ada-admin", role=Role.ADMIN)
    page = new_page(chromium)
    log_in(page, web.url, "ada-admin")
    page.goto(f"{web.url}/threads/{thread.pk}/checkpoints/{head(thread)}/")
    assert MARKER not in page.content()
    page.get_by_role("button", name="Reveal payment.card_number").click()
    revealed = page.get_by_test_id("revealed")
    expect(revealed).to_contain_text(CARD)
    # Only that one value: the others stay masked.
    expect(page.get_by_role("button", name="Reveal api_key")).to_be_visible()
    shot(page, "redaction-revealed")

    page.goto(f"{web.url}/audit/")
    row = page.get_by_role("row").filter(has_text="revealed payment.card_number")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("ada-admin")
    assert CARD not in page.content()
    # Loaded again, the inspector masks the value again.
    page.goto(f"{web.url}/threads/{thread.pk}/checkpoints/{head(thread)}/")
    assert MARKER not in page.content()
