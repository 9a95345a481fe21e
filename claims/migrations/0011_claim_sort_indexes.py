"""Indexes for the claims list's sorts: expiry and claim time (partial, held rows only)
and epoch, each with the workflow id as tie-breaker (docs/design.md §7)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("claims", "0010_engine_name"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="workflowclaim",
            index=models.Index(
                condition=models.Q(("holder_expires_at_ms__isnull", False)),
                fields=["holder_expires_at_ms", "workflow_id"],
                name="workflow_claim_expires_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="workflowclaim",
            index=models.Index(
                condition=models.Q(("holder_claimed_at_ms__isnull", False)),
                fields=["holder_claimed_at_ms", "workflow_id"],
                name="workflow_claim_claimed_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="workflowclaim",
            index=models.Index(fields=["epoch", "workflow_id"], name="workflow_claim_epoch_idx"),
        ),
    ]
