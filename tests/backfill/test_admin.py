"""The admin: schedule (permission, CSRF, refusals), cancel, and the live progress column."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from claims.models import BackfillJob

from ._data import START_AT, import_workflows, running_job, workflow_ids

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:claims_backfilljob_changelist")
SCHEDULE = reverse("admin:claims_backfilljob_schedule")
PROGRESS = reverse("admin:claims_backfilljob_progress")


def staff(django_user_model: Any, name: str, *perms: str) -> Any:
    user = django_user_model.objects.create_user(name, is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="claims", codename__in=perms)
    )
    return user


@pytest.fixture
def operator_client(django_user_model: Any, client: Client) -> Client:
    client.force_login(staff(django_user_model, "olga", "view_backfilljob", "schedule_backfill"))
    return client


@pytest.fixture
def viewer_client(django_user_model: Any) -> Client:
    client = Client()
    client.force_login(staff(django_user_model, "vic", "view_backfilljob"))
    return client


def messages_of(response: Any) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def test_the_changelist_offers_scheduling_to_permitted_users_only(operator_client, viewer_client):
    permitted = operator_client.get(CHANGELIST)
    assert permitted.status_code == 200
    assert f'href="{SCHEDULE}"' in permitted.text
    assert "Schedule visibility backfill" in permitted.text

    viewer = viewer_client.get(CHANGELIST)
    assert viewer.status_code == 200
    assert SCHEDULE not in viewer.text
    assert "cancel_backfills" not in viewer.text


def test_the_schedule_view_403s_without_the_permission(viewer_client):
    assert viewer_client.get(SCHEDULE).status_code == 403
    assert viewer_client.post(SCHEDULE, {"run_at": ""}).status_code == 403
    assert not BackfillJob.objects.exists()


def test_the_schedule_form_renders(operator_client):
    import_workflows(workflow_ids(4))
    response = operator_client.get(SCHEDULE)
    assert response.status_code == 200
    assert 'type="datetime-local"' in response.text
    assert "csrfmiddlewaretoken" in response.text
    assert "all 4 workflows" in response.text


def test_schedule_now(operator_client, sent_runs, django_capture_on_commit_callbacks):
    import_workflows(workflow_ids(4))
    with django_capture_on_commit_callbacks(execute=True):
        response = operator_client.post(SCHEDULE, {"run_at": ""}, follow=True)

    job = BackfillJob.objects.get()
    assert response.redirect_chain == [(CHANGELIST, 302)]
    assert (job.status, job.requested_by, job.total_estimate) == ("scheduled", "olga", 4)
    assert messages_of(response) == [f"Visibility backfill #{job.pk} scheduled now."]
    assert sent_runs == [(job.pk, None)]
    entry = LogEntry.objects.get(user__username="olga", object_id=str(job.pk))
    assert entry.is_addition()


def test_schedule_at_a_time(operator_client):
    response = operator_client.post(SCHEDULE, {"run_at": "2999-01-02T03:04"}, follow=True)
    job = BackfillJob.objects.get()
    assert job.run_at.isoformat() == "2999-01-02T03:04:00+00:00"
    assert messages_of(response) == [
        f"Visibility backfill #{job.pk} scheduled for 2999-01-02 03:04 UTC."
    ]


@pytest.mark.parametrize(
    ("run_at", "error"),
    [("2001-01-01T00:00", "in the past"), ("yesterday", "Enter a valid date/time")],
)
def test_a_bad_time_is_refused_on_the_form(operator_client, run_at, error):
    response = operator_client.post(SCHEDULE, {"run_at": run_at})
    assert response.status_code == 200
    assert error in response.text
    assert not BackfillJob.objects.exists()


def test_schedule_while_one_is_active_is_refused_with_a_message(operator_client):
    active = running_job()
    page = operator_client.get(SCHEDULE)
    assert f"Backfill #{active.pk} is running" in page.text

    response = operator_client.post(SCHEDULE, {"run_at": ""}, follow=True)

    assert response.redirect_chain == [(CHANGELIST, 302)]
    [message] = messages_of(response)
    assert message.startswith("The backfill was not scheduled: a visibility backfill is already")
    assert f"#{active.pk}" in message
    assert list(BackfillJob.objects.values_list("pk", flat=True)) == [active.pk]


def test_schedule_needs_a_csrf_token(django_user_model):
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff(django_user_model, "olga", "view_backfilljob", "schedule_backfill"))
    assert client.post(SCHEDULE, {"run_at": ""}).status_code == 403
    assert not BackfillJob.objects.exists()


def test_read_only_refuses_with_the_reason(operator_client, settings):
    settings.WEFTBOARD_READ_ONLY = "incident 4711"
    page = operator_client.get(SCHEDULE)
    assert "weftboard is in read-only mode: incident 4711" in page.text
    assert "disabled" in page.text

    response = operator_client.post(SCHEDULE, {"run_at": ""})

    # Every admin write meets the read-only switch before the view (weftboard.readonly).
    assert response.status_code == 403
    assert "weftboard is in read-only mode: incident 4711" in response.text
    assert not BackfillJob.objects.exists()
    assert "incident 4711" in operator_client.get(CHANGELIST).text


def test_the_progress_column_renders_a_bar_per_job(operator_client):
    running_job(processed=50, total_estimate=200, error="x" * 100)
    BackfillJob.objects.create(status="succeeded", run_at=START_AT, processed=9)

    response = operator_client.get(CHANGELIST)

    assert response.status_code == 200
    assert '<progress value="25" max="100"' in response.text
    assert 'data-backfill-status="running"' in response.text
    assert '<progress value="100" max="100"' in response.text
    assert "25% · 50 / 200" in response.text
    assert "100% · 9 / ?" in response.text
    assert f'<span title="{"x" * 100}" style="display: inline-block; min-width: 18em">' in (
        response.text
    )
    assert f"{'x' * 59}…</span>" in response.text


def test_progress_json_for_live_bars(operator_client, viewer_client, client):
    job = running_job(processed=30, total_estimate=120, inserted=7)
    data = viewer_client.get(PROGRESS, {"id": [job.pk, "x"]}).json()
    assert data == {
        "jobs": [
            {
                "id": job.pk,
                "status": "running",
                "status_display": "Running",
                "active": True,
                "percent": 25,
                "label": "25% · 30 / 120",
                "processed": 30,
                "total_estimate": 120,
                "inserted": 7,
                "fixed": 0,
                "conflicts": 0,
            }
        ]
    }
    client.logout()
    assert client.get(PROGRESS, {"id": job.pk}).status_code == 302  # to the admin login


@pytest.mark.parametrize("bad_id", ["²", "١٢", "-1", "1e3", "9" * 40])
def test_progress_ignores_ids_that_are_not_plain_numbers(viewer_client, bad_id):
    job = running_job()

    response = viewer_client.get(PROGRESS, {"id": [bad_id, job.pk]})

    assert response.status_code == 200
    assert [entry["id"] for entry in response.json()["jobs"]] == [job.pk]


def test_the_cancel_action(operator_client):
    active = running_job()
    done = BackfillJob.objects.create(status="failed", run_at=active.run_at)

    response = operator_client.post(
        CHANGELIST,
        {"action": "cancel_backfills", "_selected_action": [active.pk, done.pk]},
        follow=True,
    )

    active.refresh_from_db()
    assert (active.status, active.error) == ("cancelled", "cancelled by olga")
    assert messages_of(response) == [f"Cancelled backfill #{active.pk}."]
    assert LogEntry.objects.get().is_change()


def test_the_cancel_action_is_not_offered_without_the_permission(viewer_client):
    active = running_job()
    response = viewer_client.post(
        CHANGELIST, {"action": "cancel_backfills", "_selected_action": [active.pk]}
    )
    assert response.status_code in (200, 302)
    active.refresh_from_db()
    assert active.status == "running"


def test_the_cancel_button(operator_client, viewer_client):
    active = running_job()
    url = reverse("admin:claims_backfilljob_cancel", args=[active.pk])
    assert operator_client.get(url).status_code == 405
    assert viewer_client.post(url).status_code == 403

    response = operator_client.post(url, follow=True)

    assert response.redirect_chain == [(CHANGELIST, 302)]
    active.refresh_from_db()
    assert active.status == "cancelled"
    assert messages_of(response) == [f"Cancelled backfill #{active.pk}."]
    # Again: it has ended, so nothing happens and the operator is told why.
    again = operator_client.post(url, follow=True)
    assert messages_of(again) == [
        f"Not cancelled: backfill #{active.pk} is cancelled, not scheduled or running"
    ]


def test_the_cancel_action_under_read_only_says_why(operator_client, settings):
    active = running_job()
    settings.WEFTBOARD_READ_ONLY = "incident 4711"

    response = operator_client.post(
        CHANGELIST, {"action": "cancel_backfills", "_selected_action": [active.pk]}
    )

    assert response.status_code == 403
    assert "weftboard is in read-only mode: incident 4711" in response.text
    active.refresh_from_db()
    assert active.status == "running"
