from django.contrib import admin

from collections_app.admin.base import AuditAdmin
from retrieval.models import SearchEvent


@admin.register(SearchEvent)
class SearchEventAdmin(AuditAdmin):
    list_display = ["created_at", "tenant", "agent", "collections", "refused", "floor", "results", "latency_ms"]
    list_filter = ["tenant", "refused", "agent"]
    list_select_related = ["tenant", "agent"]
