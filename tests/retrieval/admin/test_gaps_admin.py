"""The gaps page in the admin: linked from the collection's page for its tenant's admins, the questions listed with
their counts and actions, the recording switch said plainly, dismissing, and nothing for anyone else."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts.issuing import api_key_create
from accounts.models import Membership, Reader, Role
from collections_app.services.collections import collection_create
from retrieval.models import GapDismissal, SearchEvent

pytestmark = pytest.mark.django_db

DOG = "Can I bring my dog to the office?"
SAUNA = "Is there a sauna on the roof?"


def gaps_url(collection) -> str:
    return reverse("admin:retrieval_gapdismissal_gaps", args=[collection.pk])


def _person(cast, name: str, role: Role) -> User:
    user = User.objects.create_user(name, password="pw", is_staff=True)
    Membership.objects.create(user=user, tenant=cast.tenant, role=role)
    return user


def _unanswered(cast, collection, question: str, times: int = 1, **extra) -> None:
    """Audit rows as an agent's empty searches leave them (the API tests make them by real searches)."""
    key = api_key_create(tenant=cast.tenant, role=Role.VIEWER, agent=cast.agent, readers="any").key
    for _ in range(times):
        SearchEvent.objects.create(tenant=cast.tenant, api_key=key, agent=cast.agent, collections=[collection.name],
                                   results=0, reason="below_floor", question=question, **extra)  # fmt: skip


@pytest.fixture
def gaps(cast, collection, settings):
    settings.KB_AUDIT_QUESTIONS = True
    _unanswered(cast, collection, DOG, times=3, reader=Reader.objects.create(tenant=cast.tenant, name="ada@x.org"))
    _unanswered(cast, collection, SAUNA)
    # Not gaps: an answered search, a staff member's try in the admin (no key, no agent), another collection's.
    SearchEvent.objects.create(
        tenant=cast.tenant, collections=[collection.name], results=2, question="Where do I park?"
    )
    SearchEvent.objects.create(tenant=cast.tenant, collections=[collection.name], results=0, question="staff try?")
    _unanswered(cast, collection_create(tenant=cast.tenant, name="other"), "Who runs the other one?")
    return collection


def test_an_admin_reaches_the_gaps_from_the_collection_and_sees_each_question_once(cast, client, gaps) -> None:
    client.force_login(_person(cast, "root", Role.ADMIN))
    page = client.get(reverse("admin:collections_app_collection_change", args=[gaps.pk])).content.decode()
    assert f'href="{gaps_url(gaps)}">Gaps</a>' in page
    html = client.get(gaps_url(gaps)).content.decode()
    assert html.index(DOG.replace("'", "&#x27;")) < html.index(SAUNA)  # most asked first
    assert '<td class="kb-gap-count">3×</td>' in html and '<td class="kb-gap-count">1×</td>' in html
    assert "ada@x.org" in html and "support-bot" in html and "nothing scored above the floor" in html
    for absent in ("Where do I park?", "staff try?", "Who runs the other one?"):
        assert absent not in html
    try_url = reverse("admin:retrieval_searchevent_try_search", args=[gaps.pk]) + "?" + urlencode({"q": SAUNA})
    golden = reverse("admin:retrieval_goldenquestion_add") + "?" + urlencode({"collection": gaps.pk, "question": SAUNA})
    assert f'href="{try_url}"'.replace("&", "&amp;") in html
    ada = Reader.objects.get(name="ada@x.org")  # asked as a reader: tried as that reader
    try_dog = (
        reverse("admin:retrieval_searchevent_try_search", args=[gaps.pk])
        + "?"
        + urlencode({"q": DOG, "reader": ada.pk})
    )
    assert f'href="{try_dog}"'.replace("&", "&amp;") in html
    assert f'href="{golden}"'.replace("&", "&amp;") in html
    assert f'href="{golden}&control=1"'.replace("&", "&amp;") in html
    assert "Question recording (KB_AUDIT_QUESTIONS) is on" in html


def test_editors_and_viewers_get_no_link_and_a_403(cast, client, gaps) -> None:
    for name, role in (("eddie", Role.EDITOR), ("vic", Role.VIEWER)):
        client.force_login(_person(cast, name, role))
        page = client.get(reverse("admin:collections_app_collection_change", args=[gaps.pk])).content.decode()
        assert gaps_url(gaps) not in page
        assert client.get(gaps_url(gaps)).status_code == 403
        assert client.post(gaps_url(gaps), {"question": DOG}).status_code == 403
    assert not GapDismissal.objects.exists()


def test_another_tenants_collection_has_no_gaps_page(cast, client, gaps) -> None:
    theirs = collection_create(tenant=cast.outsider_tenant, name=gaps.name)
    client.force_login(_person(cast, "root", Role.ADMIN))
    assert client.get(gaps_url(theirs)).status_code == 404


def test_with_recording_off_the_page_says_so_and_how_to_turn_it_on(cast, client, gaps, settings) -> None:
    settings.KB_AUDIT_QUESTIONS = False
    _unanswered(cast, gaps, "", times=2)  # asked while off: no question kept
    client.force_login(_person(cast, "root", Role.ADMIN))
    html = client.get(gaps_url(gaps)).content.decode()
    assert "Question recording (KB_AUDIT_QUESTIONS) is off" in html
    assert "set KB_AUDIT_QUESTIONS=1 in the server&#x27;s environment and restart it" in html
    assert "2 more unanswered searches kept no question" in html
    assert SAUNA in html  # kept before it was turned off


def test_dismiss_hides_a_gap_and_a_stale_dismiss_says_why(cast, client, gaps) -> None:
    client.force_login(_person(cast, "root", Role.ADMIN))
    done = client.post(gaps_url(gaps), {"question": SAUNA}, follow=True).content.decode()
    assert "hidden until it is asked again" in done and "1 dismissed gap hidden" in done
    assert '<td class="kb-gap-count">1×</td>' not in done
    again = client.post(gaps_url(gaps), {"question": SAUNA}, follow=True)
    assert (
        again.status_code == 200
        and "Not dismissed: no open gap of handbook asks that question" in again.content.decode()
    )
    dismissal = GapDismissal.objects.get()
    assert dismissal.dismissed_by == "root" and SAUNA not in str(dismissal.digests)
    listed = client.get(reverse("admin:retrieval_gapdismissal_changelist")).content.decode()
    assert "root" in listed and gaps_url(gaps) in listed


def test_the_page_reads_in_as_many_queries_however_many_gaps(cast, client, gaps) -> None:
    client.force_login(_person(cast, "root", Role.ADMIN))

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(gaps_url(gaps)).status_code == 200
        return len(captured)

    two = queries()
    for place in ("pool", "bar", "garden", "cinema", "helipad"):
        _unanswered(cast, gaps, f"Is there a rooftop {place}?", times=2)
    assert queries() == two


def test_rarer_wordings_past_the_limit_are_counted_not_listed(cast, client, gaps, monkeypatch) -> None:
    monkeypatch.setattr("retrieval.selectors.gaps.MAX_WORDINGS", 1)
    client.force_login(_person(cast, "root", Role.ADMIN))
    html = client.get(gaps_url(gaps)).content.decode()
    assert html.count('class="kb-gap"') == 1 and SAUNA not in html  # the most asked stays
    assert "1 rarer wording asked fewer times than those below is not listed" in html


def test_a_long_questions_links_name_it_by_digest_and_open_with_it_for_admins_only(cast, client, gaps) -> None:
    """1,500 Cyrillic characters are 27 KB as a query string: past the web server's request line (a bare 414)."""
    long_question = "Можно ли взять собаку в офис " + "и кошку " * 185 + "?"
    assert len(long_question) > 1500
    _unanswered(cast, gaps, long_question, times=4)
    root = _person(cast, "root", Role.ADMIN)
    client.force_login(root)
    html = client.get(gaps_url(gaps)).content.decode()
    links = [link for link in html.split('href="')[1:] if "gap=" in link.split('"')[0]]
    assert len(links) == 3  # try, golden, control: each short, none carrying the question
    assert all(len(link.split('"')[0]) < 300 and "%D0" not in link.split('"')[0] for link in links)
    try_link, golden_link = (link.split('"')[0].replace("&amp;", "&") for link in links[:2])

    staff_tries = SearchEvent.objects.filter(question=long_question, api_key=None)
    assert client.get(try_link).status_code == 200
    assert staff_tries.count() == 1  # the page searched with the whole question, read back from its digest
    form = client.get(golden_link).context["adminform"].form
    assert form.initial["question"] == long_question and str(form.initial["collection"]) == str(gaps.pk)

    # A viewer who may try a search gets no question from a digest: the page opens empty.
    client.force_login(_person(cast, "vic", Role.VIEWER))
    opened = client.get(try_link)
    assert opened.status_code == 200 and "кошку" not in opened.content.decode() and staff_tries.count() == 1


def test_a_viewer_who_follows_a_gaps_link_reads_why_in_the_admins_frame(cast, client, gaps) -> None:
    client.force_login(_person(cast, "vic", Role.VIEWER))
    refused = client.get(gaps_url(gaps))
    page = refused.content.decode()
    assert refused.status_code == 403
    assert "shown to the tenant&#x27;s admins only" in page and 'id="site-name"' in page  # not a bare "403 Forbidden"
