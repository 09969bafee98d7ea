from django.db import migrations, models


def copy_versions_out_of_payloads(apps, schema_editor):
    """Rows written before this migration carry channel_versions inside the payload.
    No encryption existed then, so LangGraph's default serializer reads them."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    serde = JsonPlusSerializer()
    Checkpoint = apps.get_model("durable", "Checkpoint")
    db = schema_editor.connection.alias
    for row in Checkpoint.objects.using(db).iterator(chunk_size=500):
        payload = serde.loads_typed((row.type, bytes(row.checkpoint)))
        row.channel_versions = payload.pop("channel_versions", {})
        row.checkpoint = serde.dumps_typed(payload)[1]
        row.save(update_fields=["channel_versions", "checkpoint"])


class Migration(migrations.Migration):
    dependencies = [
        ("durable", "0002_metadata_sorted_keys"),
    ]

    operations = [
        migrations.AddField(
            model_name="checkpoint",
            name="channel_versions",
            field=models.JSONField(default=dict),
        ),
        migrations.RunPython(copy_versions_out_of_payloads, migrations.RunPython.noop),
    ]
