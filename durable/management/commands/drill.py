"""``manage.py drill [--only NAME ...] [--timeout SECONDS]``: run the fault drills on the
deployment's workers (``durable.drills``), print the report, keep it, and exit with
status 1 when a drill failed."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from durable import drills


class Command(BaseCommand):
    help = (
        "Run the fault drills on this deployment's workers: a worker process killed "
        "mid-node, a node over its TimeoutPolicy, a RetryPolicy exhausted into its "
        "error_handler, a database connection dropped, a worker drained by SIGTERM (it "
        "exits: your process manager should start it again). Prints and keeps the report; "
        "exits 1 when a drill failed."
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
        try:
            report = drills.run_drills(only, timeout=timeout, requested_by="manage.py drill")
        except drills.UnknownDrill as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(drills.report_text(report))
        if not report.passed:
            raise CommandError("A fault drill failed.", returncode=1)
