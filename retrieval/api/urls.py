from django.urls import path

from retrieval.api.views import SearchView

urlpatterns = [path("search", SearchView.as_view(), name="search")]
