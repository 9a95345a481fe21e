from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("claims", "0013_fleet_snapshot_history"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="engine",
            options={"permissions": [("drain_engine", "Can drain and undrain an engine")]},
        ),
        migrations.AddField(
            model_name="engine",
            name="drain_requested_at_ms",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.CreateModel(
            name="EngineEvent",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("engine_id", models.CharField(max_length=255)),
                (
                    "kind",
                    models.CharField(
                        choices=[("drain", "Drain"), ("undrain", "Undrain")], max_length=16
                    ),
                ),
                ("actor", models.CharField(max_length=150)),
                ("reason", models.TextField()),
                ("at_ms", models.BigIntegerField()),
            ],
            options={
                "indexes": [
                    models.Index(fields=["engine_id", "id"], name="engine_event_engine_idx"),
                    models.Index(fields=["at_ms"], name="engine_event_at_idx"),
                ],
            },
        ),
    ]
