"""The browser tests' fixtures: one chromium per test (``chromium``) and one page
logged in to the console (``page``), against the console as ``make run`` serves it
(uvicorn, the ``web`` fixture). A module changes who ``page`` logs in as by overriding
``page_user``, and its window by overriding ``viewport``. Helpers (``shot``, ``log_in``,
``expect_thread_status``) are in ``tests.helpers.browser``."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect, sync_playwright

from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS, VIEWPORT, log_in, new_page

expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(autouse=True)
def orm_beside_playwright(monkeypatch):
    """Playwright's sync API keeps an event loop on this thread, and Django refuses ORM
    calls where a loop runs. Nothing async runs while a test reads the database (the
    loop only turns inside Playwright's calls), which is what this setting declares."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
def chromium():
    """Debian's chromium, headless, driven by Playwright; closed after the test."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def viewport() -> dict:
    """The window of ``page``: ``tests.helpers.browser.VIEWPORT`` unless a module
    overrides this fixture."""
    return VIEWPORT


@pytest.fixture
def page_user(operator):
    """Who ``page`` logs in as: ``operator`` unless a module overrides this fixture."""
    return operator


@pytest.fixture
def page(page_user, chromium, viewport, web):
    """A chromium page logged in to the console (through its login form) as
    ``page_user``."""
    page = new_page(chromium, viewport)
    log_in(page, web.url, page_user.username)
    return page
