"""``manage.py drill [--only NAME ...] [--timeout SECONDS] [-v 2]``: run the fault drills
on the deployment's workers (``durable.drills``), print the report, keep it, and exit
with status 1 when a drill failed.

The report alone is on stdout, so that it can be piped or kept. The process' log lines
(each drill as it starts and ends, and what the engine logs meanwhile) go to stderr,
and only from ``-v 2``: by default only warnings and errors are logged."""

from __future__ import annotations

import logging

from django.core.management.base import BaseCommand, CommandError

from durable import drills


class Command(BaseCommand):
    help = (
        "Run the fault drills on this deployment's workers: a worker process killed "
        "mid-node, a node over its TimeoutPolicy, a RetryPolicy exhausted into its "
        "error_handler, a database connection dropped, a worker drained by SIGTERM (it "
        "exits: your process manager should start it again). Prints the report alone on "
        "stdout and keeps it; exits 1 when a drill failed. Logs (on stderr) from -v 2."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--only",
            nargs="+",
            metavar="NAME",
            help=f"Only these drills (of {', '.join(drills.DRILLS)}).",
        )
        parser.add_argument(
            "--timeout",
            type=float,
            default=60.0,
            help="How long each drill's run may take to end, in seconds (default 60).",
        )

    def handle(self, *args, only=None, timeout=60.0, **options):
        if timeout <= 0:
            raise CommandError(f"--timeout must be positive, got {timeout:g}.")
        quiet = options.get("verbosity", 1) < 2
        disabled = logging.root.manager.disable  # what the caller had, put back after
        if quiet:
            logging.disable(max(disabled, logging.INFO))
        try:
            report = drills.run_drills(only, timeout=timeout, requested_by="manage.py drill")
        except drills.UnknownDrill as exc:
            raise CommandError(str(exc)) from exc
        finally:
            logging.disable(disabled)
        self.stdout.write(drills.report_text(report))
        if not report.passed:
            raise CommandError("A fault drill failed.", returncode=1)
