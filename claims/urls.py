from django.urls import path

from claims import views

app_name = "claims"

# Workflow and engine ids may hold "/", so they come last in their path (path converter)
# and actions sit under their own prefix instead of after the id.
urlpatterns = [
    path("", views.overview, name="overview"),
    path("claims/", views.claims, name="claims"),
    path("workflows/<path:workflow_id>/", views.workflow, name="workflow"),
    path("release/<path:workflow_id>", views.claim_release, name="release"),
    path("takeover/<path:workflow_id>", views.claim_takeover, name="takeover"),
    path("cancel/<path:workflow_id>", views.workflow_cancel_action, name="cancel"),
    path("suspend/<path:workflow_id>", views.workflow_suspend_action, name="suspend"),
    path("resume/<path:workflow_id>", views.workflow_resume_action, name="resume"),
    path("engines/", views.engines, name="engines"),
    path("engines/<path:engine_id>/", views.engine, name="engine"),
    path("reclaim/", views.reclaim, name="reclaim"),
    path("redrives/", views.redrives, name="redrives"),
    path("backfills/", views.backfills, name="backfills"),
    path("audit/", views.audit, name="audit"),
]
