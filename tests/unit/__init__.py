"""Tests that need neither a worker process nor a browser (some start the web server)."""
