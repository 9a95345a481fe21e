"""Each claim move names the engine its row named as holder before it (``holder_before``):
each engine under a session reads the moves of its own claims only (docs/design.md §12).

Nullable, so adding it rewrites nothing; older events keep null, which every engine reads,
as before. Its index is the next migration's, built concurrently on its own."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("claims", "0029_fleet_counts"),
    ]

    operations = [
        migrations.AddField(
            model_name="claimevent",
            name="holder_before",
            field=models.CharField(blank=True, max_length=255, null=True),
        ),
    ]
