from django.urls import path

from claims import views
from claims.views import id_paths  # noqa: F401  (registers the pageid converter)
from claims.views.action_kinds import ACTIONS
from claims.views.bulk_jobs import bulk_items_csv, bulk_job, bulk_job_control, bulk_jobs
from claims.views.bulk_new import bulk_new
from claims.views.saved_views import saved_view_create, saved_view_delete
from claims.views.workflow_list import workflows

app_name = "claims"

# Workflow and engine ids may hold "/", so they come last in their path (views/id_paths.py)
# and actions sit under their own prefix instead of after the id.
urlpatterns = [
    path("", views.overview, name="overview"),
    path("claims/", views.claims, name="claims"),
    path("workflows/", workflows, name="workflows"),
    path("workflows/<pageid:workflow_id>/", views.workflow, name="workflow"),
    path("engines/", views.engines, name="engines"),
    path("engines/<pageid:engine_id>/", views.engine, name="engine"),
    path("engine-release/<pageid:engine_id>", views.engine_release, name="engine_release"),
    path("reclaim/", views.reclaim, name="reclaim"),
    path("redrives/", views.redrives, name="redrives"),
    path("backfills/", views.backfills, name="backfills"),
    path("audit/", views.audit, name="audit"),
    path("saved-views/", saved_view_create, name="saved_view_create"),
    path("saved-views/<int:saved_query_id>/delete", saved_view_delete, name="saved_view_delete"),
    path("engine-floor/", views.engine_floor, name="engine_floor"),
    path("bulk/", bulk_jobs, name="bulk_jobs"),
    path("bulk/new", bulk_new, name="bulk_new"),
    path("bulk/<int:job_id>/", bulk_job, name="bulk_job"),
    path("bulk/<int:job_id>/items.csv", bulk_items_csv, name="bulk_items_csv"),
]
urlpatterns += [
    path(f"bulk/<int:job_id>/{verb}", bulk_job_control, {"verb": verb}, name=f"bulk_{verb}")
    for verb in ("pause", "resume", "abort")
]

# One URL per workflow action, named after it: what each does is in views/action_kinds.py.
urlpatterns += [
    path(f"{action}/<pageid:workflow_id>", views.workflow_action, {"action": action}, name=action)
    for action in ACTIONS
]
urlpatterns += [
    path(
        f"engine-{action}/<pageid:engine_id>",
        views.engine_drain_action,
        {"action": action},
        name=f"engine_{action}",
    )
    for action in ("drain", "undrain")
]
