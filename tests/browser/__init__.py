"""Tests that drive Debian's chromium with Playwright (``tests/browser/conftest.py``)."""
