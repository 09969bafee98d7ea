"""A PostgreSQL GIN index on the threads' metadata (``jsonb_path_ops``).

The console filters threads by metadata ``key=value`` and counts them by status; among
100,000 threads that count read every row until this index let the filter's
``metadata @> {key: value}`` find the matching rows (see README, "Performance").
Not on SQLite, which has no GIN; there the filter reads the rows.
"""

from django.db import migrations

INDEX = "thread_metadata_gin"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX {INDEX} ON durable_thread USING gin (metadata jsonb_path_ops)"
        )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [
        ("durable", "0008_merge_run_engine_store_index"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
