"""The admin grants only what the membership role allows (issue 10, item 5). The full grid is in
tests/test_authorization_matrix.py; these are the rules told as stories."""

from __future__ import annotations

import uuid
from io import StringIO

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client, RequestFactory

from accounts.models import ApiKey, Membership, Role, Tenant
from collections_app.admin import MembershipForm
from collections_app.models import Build, Chunk, Collection, Document
from collections_app.services.collections import collection_create
from doors.admin.roles import grantable_roles, membership_role_for
from retrieval.models import SearchEvent


def _staff(username: str, **roles: Role) -> User:
    """A staff member with every kbsite model permission (which must not matter) and these roles."""
    user = User.objects.create_user(username, password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=["collections_app", "retrieval"]))
    for tenant_name, role in roles.items():
        Membership.objects.create(user=user, tenant=Tenant.objects.get(name=tenant_name), role=role)
    return user


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _document(collection: Collection, name: str) -> Document:
    return Document.objects.create(
        tenant=collection.tenant,
        collection=collection,
        content_hash=uuid.uuid4().hex * 2,
        filename=name,
        source_uri=f"upload://{name}",
        file=f"x/{name}",
        status="done",
    )


@pytest.fixture
def two_tenants(cast):
    """acme's and globex's collections, documents, paragraphs and builds."""
    rows = {}
    for tenant, tag in ((cast.tenant, "acme"), (cast.outsider_tenant, "globex")):
        collection = collection_create(tenant=tenant, name=f"{tag}-handbook")
        document = _document(collection, f"{tag}-guide.txt")
        Chunk.objects.create(tenant=tenant, collection=collection, document=document, text="t")
        Build.objects.create(tenant=tenant, collection=collection, model=f"{tag}-model", dims=384, built_from="x")
        rows[tag] = (collection, document)
    return rows


def test_an_editor_here_and_viewer_there_edits_here_and_only_views_there(
    cast, two_tenants, django_capture_on_commit_callbacks
):
    client = _client(_staff("mixed", acme=Role.EDITOR, globex=Role.VIEWER))
    (ours, our_doc), (theirs, their_doc) = two_tenants["acme"], two_tenants["globex"]

    assert 'name="_save"' in client.get(f"/admin/collections_app/collection/{ours.pk}/change/").content.decode()
    page = client.get(f"/admin/collections_app/collection/{theirs.pk}/change/")
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()  # read-only
    assert client.post(f"/admin/collections_app/collection/{theirs.pk}/change/", {"name": "x"}).status_code == 403
    assert client.get(f"/admin/collections_app/collection/{theirs.pk}/delete/").status_code == 403
    assert client.get(f"/admin/collections_app/document/{our_doc.pk}/ocr/").status_code == 200
    assert client.get(f"/admin/collections_app/document/{their_doc.pk}/ocr/").status_code == 403
    for form in ("document", "collection"):  # new rows go only where the person may write
        html = client.get(f"/admin/collections_app/{form}/add/").content.decode()
        assert "globex" not in html and ("acme" in html), form

    with django_capture_on_commit_callbacks() as queued:
        response = client.post(
            "/admin/collections_app/document/",
            {"action": "reingest", "_selected_action": [our_doc.pk, their_doc.pk]},
            follow=True,
        )
    messages = [str(m) for m in response.context["messages"]]
    assert len(queued) == 1 and "1 document(s) queued for ingestion." in messages
    assert any("left alone" in m for m in messages)

    client.post(
        "/admin/collections_app/collection/",
        {"action": "delete_selected", "_selected_action": [ours.pk, theirs.pk], "post": "yes"},
    )
    assert Collection.objects.filter(pk__in=[ours.pk, theirs.pk]).count() == 2  # all or nothing: refused


def test_model_permissions_grant_nothing_the_role_does_not(cast, two_tenants):
    viewer = _client(_staff("vera", acme=Role.VIEWER))
    editor = _client(_staff("ed", acme=Role.EDITOR))

    assert viewer.get("/admin/collections_app/collection/add/").status_code == 302  # told only editors add
    assert editor.get("/admin/collections_app/collection/add/").status_code == 200
    for page in ("accounts/apikey", "accounts/membership", "accounts/agent", "collections_app/readerlabel"):
        refused = editor.get(f"/admin/{page}/add/")  # an editor mints nothing: sent back to the list, told why
        assert refused.status_code == 302 and refused["Location"] == f"/admin/{page}/", page
    admin_keys = ApiKey.objects.filter(tenant=cast.tenant, role="admin").count()
    response = editor.post("/admin/accounts/apikey/add/", {"tenant": cast.tenant.pk, "role": "admin"})
    assert response.status_code == 302 and ApiKey.objects.filter(tenant=cast.tenant, role="admin").count() == admin_keys
    response = editor.post(
        "/admin/accounts/membership/add/",
        {"user": User.objects.get(username="ed").pk, "tenant": cast.tenant.pk, "role": "admin"},
    )
    assert response.status_code == 302 and Membership.objects.get(user__username="ed").role == Role.EDITOR
    assert editor.get("/admin/accounts/tenant/").status_code == 403
    assert editor.get("/admin/auth/user/").status_code == 403


def test_an_admin_gives_memberships_only_in_its_tenant_to_its_tenants_people(cast, two_tenants):
    admin_user = _staff("ada", acme=Role.ADMIN)
    colleague = _staff("colleague-cole", acme=Role.VIEWER)
    stranger = _staff("stranger-stan", globex=Role.VIEWER)
    client = _client(admin_user)

    form = client.get("/admin/accounts/membership/add/").content.decode()
    assert "colleague-cole" in form and "stranger-stan" not in form and "globex" not in form

    refused = client.post(
        "/admin/accounts/membership/add/", {"user": stranger.pk, "tenant": cast.tenant.pk, "role": "admin"}
    )
    assert refused.status_code == 200 and "Select a valid choice" in refused.content.decode()
    refused = client.post(
        "/admin/accounts/membership/add/",
        {"user": colleague.pk, "tenant": cast.outsider_tenant.pk, "role": "viewer"},
    )
    assert refused.status_code == 200 and not Membership.objects.filter(user=colleague, tenant=cast.outsider_tenant)

    membership = Membership.objects.get(user=colleague)
    response = client.post(
        f"/admin/accounts/membership/{membership.pk}/change/",
        {"user": colleague.pk, "tenant": cast.tenant.pk, "role": "editor"},
    )
    assert response.status_code == 302
    membership.refresh_from_db()
    assert membership.role == Role.EDITOR


def test_a_role_is_never_granted_above_the_granters_own(cast, rf: RequestFactory):
    request = rf.get("/")
    request.user = _staff("ed", acme=Role.EDITOR, globex=Role.ADMIN)
    assert grantable_roles(request, cast.tenant.pk) == [Role.VIEWER, Role.EDITOR]
    assert grantable_roles(request, cast.outsider_tenant.pk) == [Role.VIEWER, Role.EDITOR, Role.ADMIN]

    form_class = type("F", (MembershipForm,), {"granter": request})
    form = form_class({"user": request.user.pk, "tenant": cast.tenant.pk, "role": "admin"})
    assert not form.is_valid() and "at most editor" in str(form.errors["role"])


def test_the_key_admin_issues_keys_through_the_service_which_checks_the_agents_tenant(cast, client, monkeypatch):
    from accounts.models import Agent
    from collections_app.admin import access as kb_admin

    root = User.objects.create_superuser("root", password="pw")
    client.force_login(root)
    their_agent = Agent.objects.create(tenant=cast.outsider_tenant, name="their-bot")

    response = client.post(
        "/admin/accounts/apikey/add/",
        {"tenant": cast.tenant.pk, "role": "viewer", "agent": their_agent.pk, "name": "crossed"},
    )
    assert response.status_code == 200 and "agent of another tenant" in response.content.decode()
    assert not ApiKey.objects.filter(name="crossed").exists()

    calls = []
    real = kb_admin.api_key_create

    def spy(**kwargs):
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(kb_admin, "api_key_create", spy)
    response = client.post(
        "/admin/accounts/apikey/add/",
        {"tenant": cast.tenant.pk, "role": "viewer", "agent": cast.agent.pk, "name": "bot"},
    )
    assert response.status_code == 302 and len(calls) == 1
    assert ApiKey.objects.get(name="bot").agent == cast.agent


@pytest.mark.parametrize("model", [Build, Chunk, SearchEvent])
def test_audit_rows_cannot_be_deleted_even_by_a_superuser(cast, two_tenants, client, model):
    if model is SearchEvent:
        SearchEvent.objects.create(tenant=cast.tenant, collections=["acme-handbook"])
    client.force_login(User.objects.create_superuser("root", password="pw"))
    row = model.objects.filter(tenant=cast.tenant).first()
    base = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"

    assert client.get(f"{base}{row.pk}/delete/").status_code == 403
    assert client.post(f"{base}{row.pk}/delete/", {"post": "yes"}).status_code == 403
    assert "delete_selected" not in client.get(base).content.decode()
    client.post(base, {"action": "delete_selected", "_selected_action": [row.pk], "post": "yes"})
    assert model.objects.filter(pk=row.pk).exists()


def test_deleting_a_collection_takes_its_paragraphs_and_builds_with_it(
    cast, two_tenants, django_capture_on_commit_callbacks
):
    client = _client(_staff("ed", acme=Role.EDITOR))
    collection, _ = two_tenants["acme"]

    page = client.get(f"/admin/collections_app/collection/{collection.pk}/delete/").content.decode()
    assert "permission" not in page.lower()  # paragraphs and builds are not the editor's to delete one by one
    with django_capture_on_commit_callbacks(execute=True):  # the removal queued on commit, run as a worker would
        response = client.post(f"/admin/collections_app/collection/{collection.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Build.objects.filter(collection_id=collection.pk).exists()
    assert not Collection.all_objects.filter(pk=collection.pk).exists()


def test_list_filters_offer_only_the_tenants_own_names(cast, two_tenants):
    second = collection_create(tenant=cast.tenant, name="acme-second")  # two choices: the filters are shown
    document = _document(second, "acme-notes.txt")
    Chunk.objects.create(tenant=cast.tenant, collection=second, document=document, text="t")
    client = _client(_staff("vera", acme=Role.VIEWER))

    for page, ours in [
        ("collections_app/document/", "acme-second"),
        ("collections_app/chunk/", "acme-second"),
        ("collections_app/build/", "acme-model"),
    ]:
        html = client.get(f"/admin/{page}").content.decode()
        sidebar = html[html.index('id="changelist-filter"') :]
        assert ours in sidebar and "globex" not in sidebar, page


def test_membership_role_for(cast):
    user = _staff("ed", acme=Role.EDITOR)
    assert membership_role_for(user, cast.tenant) == Role.EDITOR
    assert membership_role_for(user, cast.outsider_tenant.pk) is None


# --- manage.py add_staff ------------------------------------------------------------------------------


def _add_staff(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("add_staff", *args, stdout=out, stderr=err)
    return out.getvalue().strip(), err.getvalue()


def test_add_staff_creates_a_member_prints_the_password_once_and_is_idempotent(db, client):
    password, said = _add_staff("vera", "--tenant", "acme", "--role", "viewer")
    assert "created" in said and password
    user = User.objects.get(username="vera")
    assert user.is_staff and not user.is_superuser and user.check_password(password)
    assert membership_role_for(user, Tenant.objects.get(name="acme")) == Role.VIEWER

    again, said = _add_staff("vera", "--tenant", "acme", "--role", "viewer")
    assert again == "" and "unchanged" in said
    _, said = _add_staff("vera", "--tenant", "acme", "--role", "editor")
    assert "role set" in said and Membership.objects.get(user=user).role == Role.EDITOR
    assert User.objects.get(username="vera").check_password(password)  # kept

    assert client.login(username="vera", password=password)
    assert client.get("/admin/collections_app/collection/add/").status_code == 200  # an editor now
    assert client.get("/admin/accounts/apikey/add/").status_code == 302


def test_add_staff_takes_the_password_from_the_environment(db, monkeypatch):
    monkeypatch.setenv("VERA_PASSWORD", "a long passphrase of words")
    printed, _ = _add_staff("vera", "--tenant", "acme", "--role", "admin", "--password-from-env", "VERA_PASSWORD")
    assert printed == "" and User.objects.get(username="vera").check_password("a long passphrase of words")

    with pytest.raises(CommandError, match="NOPE"):
        _add_staff("vera", "--tenant", "acme", "--role", "admin", "--password-from-env", "NOPE")


def test_an_editor_opening_the_key_add_page_sees_the_admin_and_why_not_a_bare_403(cast, two_tenants):
    editor = _client(_staff("ed", acme=Role.EDITOR))

    page = editor.get("/admin/accounts/apikey/add/", follow=True)

    assert page.status_code == 200
    html = page.content.decode()
    assert "Only tenant admins add API keys" in html and 'id="nav-sidebar"' in html
