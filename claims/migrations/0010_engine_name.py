from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("claims", "0009_workflow_suspend_permission"),
    ]

    operations = [
        migrations.AddField(
            model_name="engine",
            name="name",
            field=models.CharField(blank=True, db_index=True, default="", max_length=255),
        ),
    ]
