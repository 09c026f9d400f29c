"""Admin: "Gaps" of one collection — the questions its searches answered with nothing or only weak results, grouped
when they ask the same thing, with one-click actions: open in try-a-search, add as a golden question (or a control),
dismiss.

The tenant's admins only, as the audit's questions are (retrieval.selectors.gaps reads them, services.gaps
dismisses). The page is a tool page of the dismissals' admin ("Dismissed gaps": who hid which gap when):
collections_app links to it by URL name, `retrieval_gapdismissal_gaps`, as it links to try-a-search.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from accounts.models import Role
from collections_app.models import Collection
from doors.admin.base import ToolPage, object_for_tool
from doors.admin.roles import may
from infra.errors import DomainError
from retrieval.admin.editors_only import AdminsOnlyAudit
from retrieval.models import GapDismissal
from retrieval.selectors.gaps import Gap, collection_gaps, recording_note
from retrieval.services.gaps import gap_dismiss

# Why an empty answer was empty, by SearchEvent.reason, in an editor's words.
# Past this many bytes of encoded question a gap's links carry its digest instead (gunicorn's request line: 4,094).
LINK_QUESTION_BYTES = 2000

REASONS = {
    "below_floor": "nothing scored above the floor",
    "no_readable_paragraph": "nothing readable matched",
    "judge_refused": "the judge refused",
    "no_collection": "no collection to search",
}
BADGES = {
    "empty": "nothing came back the last time it was asked",
    "weak": "only weak results (none at or above the score threshold) the last time it was asked",
}


@admin.register(GapDismissal)
class GapDismissalAdmin(AdminsOnlyAudit):
    """The dismissals (who hid which gap when; digests of its wordings, never their text) and, as a tool page of
    this admin, each collection's gaps page. Read by the tenant's admins only; a dismissal is made on the gaps page
    and never changed here."""

    list_display = ["dismissed_at", "tenant", "collection", "dismissed_by", "wordings", "gaps_link"]
    list_filter = ["tenant", "collection"]
    list_select_related = ["tenant", "collection"]
    fields = readonly_fields = ("dismissed_at", "tenant", "collection", "dismissed_by", "wordings", "gaps_link")
    tool_pages: tuple[ToolPage, ...] = (ToolPage("gaps/<path:object_id>/", "gaps_view", "gaps"),)

    @admin.display(description="wordings hidden")
    def wordings(self, obj: GapDismissal) -> int:
        return len(obj.digests)

    @admin.display(description="gaps")
    def gaps_link(self, obj: GapDismissal) -> str:
        url = reverse(f"{self.admin_site.name}:retrieval_gapdismissal_gaps", args=[obj.collection_id])
        return format_html('<a href="{}">gaps of {}</a>', url, obj.collection)

    def gaps_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        collection = object_for_tool(self.admin_site.get_model_admin(Collection), request, object_id, change=False)
        if not may(request, collection.tenant_id, Role.ADMIN):
            raise PermissionDenied("The questions nobody could answer are shown to the tenant's admins only.")
        here = reverse(f"{self.admin_site.name}:retrieval_gapdismissal_gaps", args=[collection.pk])
        if request.method == "POST":
            return self._dismiss(request, collection, here)
        report = collection_gaps(collection=collection)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Gaps of {collection.name}: the questions nobody could answer",
            "opts": Collection._meta,  # breadcrumbs through the collection
            "original": collection,
            "report": report,
            "recording_note": recording_note(),
            "rows": [self._row(request, collection, gap) for gap in report.gaps],
        }
        return TemplateResponse(request, "admin/retrieval/gapdismissal/gaps.html", context)

    def _dismiss(self, request: HttpRequest, collection: Collection, here: str) -> HttpResponse:
        try:
            gap, _ = gap_dismiss(
                collection=collection,
                question=request.POST.get("question", ""),
                dismissed_by=request.user.get_username(),
            )
        except DomainError as exc:
            self.message_user(request, f"Not dismissed: {exc}.", messages.ERROR)
        else:
            searches = f"{gap.count} search{'es' if gap.count != 1 else ''}"
            self.message_user(request, f"Dismissed “{gap.question}” ({searches}): hidden until it is asked again.",
                              messages.SUCCESS)  # fmt: skip
        return HttpResponseRedirect(here)

    def _row(self, request: HttpRequest, collection: Collection, gap: Gap) -> dict[str, Any]:
        site = self.admin_site.name
        try_url = reverse(f"{site}:retrieval_searchevent_try_search", args=[collection.pk])
        golden = reverse(f"{site}:retrieval_goldenquestion_add")
        add = {"collection": collection.pk, "question": gap.question}
        # Tried as the reader its latest search was made for (a per-reader collection is searched as someone).
        asked = {"q": gap.question, **({"reader": gap.reader_id} if gap.reader_id else {})}
        may_add = may(request, collection.tenant_id, Role.EDITOR)  # golden questions are the editors' (and admins')
        if len(urlencode({"question": gap.question})) > LINK_QUESTION_BYTES:
            # A long question (1,500 Cyrillic characters is 27 KB encoded) would overflow the web server's request
            # line (a bare 414): the link names the gap by its digest, and the page it opens reads the question back.
            add = {"collection": collection.pk, "gap": gap.key}
            asked = {"gap": gap.key, **({"reader": gap.reader_id} if gap.reader_id else {})}
        return {
            "gap": gap,
            "badge_meaning": BADGES.get(gap.badge, gap.badge),
            "reasons": ", ".join(REASONS.get(r, r) for r in gap.reasons),
            "try_url": f"{try_url}?{urlencode(asked)}",
            "golden_url": f"{golden}?{urlencode(add)}" if may_add else "",
            "control_url": f"{golden}?{urlencode({**add, 'control': 1})}" if may_add else "",
        }
