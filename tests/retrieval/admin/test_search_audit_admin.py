"""The searches audit in the admin: three-valued refused filter, collection, agent and date filters, the trace
as a table, what a refusal withheld and the question — both for the tenant's admins only — and nothing of
another tenant."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone

from accounts.models import Agent, Membership, Role
from collections_app.models import Chunk, Document
from retrieval.models import SearchEvent
from tests.files.documents import HANDBOOK, docx_bytes

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:retrieval_searchevent_changelist"


def _person(cast, name: str, role: Role) -> User:
    user = User.objects.create_user(name, password="pw", is_staff=True)
    Membership.objects.create(user=user, tenant=cast.tenant, role=role)
    return user


@pytest.fixture
def events(cast, collection, upload, settings):
    """A real search (real trace, question kept) and one event per refused value, plus another tenant's."""
    settings.KB_AUDIT_QUESTIONS = True
    upload(cast.editor, collection, "handbook.docx", docx_bytes(HANDBOOK))
    cast.agent.collections.add(collection)
    answer = cast.agent_client.post("/api/search", {"query": "when is my money paid back"}, format="json")
    assert answer.status_code == 200, answer.content
    real = SearchEvent.objects.get(pk=answer.json()["search_id"])
    other_agent = Agent.objects.create(tenant=cast.tenant, name="hr-bot")
    refused = SearchEvent.objects.create(
        tenant=cast.tenant, agent=other_agent, collections=["hr"], refused=True, reason="judge_refused",
        question="what is the CEO's salary",
        withheld=[{"text": "The CEO earns a secret amount.", "score": 0.91, "section": ["Pay"],
                   "document": {"filename": "pay.docx"}}],
    )  # fmt: skip
    approved = SearchEvent.objects.create(
        tenant=cast.tenant, collections=["hr"], refused=False, on_behalf_of=cast.agent
    )
    unknown = SearchEvent.objects.create(tenant=cast.tenant, collections=["handbook"], refused=None)
    old = SearchEvent.objects.create(tenant=cast.tenant, collections=["handbook"])
    SearchEvent.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=40))
    theirs = SearchEvent.objects.create(
        tenant=cast.outsider_tenant, collections=["globex-secrets"], refused=True, question="globex question"
    )
    return {"real": real, "refused": refused, "approved": approved, "unknown": unknown, "old": old, "theirs": theirs}


def _listed(client, query: str = "") -> set:
    html = client.get(reverse(CHANGELIST) + query).content.decode()
    return {pk for pk in SearchEvent.objects.values_list("pk", flat=True) if f"/searchevent/{pk}/change/" in html}


def test_the_refused_filter_keeps_its_three_values_apart(cast, events, client):
    client.force_login(_person(cast, "ada", Role.ADMIN))
    e = events
    everything = {e["real"].pk, e["refused"].pk, e["approved"].pk, e["unknown"].pk, e["old"].pk}

    assert _listed(client) == everything  # and nothing of the other tenant
    assert _listed(client, "?refused=true") == {e["refused"].pk}
    assert _listed(client, "?refused=false") == {e["approved"].pk}
    assert e["real"].refused is None  # no judge configured: the search could not refuse
    assert _listed(client, "?refused=null") == {e["real"].pk, e["unknown"].pk, e["old"].pk}


def test_collection_agent_and_date_filters_narrow_the_list(cast, events, client):
    client.force_login(_person(cast, "ada", Role.ADMIN))
    e = events
    html = client.get(reverse(CHANGELIST)).content.decode()
    assert "globex" not in html  # no filter choice, row or name of the other tenant

    assert _listed(client, "?collection=hr") == {e["refused"].pk, e["approved"].pk}
    assert _listed(client, f"?agent__id__exact={cast.agent.pk}") == {e["real"].pk}
    assert _listed(client, f"?on_behalf_of__id__exact={cast.agent.pk}") == {e["approved"].pk}
    since = urlencode({"created_at__gte": (timezone.now() - timedelta(days=7)).isoformat()})
    assert e["old"].pk not in _listed(client, f"?{since}")
    assert e["real"].pk in _listed(client, f"?{since}")


def test_another_tenants_events_are_not_listed_nor_opened(cast, events, client):
    client.force_login(_person(cast, "ada", Role.ADMIN))
    assert events["theirs"].pk not in _listed(client, f"?tenant__id__exact={cast.outsider_tenant.pk}")
    page = client.get(reverse("admin:retrieval_searchevent_change", args=[events["theirs"].pk]))
    assert page.status_code in (302, 404)
    assert "globex question" not in page.content.decode()


def test_the_trace_is_a_table_of_stages_with_status_reason_time_and_candidates(cast, events, client):
    client.force_login(_person(cast, "vic", Role.VIEWER))
    html = client.get(reverse("admin:retrieval_searchevent_change", args=[events["real"].pk])).content.decode()
    for header in ("<th>stage</th>", "<th>status</th>", "<th>reason</th>", "<th>ms</th>", "<th>candidates</th>"):
        assert header in html
    assert "<td>keyword retrieval</td><td>ran</td>" in html
    assert "<td>judge</td><td>skipped</td>" in html  # the reason beside it, e.g. no endpoint configured
    assert "(hits)" in html and "(candidates)" in html


def test_the_question_and_what_was_withheld_are_for_the_tenants_admins_only(cast, events, client, settings):
    url = reverse("admin:retrieval_searchevent_change", args=[events["refused"].pk])
    client.force_login(_person(cast, "ada", Role.ADMIN))
    as_admin = client.get(url).content.decode()
    assert "what is the CEO&#x27;s salary" in as_admin
    assert "The CEO earns a secret amount." in as_admin and "pay.docx" in as_admin
    assert "What the judge withheld" in as_admin
    assert "Question recording (KB_AUDIT_QUESTIONS) is on" in as_admin

    client.force_login(_person(cast, "ed", Role.EDITOR))
    as_editor = client.get(url).content.decode()
    assert "CEO" not in as_editor
    assert "shown to the tenant&#x27;s admins only" in as_editor
    assert "1 results; shown to the tenant&#x27;s admins only" in as_editor


def test_the_list_says_whether_questions_are_recorded(cast, events, client, settings):
    client.force_login(_person(cast, "ada", Role.ADMIN))
    settings.KB_AUDIT_QUESTIONS = False
    assert "Question recording (KB_AUDIT_QUESTIONS) is off" in client.get(reverse(CHANGELIST)).content.decode()
    settings.KB_AUDIT_QUESTIONS = True
    assert "Question recording (KB_AUDIT_QUESTIONS) is on" in client.get(reverse(CHANGELIST)).content.decode()


def test_refused_is_one_word_in_the_list_with_its_meaning_on_hover_and_on_the_event(cast, events, client):
    client.force_login(_person(cast, "ada", Role.ADMIN))
    html = client.get(reverse(CHANGELIST)).content.decode()
    assert '<span class="kb-refused" title="refused: nothing answers' in html and ">refused</span>" in html
    assert '<span class="kb-refused" title="approved: the judge approved the results">approved</span>' in html
    assert '<span class="kb-refused" title="no judge: this search could not refuse' in html
    assert ">no judge</span>" in html
    rows = html.split('id="result_list"')[1].split("</table>")[0]
    assert ">null<" not in rows and "null:" not in rows  # plain words in the rows, never the API's null

    page = client.get(reverse("admin:retrieval_searchevent_change", args=[events["unknown"].pk])).content.decode()
    assert "no judge: this search could not refuse (no judge configured, no endpoint, or the judge failed" in page


def test_each_event_lists_the_documents_it_returned_by_name_and_keeps_only_their_ids(cast, events, client):
    client.force_login(_person(cast, "ada", Role.ADMIN))
    real = events["real"]
    document = Document.objects.get(tenant=cast.tenant)
    assert real.documents == [str(document.pk)]  # ids only: no question, no text, no file name stored

    html = client.get(reverse(CHANGELIST)).content.decode()
    assert '<span class="kb-documents" title="handbook.docx">handbook.docx</span>' in html
    page = client.get(reverse("admin:retrieval_searchevent_change", args=[real.pk])).content.decode()
    assert f'<li><a href="/admin/collections_app/document/{document.pk}/change/">handbook.docx</a></li>' in page

    deleted = document.pk
    document.delete()
    page = client.get(reverse("admin:retrieval_searchevent_change", args=[real.pk])).content.decode()
    assert f"a document deleted since ({deleted})" in page
    assert "(deleted)" in client.get(reverse(CHANGELIST)).content.decode()


def test_another_tenants_document_id_in_an_event_is_not_named(cast, events, client):
    from collections_app.services.collections import collection_create

    theirs = collection_create(tenant=cast.outsider_tenant, name="globex-docs")
    secret = Document.objects.create(
        tenant=cast.outsider_tenant, collection=theirs, content_hash="0" * 64, filename="globex-plans.pdf",
        source_uri="upload://globex-plans.pdf",
    )  # fmt: skip
    SearchEvent.objects.filter(pk=events["approved"].pk).update(documents=[str(secret.pk), "not-an-id"])
    client.force_login(_person(cast, "ada", Role.ADMIN))
    assert "globex-plans" not in client.get(reverse(CHANGELIST)).content.decode()
    page = client.get(reverse("admin:retrieval_searchevent_change", args=[events["approved"].pk])).content.decode()
    assert "globex-plans" not in page and "a document deleted since" in page


def test_the_checks_of_an_answers_citations_are_shown_on_its_search_with_their_counts(cast, events, client):
    client.force_login(_person(cast, "ed", Role.EDITOR))
    real = events["real"]
    quote = "paid back to the original card"
    cited = str(Chunk.objects.get(pk__in=real.paragraphs, text__contains=quote).pk)
    body = {"search_id": str(real.pk), "on_behalf_of": "support-bot",
            "citations": [{"paragraph_id": cited, "quote": quote}, {"paragraph_id": "invented"}]}  # fmt: skip
    assert cast.agent_client.post("/api/citations/verify", body, format="json").status_code == 200

    html = client.get(reverse("admin:retrieval_searchevent_change", args=[real.pk])).content.decode()
    unchecked = client.get(reverse("admin:retrieval_searchevent_change", args=[events["approved"].pk])).content.decode()

    assert "Citations checked" in html and "quote exact" in html
    row = html.split("quote absent</th>")[1].split("</tr>")[1]
    cells = [c.split("</td>")[0] for c in row.split("<td>")[1:]]
    assert cells[1:] == ["agent support-bot", "support-bot", "2", "1", "1", "0", "0", "1", "1", "1", "0", "0"]
    assert quote not in html and cited not in html.split("Citations checked")[1]
    assert "no citation of this answer was checked" in unchecked
