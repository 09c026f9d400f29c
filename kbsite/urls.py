from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from kbsite import views
from retrieval.mcp import mcp_http

# The header and tab title name the platform, not the framework.
admin.site.site_header = "kbsite administration"
admin.site.site_title = "kbsite"
admin.site.index_title = "Collections, documents and audit"

urlpatterns = [
    path("", views.home, name="home"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("api/manage/", include("collections_app.api.urls")),
    path("api/", include("retrieval.api.urls")),
    path("mcp", mcp_http, name="mcp"),  # the MCP server, streamable HTTP (retrieval/mcp)
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="redoc"),
    # Last: only what nothing above answered. [\s\S], not ".": an id holding a newline (%0A) is an address too.
    re_path(r"^api/(?P<path>[\s\S]*)$", views.api_not_found),
]
