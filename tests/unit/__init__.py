"""Tests that start no process of their own: no worker, no web server, no browser."""
