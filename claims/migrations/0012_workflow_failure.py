from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("claims", "0011_claim_sort_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="workflow",
            name="failure",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddIndex(
            model_name="workflow",
            index=models.Index(
                fields=["updated_at_ms", "workflow_id"], name="workflow_updated_idx"
            ),
        ),
        migrations.AddIndex(
            model_name="workflow",
            index=models.Index(
                fields=["created_at_ms", "workflow_id"], name="workflow_created_idx"
            ),
        ),
    ]
