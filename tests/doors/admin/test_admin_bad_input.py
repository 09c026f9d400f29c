"""No admin URL or action answers 500 for bad input, generated from the registered admin classes.

Every changelist's filters (their real parameter names, read off each filter spec), its date drill-down,
its search box and every action it offers are sent NUL, a lone surrogate, negative and huge numbers and a
non-UUID, as a superuser (who sees every page) and as a tenant's editor (who meets the tenant-scoped ones).
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import Client, RequestFactory
from django.urls import reverse

from accounts.models import Membership, Role

HOSTILE = ["\x00", "\ud800", "-1", "99999999999999999999", "not-a-uuid", "0"]


def _query(name: str, value: str) -> str:
    # quote() cannot encode a lone surrogate as UTF-8; send the bytes a client would (%ED%A0%80).
    encoded = quote(value.encode("utf-8", "surrogatepass"))
    return f"{quote(name)}={encoded}"


def _parameters(model_admin: admin.ModelAdmin, user: User) -> list[str]:
    request = RequestFactory().get("/")
    request.user = user
    changelist = model_admin.get_changelist_instance(request)
    names = {"q", "o", "p"}
    for spec in changelist.filter_specs:
        names.update(name for name in spec.expected_parameters() or [] if name)
    if model_admin.date_hierarchy:
        names.update(f"{model_admin.date_hierarchy}__{part}" for part in ("year", "month", "day"))
    return sorted(names)


def _actions(model_admin: admin.ModelAdmin, user: User) -> list[str]:
    request = RequestFactory().get("/")
    request.user = user
    return sorted(model_admin.get_actions(request))


REGISTERED = sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label)


@pytest.mark.parametrize(("model", "model_admin"), REGISTERED, ids=[m._meta.label for m, _ in REGISTERED])
def test_no_changelist_filter_or_action_answers_500_to_bad_input(cast, model, model_admin):
    root = User.objects.create_superuser("root", password="pw")
    editor = User.objects.create_user("ed", password="pw", is_staff=True)
    Membership.objects.create(user=editor, tenant=cast.tenant, role=Role.EDITOR)
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    for user in (root, editor):
        client = Client(raise_request_exception=False)
        client.force_login(user)
        failures = []
        for name in _parameters(model_admin, root):
            for value in HOSTILE:
                answer = client.get(f"{url}?{_query(name, value)}")
                if answer.status_code >= 500:
                    failures.append(f"GET {name}={value!r}: {answer.status_code}")
        for action in _actions(model_admin, root):
            for value in HOSTILE:
                body = f"action={quote(action)}&index=0&post=yes&{_query('_selected_action', value)}"
                answer = client.post(url, body, content_type="application/x-www-form-urlencoded")
                if answer.status_code >= 500:
                    failures.append(f"POST {action} {value!r}: {answer.status_code}")
        assert not failures, (user.username, failures[:10])


def test_a_bad_year_in_a_date_drill_down_is_a_400_that_says_why(cast):
    root = User.objects.create_superuser("root", password="pw")
    client = Client()
    client.force_login(root)

    answer = client.get(reverse("admin:collections_app_document_changelist") + "?created_at__year=-1")

    assert answer.status_code == 400 and "created_at__year must be a whole number" in answer.content.decode()
