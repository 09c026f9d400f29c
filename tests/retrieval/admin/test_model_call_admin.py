"""Admin: model calls per agent per day with totals, for the tenant's admins only; judges for editors."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from accounts.models import Agent, Membership, Role
from retrieval.models import CollectionJudge, ModelCall
from retrieval.services.judges import NO_ENDPOINT_WARNING


def _call(tenant, agent, days_ago: int, tokens_in: int, tokens_out: int, ms: float, ok: bool = True) -> ModelCall:
    call = ModelCall.objects.create(
        tenant=tenant, agent=agent, agent_name=agent.name, kind="judge", model="judge-7b",
        tokens_in=tokens_in, tokens_out=tokens_out, duration_ms=ms, ok=ok,
    )  # fmt: skip
    ModelCall.objects.filter(pk=call.pk).update(created_at=timezone.now() - timedelta(days=days_ago))
    return call


def _login(client, tenant, role: Role):
    user = User.objects.create_user(f"{role}-person", password="pw", is_staff=True)
    Membership.objects.create(user=user, tenant=tenant, role=role)
    client.force_login(user)
    return client


@pytest.fixture
def charged(cast):
    other_agent = Agent.objects.create(tenant=cast.tenant, name="report-bot")
    their_agent = Agent.objects.create(tenant=cast.outsider_tenant, name="globex-bot")
    _call(cast.tenant, cast.agent, 0, 100, 10, 1500)
    _call(cast.tenant, cast.agent, 0, 200, 20, 500, ok=False)
    _call(cast.tenant, cast.agent, 1, 50, 5, 250)
    _call(cast.tenant, other_agent, 0, 7, 1, 100)
    _call(cast.outsider_tenant, their_agent, 0, 9999, 999, 9999)


def test_an_admin_sees_calls_per_agent_per_day_with_totals_of_its_tenant_only(cast, client, charged) -> None:
    _login(client, cast.tenant, Role.ADMIN)
    response = client.get("/admin/retrieval/modelcall/")

    assert response.status_code == 200
    rows = {(r["day"], r["agent_name"]): r for r in response.context["daily_rows"]}
    today = timezone.localdate()
    support_today = rows[(today, "support-bot")]
    assert (support_today["calls"], support_today["failed"]) == (2, 1)
    assert (support_today["tokens_in"], support_today["tokens_out"], support_today["seconds"]) == (300, 30, 2.0)
    assert rows[(today - timedelta(days=1), "support-bot")]["calls"] == 1
    assert rows[(today, "report-bot")]["tokens_in"] == 7
    total = response.context["daily_total"]
    assert (total["calls"], total["tokens_in"], total["tokens_out"]) == (4, 357, 36)
    html = response.content.decode()
    assert 'id="daily-totals"' in html and "globex-bot" not in html and "9999" not in html


def test_the_totals_follow_the_lists_filters(cast, client, charged) -> None:
    _login(client, cast.tenant, Role.ADMIN)
    response = client.get("/admin/retrieval/modelcall/", {"agent__id__exact": str(cast.agent.pk)})

    assert response.context["daily_total"]["calls"] == 3
    assert {r["agent_name"] for r in response.context["daily_rows"]} == {"support-bot"}


@pytest.mark.parametrize("role", [Role.VIEWER, Role.EDITOR])
def test_below_admin_the_costs_are_forbidden(cast, client, charged, role) -> None:
    _login(client, cast.tenant, role)
    assert client.get("/admin/retrieval/modelcall/").status_code == 403
    call = ModelCall.objects.filter(tenant=cast.tenant).earliest("created_at")
    assert client.get(f"/admin/retrieval/modelcall/{call.pk}/change/").status_code == 403


def test_an_editor_gives_a_collection_a_judge_in_its_own_tenant(cast, client, collection) -> None:
    _login(client, cast.tenant, Role.EDITOR)
    response = client.post(
        "/admin/retrieval/collectionjudge/add/",
        {"collection": collection.pk, "enabled": "on", "model": "", "timeout": "3", "prompt": ""},
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    judge = CollectionJudge.objects.get(collection=collection)
    assert judge.tenant == cast.tenant and judge.timeout == 3 and judge.enabled
    refused = client.post(
        "/admin/retrieval/collectionjudge/add/", {"collection": collection.pk, "timeout": "0", "enabled": "on"}
    )
    assert "above 0" in refused.content.decode()


def test_enabling_a_judge_without_a_chat_endpoint_warns_on_save(cast, client, collection, settings) -> None:
    settings.KB_LLM_URL = ""
    _login(client, cast.tenant, Role.EDITOR)
    add = {"collection": collection.pk, "model": "", "timeout": "", "prompt": ""}

    saved = client.post("/admin/retrieval/collectionjudge/add/", {**add, "enabled": "on"}, follow=True)

    shown = [(m.level_tag, str(m)) for m in saved.context["messages"]]
    assert ("warning", f"{collection}: {NO_ENDPOINT_WARNING}.") in shown
    judge = CollectionJudge.objects.get(collection=collection)
    disabled = client.post(f"/admin/retrieval/collectionjudge/{judge.pk}/change/", add, follow=True)
    assert not [m for m in disabled.context["messages"] if m.level_tag == "warning"]  # off: nothing to warn about
