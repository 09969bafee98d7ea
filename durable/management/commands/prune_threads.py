"""``manage.py prune_threads [--dry-run] [--tenant SLUG] [--batch-size N]``: apply the
retention policies now (``durable.retention.apply``), as the scheduled sweep does, and
print what each thread lost (or, with ``--dry-run``, would lose)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from durable import retention
from durable.models import Tenant

COLUMNS = (
    "{tenant:<16} {thread:<38} {graph:<20} {action:<24} {checkpoints:>11} {blobs:>7} {writes:>7}"
)


class Command(BaseCommand):
    help = (
        "Apply the enabled retention policies: prune or delete threads' history, through "
        "the saver, with an audit event per thread. Threads with an active run are skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--dry-run", action="store_true", help="Print what would be removed; change nothing."
        )
        parser.add_argument("--tenant", metavar="SLUG", help="Only this tenant's policies.")
        parser.add_argument(
            "--batch-size",
            type=int,
            default=retention.BATCH_SIZE,
            help=f"Threads per transaction (default {retention.BATCH_SIZE}).",
        )

    def handle(self, *args, dry_run=False, tenant=None, batch_size=retention.BATCH_SIZE, **options):
        if batch_size < 1:
            raise CommandError(f"--batch-size must be at least 1, got {batch_size}.")
        chosen = None
        if tenant is not None:
            chosen = Tenant.objects.filter(slug=tenant).first()
            if chosen is None:
                raise CommandError(f"Unknown tenant {tenant!r}.")
        report = retention.apply(tenant=chosen, dry_run=dry_run, batch_size=batch_size)
        if dry_run:
            self.stdout.write("Dry run: nothing is changed.")
        shown = [o for o in report.outcomes if o.changes or o.action != retention.PRUNE]
        if shown:
            self.stdout.write(
                COLUMNS.format(
                    tenant="tenant",
                    thread="thread",
                    graph="graph",
                    action="action",
                    checkpoints="checkpoints",
                    blobs="blobs",
                    writes="writes",
                )
            )
        for outcome in shown:
            skipped = outcome.action == retention.SKIP
            self.stdout.write(
                COLUMNS.format(
                    tenant=outcome.tenant,
                    thread=outcome.thread_name,
                    graph=outcome.graph or "-",
                    action=outcome.label,
                    checkpoints="-" if skipped else outcome.removed.checkpoints,
                    blobs="-" if skipped else outcome.removed.blobs,
                    writes="-" if skipped else outcome.removed.writes,
                )
            )
        self.stdout.write(report.summary())
        if report.of(retention.ERROR):
            raise CommandError("Some threads failed (see above); they were left as they were.")
