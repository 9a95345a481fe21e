from django.contrib import admin
from django.urls import include, path

from weftboard import views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", views.healthz, name="healthz"),
    path("metrics", views.metrics, name="metrics"),
    path("", include("claims.urls")),
]
