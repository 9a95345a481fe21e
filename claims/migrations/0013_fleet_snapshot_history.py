from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("claims", "0012_workflow_failure"),
    ]

    operations = [
        migrations.CreateModel(
            name="FleetSnapshotHistory",
            fields=[
                ("taken_at_ms", models.BigIntegerField(primary_key=True, serialize=False)),
                ("data", models.JSONField(default=dict)),
            ],
        ),
    ]
