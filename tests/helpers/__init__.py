"""Plain modules the tests import: graphs, processes, users, threads and runs they
make, the stores they compare, browser pages. Fixtures live in the ``conftest.py``
files; test modules import only from here, never from one another."""
