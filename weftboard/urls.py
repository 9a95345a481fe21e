from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from weftboard import views
from weftboard.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    # Operators sign in here; the admin's own login admits staff only.
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("healthz", views.healthz, name="healthz"),
    path("metrics", views.metrics, name="metrics"),
    path("api/v1/", api.urls),
    path("", include("claims.urls")),
]
