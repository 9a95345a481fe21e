from django.urls import path

from claims import views

app_name = "claims"

urlpatterns = [
    path("", views.overview, name="overview"),
]
