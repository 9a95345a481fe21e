from django.urls import path

from claims import views
from claims.views.workflow_list import workflows

app_name = "claims"

# Workflow and engine ids may hold "/", so they come last in their path (path converter)
# and actions sit under their own prefix instead of after the id.
urlpatterns = [
    path("", views.overview, name="overview"),
    path("claims/", views.claims, name="claims"),
    path("workflows/", workflows, name="workflows"),
    path("workflows/<path:workflow_id>/", views.workflow, name="workflow"),
    path("release/<path:workflow_id>", views.claim_release, name="release"),
    path("takeover/<path:workflow_id>", views.claim_takeover, name="takeover"),
    path("cancel/<path:workflow_id>", views.workflow_cancel_action, name="cancel"),
    path("suspend/<path:workflow_id>", views.workflow_suspend_action, name="suspend"),
    path("resume/<path:workflow_id>", views.workflow_resume_action, name="resume"),
    path("engines/", views.engines, name="engines"),
    path("engines/<path:engine_id>/", views.engine, name="engine"),
    path("engine-release/<path:engine_id>", views.engine_release, name="engine_release"),
    path("engine-drain/<path:engine_id>", views.engine_drain_view, name="engine_drain"),
    path("engine-undrain/<path:engine_id>", views.engine_undrain_view, name="engine_undrain"),
    path("reclaim/", views.reclaim, name="reclaim"),
    path("redrives/", views.redrives, name="redrives"),
    path("backfills/", views.backfills, name="backfills"),
    path("audit/", views.audit, name="audit"),
]
