"""Operator records: the changes an operator makes to objects that are not claims (a saved
query, a bulk job), each written in the transaction of the change it records. A claim's own
transitions are ClaimEvents."""

from __future__ import annotations

from django.db import models


class AuditSubject(models.TextChoices):
    SAVED_QUERY = "saved_query"
    BULK_JOB = "bulk_job"


class AuditEntry(models.Model):
    """Who did what to which object, and when; ``detail`` holds what the action changed
    (a query's text, a job's counts), so the record reads on its own after the object is
    gone."""

    at_ms = models.BigIntegerField()
    actor = models.CharField(max_length=150, null=True, blank=True)
    subject = models.CharField(max_length=16, choices=AuditSubject.choices)
    subject_id = models.BigIntegerField()
    # What was done, a verb the subject defines: "create", "update", "delete", "pause"...
    action = models.CharField(max_length=32)
    reason = models.TextField(blank=True)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        verbose_name_plural = "audit entries"
        indexes = [
            models.Index(fields=["subject", "subject_id", "id"], name="audit_entry_subject_idx"),
            models.Index(fields=["at_ms"], name="audit_entry_at_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.subject} #{self.subject_id} {self.action} by {self.actor}"
