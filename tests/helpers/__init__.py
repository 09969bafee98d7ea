"""Plain modules the tests import: graphs, processes, users, threads and runs they
make, browser pages. Fixtures live in the ``conftest.py`` files; test modules import
only from here, never from one another."""
