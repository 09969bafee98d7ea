"""A PostgreSQL index for namespace-prefix search: ``(namespace || '.') text_pattern_ops``.

DjangoStore finds the rows in namespace N or below it as one range of this expression
(``N.`` up to ``N/``). The (namespace, key) unique index also serves that search, but
it holds one entry per row and key; this one is deduplicated (one posting list per
namespace), so reading a namespace's 10,000 rows from it costs a fraction as much (see
benchmarks/NOTES.md). It cannot serve a get (``namespace = N AND key ...``), so gets
keep the unique index whatever the statistics say. Not on SQLite, where the unique
index serves prefix search in binary order, and text_pattern_ops does not exist.
"""

from django.db import migrations

INDEX = "store_item_dotted_namespace"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX {INDEX} ON durable_storeitem ((namespace || '.') text_pattern_ops)"
        )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [
        ("durable", "0006_store_prefix_search_on_unique_index"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
