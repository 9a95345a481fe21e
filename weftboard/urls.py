from django.contrib import admin
from django.urls import include, path

from weftboard import views
from weftboard.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", views.healthz, name="healthz"),
    path("metrics", views.metrics, name="metrics"),
    path("api/v1/", api.urls),
    path("", include("claims.urls")),
]
