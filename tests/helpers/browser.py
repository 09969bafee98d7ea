"""Driving Debian's chromium with Playwright: launch arguments, a page with the tests'
timeouts (``new_page``), logging in through the console's form (``log_in``), screenshots
under ``<var>/screenshots/`` (``shot``), and waiting for a thread page's status with
what the database says beside it (``expect_thread_status``). The fixtures (``chromium``,
``page``) are in ``tests/browser/conftest.py``."""

from __future__ import annotations

import re
import shutil

from django.conf import settings
from playwright.sync_api import Locator, Page, expect

from durable.models import Run, Thread
from tests.helpers.users import PASSWORD

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Headless as root on a machine with no outside network (see the machine notes).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Playwright's own default window; ``TALL`` for pages read further down.
VIEWPORT = {"width": 1280, "height": 720}
TALL = {"width": 1280, "height": 900}
# What the pages wait for arrives from a worker on a 2-core machine: give it time
# (``tests/browser/conftest.py`` gives ``expect`` the same).
TIMEOUT_MS = 30_000
SCREENSHOTS = settings.VAR_DIR / "screenshots"


def new_page(browser, viewport: dict = VIEWPORT) -> Page:
    """A new page of ``browser`` (a Playwright ``Browser``) in a window of ``viewport``,
    whose actions wait up to ``TIMEOUT_MS``."""
    page = browser.new_page(viewport=viewport)
    page.set_default_timeout(TIMEOUT_MS)
    return page


def log_in(page: Page, base_url: str, username: str = "operator", password: str = PASSWORD):
    """Log ``page`` in through the console's login form."""
    page.goto(f"{base_url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def shot(target: Page | Locator, name: str) -> None:
    """Save ``<var>/screenshots/<name>.png``: all of a page, or one element (a locator)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = str(SCREENSHOTS / f"{name}.png")
    if isinstance(target, Page):
        target.screenshot(path=path, full_page=True)
    else:
        target.screenshot(path=path)


def expect_thread_status(page: Page, status: str) -> None:
    """Wait until the thread page open in ``page`` shows ``status``. On a timeout, fail
    with what the database holds beside what the page shows: the thread's status, its
    active runs, and whether the page's live part still follows the run (its ``hx-get``
    and the event stream's state), which tells a thread left busy from a page that
    missed its last update. (Reads the database from Playwright's thread: the browser
    tests' ``orm_beside_playwright`` fixture allows it.)"""
    shown = page.get_by_test_id("thread-status")
    try:
        expect(shown).to_have_text(status)
    except AssertionError as failure:
        pk = int(re.search(r"/threads/(\d+)/", page.url).group(1))
        thread = Thread.objects.get(pk=pk)
        active = list(thread.runs.filter(status__in=Run.ACTIVE).values_list("pk", "status"))
        runs = list(thread.runs.order_by("pk").values_list("pk", "status"))
        live = page.locator("#live")
        stream = page.locator("#run-events")
        sse = stream.get_attribute("data-sse") if stream.count() else "no stream element"
        raise AssertionError(
            f"the thread page shows {shown.text_content()!r}, not {status!r}; in the "
            f"database the thread is {thread.status!r}, its runs {runs}, active {active}; "
            f"the page's live part follows: hx-get={live.get_attribute('hx-get')!r}, "
            f"stream={sse!r}"
        ) from failure


def htmx_ready(target: Locator) -> None:
    """Wait until htmx has processed ``target``, so that its triggers listen: a test fills
    a form htmx has just swapped in sooner than htmx settles it, as no person does, and
    the input's event then reaches no listener."""
    target.page.wait_for_function(
        "el => Boolean((el['htmx-internal-data'] || {}).initHash)", arg=target.element_handle()
    )
