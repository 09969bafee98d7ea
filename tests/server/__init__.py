"""Tests that talk HTTP to the session's uvicorn server (``web``), with no worker: what
they ask for is answered in the request or done in this process."""
