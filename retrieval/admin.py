from django.contrib import admin

from collections_app.admin import ReadOnlyAdmin
from retrieval.models import SearchEvent


@admin.register(SearchEvent)
class SearchEventAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "tenant", "agent", "collections", "refused", "floor", "results", "latency_ms"]
    list_filter = ["tenant", "refused", "agent"]
    list_select_related = ["tenant", "agent"]
