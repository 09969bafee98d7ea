"""The settings the suite runs on, its own processes included: the project's
(``dashboard.settings``) with a fast password hasher. Django's default, PBKDF2 at a
million iterations, spends about half a second of a core on each user a test makes,
which was a third of some files' time; Django's docs ("Speeding up the tests")
suggest this. No test checks how passwords are stored."""

import os

from dashboard.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# The redaction tests' paths (tests/helpers/redaction_graphs.py), in the test process and
# the processes it starts; the key-name patterns are the defaults.
DURABLE_REDACT_PATHS = ["payment.card_number", "messages.*.additional_kwargs.api_key"]

# The request fault tests' web process: terminations of its own backend between a
# request's queries (tests/helpers/terminations.py), asked for by a header.
if os.environ.get("DURABLE_TEST_TERMINATIONS") == "1":
    MIDDLEWARE = ["tests.helpers.terminations.TerminateAtQuery", *MIDDLEWARE]  # noqa: F405
