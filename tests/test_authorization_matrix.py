"""The authorization matrix, generated: every admin page and every API endpoint, by role and own/other tenant.

Pages come from the admin registry (each ModelAdmin's URLs, custom tool pages included) and endpoints
from the URL resolver, so a new page or endpoint is covered, and a new model must be given a rule in
RULES before the suite passes. One world is built per module (rolled back at the end); each case runs in
its own savepoint.

The cast: tenant "tenant-wombat" (own) holds a viewer, an editor and an admin; "tenant-quokka" (other)
holds the same kinds of rows. Every name of the other tenant contains "quokka", so a page that shows
any of it (a row, a filter choice, a dropdown option) is caught by one substring test.

Reader delegation is a column of the API half: every endpoint whose request (the OpenAPI schema) takes a
`reader` is asked, by every role, for a reader its key was given, one it was not, and another tenant's, with
keys made for no reader, for some, and for any.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import Group, User
from django.core.cache import caches
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.test import override_settings
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone
from django_q.models import OrmQ, Schedule, Task
from rest_framework.test import APIClient
from rest_framework.views import APIView

from accounts.issuing import ANY_READER, api_key_create
from accounts.models import ROLE_RANK, Agent, Membership, Reader, Role, Tenant
from collections_app.models import (
    Build,
    Chunk,
    Collection,
    CollectionFile,
    Document,
    DocumentVersion,
    ParagraphEdit,
    ReaderLabel,
)
from retrieval.models import (
    CollectionJudge,
    Evaluation,
    GapDismissal,
    GoldenQuestion,
    Measure,
    ModelCall,
    SearchEvent,
)

OTHER = "quokka"  # in every name of the other tenant
OWN = "wombat"
UNDELEGATED_READER = f"{OWN}-second-reader"  # a reader of the own tenant that "some" keys were not given
SCOPED = "scoped-only"  # the one collection of the own tenant an agent-restricted key reaches

# --- the rules ----------------------------------------------------------------------------------------
# label -> (role needed to read, role needed to add/change/delete); SUPERUSER: not any tenant's page.
SUPERUSER = "superuser only"
AUDIT = (Role.VIEWER, None)  # read by every member; nobody writes or deletes, superusers included
RULES: dict[str, Any] = {
    "auth.User": SUPERUSER,
    "auth.Group": SUPERUSER,
    "django_q.Schedule": SUPERUSER,
    "django_q.Success": SUPERUSER,
    "django_q.Failure": SUPERUSER,
    "django_q.OrmQ": SUPERUSER,
    "accounts.Tenant": SUPERUSER,
    "accounts.Membership": (Role.VIEWER, Role.ADMIN),
    "accounts.ApiKey": (Role.VIEWER, Role.ADMIN),
    "accounts.Agent": (Role.VIEWER, Role.ADMIN),
    "collections_app.ReaderLabel": (Role.VIEWER, Role.ADMIN),
    "collections_app.Collection": (Role.VIEWER, Role.EDITOR),
    "collections_app.Document": (Role.VIEWER, Role.EDITOR),
    "collections_app.Chunk": AUDIT,
    "collections_app.Build": AUDIT,
    # Exports and imports: listed to every member; started, downloaded (whole paragraphs) and removed by editors.
    "collections_app.CollectionFile": (Role.VIEWER, Role.EDITOR),
    "retrieval.SearchEvent": AUDIT,
    "retrieval.ModelCall": (Role.ADMIN, None),  # what agents cost: the tenant's admins read it, nobody writes
    "retrieval.CollectionJudge": (Role.VIEWER, Role.EDITOR),
    "retrieval.GoldenQuestion": (Role.EDITOR, Role.EDITOR),  # the editors' own test set, read by them only
    "retrieval.Evaluation": (Role.EDITOR, None),  # written by "Evaluate" (a golden questions tool page) only
    "retrieval.Measure": (Role.EDITOR, None),  # written by its task only; "Apply" (a POST) changes the collection
    # Who hid which unanswered question: the tenant's admins (as the audit's questions); made on the gaps page only.
    "retrieval.GapDismissal": (Role.ADMIN, None),
}
# Tool pages of an object (get_urls) need the role that writes the model, unless listed here as reading.
READ_TOOL_PAGES: set[str] = {
    "collections_app_document_status",  # the list's live status cells
    "collections_app_document_download",  # the stored original
    "collections_app_document_preview",  # chunking preview: writes nothing
    "retrieval_searchevent_try_search",  # try a search: reads, and records the audit event
    "collections_app_collection_preview",  # chunking preview of one of its documents (applying is a POST, editors)
    "collections_app_collection_reindex_status",  # the page's live re-index progress
    "retrieval_gapdismissal_gaps",  # a collection's gaps: reads (dismissing is a POST of the same page)
    "collections_app_document_versions_diff",  # what changed between two versions: reads
}
# Tool pages of another app's admin that take a collection's id (collections_app links to them by URL name).
COLLECTION_TOOL_PAGES: set[str] = {"retrieval_searchevent_try_search", "retrieval_gapdismissal_gaps"}
# Tool pages that only take a POST: whoever may use them is answered 405 on a GET (the rest 403, as anywhere).
POST_ONLY_PAGES: set[str] = {
    "retrieval_goldenquestion_from_search",  # "Try a search"'s buttons keep a golden question
}

STAFF_ROLES = [Role.VIEWER, Role.EDITOR, Role.ADMIN]
ROLES = [*STAFF_ROLES, "superuser"]
SIDES = ["own", "other"]


# --- the world, built once per module ---------------------------------------------------------------


@dataclass
class World:
    tenants: dict[str, Tenant]
    objects: dict[tuple[str, str], Any]  # (model label, side) -> a row
    users: dict[str, User]
    keys: dict[str, str]  # role -> secret of an own-tenant key (acting for no reader)
    agent_key: str  # an own-tenant editor key whose agent reaches only SCOPED, not the own collection
    delegated_keys: dict[tuple[str, str], str]  # (role, delegation) -> secret of an own-tenant key


def _tenant_rows(tenant: Tenant, tag: str) -> dict[str, Any]:
    collection = Collection.objects.create(tenant=tenant, name=f"{tag}-collection")
    agent = Agent.objects.create(tenant=tenant, name=f"{tag}-agent")
    agent.collections.add(collection)
    key = api_key_create(tenant=tenant, role=Role.VIEWER, agent=agent, name=f"{tag}-key").key
    document = Document.objects.create(
        tenant=tenant,
        collection=collection,
        content_hash=uuid.uuid4().hex * 2,
        filename=f"{tag}-doc.txt",
        source_uri=f"upload://{tag}-doc.txt",
        status="done",
        progress=100,
    )
    document.file.save(f"{tag}-doc.txt", ContentFile(f"{tag} text".encode()))  # the download page streams it
    DocumentVersion.objects.create(
        tenant=tenant, document=document, number=1, filename=document.filename, content_hash=document.content_hash,
        file=document.file.name, status="current",
    )  # fmt: skip
    chunk = Chunk.objects.create(
        tenant=tenant, collection=collection, document=document, text=f"{tag} text", language=tag[:10]
    )
    build = Build.objects.create(
        tenant=tenant, collection=collection, document=document, model=f"{tag}-model", dims=384, built_from="upload"
    )
    # A stale edit (one that no longer applies): revert, re-apply and discard each have a row to act on.
    paragraph_edit = ParagraphEdit.objects.create(
        tenant=tenant, collection=collection, document=document, operation="edit", status="stale",
        anchor={"hash": "0" * 64}, before=[{"text": f"{tag} old"}], after=[{"text": f"{tag} text"}],
    )  # fmt: skip
    event = SearchEvent.objects.create(tenant=tenant, api_key=key, agent=agent, collections=[f"{tag}-collection"])
    member = User.objects.create_user(f"{tag}-user", password="pw", is_staff=True)
    membership = Membership.objects.create(user=member, tenant=tenant, role=Role.VIEWER)
    label = ReaderLabel.objects.create(tenant=tenant, name=f"{tag}-label")
    reader = Reader.objects.create(tenant=tenant, name=f"{tag}-reader", labels=[f"{tag}-label"])
    judge = CollectionJudge.objects.create(tenant=tenant, collection=collection, model=f"{tag}-judge")
    call = ModelCall.objects.create(
        tenant=tenant, agent=agent, agent_name=agent.name, kind="judge", collection=collection
    )
    golden = GoldenQuestion.objects.create(
        tenant=tenant, collection=collection, question=f"{tag} question", markers=[f"{tag} text"]
    )
    evaluation = Evaluation.objects.create(tenant=tenant, collection=collection, status="done")
    measure = Measure.objects.create(tenant=tenant, collection=collection, status="done")
    dismissal = GapDismissal.objects.create(tenant=tenant, collection=collection, digests=["0" * 64])
    exported = CollectionFile.objects.create(
        tenant=tenant, collection=collection, kind="export", status="done", done=1, total=1,
        stored=default_storage.save(f"collection-files/{tag}.db", ContentFile(b"SQLite format 3\x00")),
    )  # fmt: skip
    # The collection's import, which GET .../import follows.
    CollectionFile.objects.create(tenant=tenant, collection=collection, kind="import", status="done", done=1, total=1)
    return {
        "collections_app.CollectionFile": exported,
        "retrieval.Measure": measure,
        "retrieval.GapDismissal": dismissal,
        "retrieval.GoldenQuestion": golden,
        "retrieval.Evaluation": evaluation,
        "accounts.Tenant": tenant,
        "collections_app.Collection": collection,
        "accounts.Agent": agent,
        "accounts.ApiKey": key,
        "collections_app.Document": document,
        "collections_app.Chunk": chunk,
        "collections_app.ParagraphEdit": paragraph_edit,
        "collections_app.Build": build,
        "retrieval.SearchEvent": event,
        "accounts.Membership": membership,
        "collections_app.ReaderLabel": label,
        "accounts.Reader": reader,
        "retrieval.CollectionJudge": judge,
        "retrieval.ModelCall": call,
        "auth.User": member,
    }


def _unscoped_rows(tag: str) -> dict[str, Any]:
    now = timezone.now()
    task = {"func": "math.floor", "started": now, "stopped": now, "group": tag}
    return {
        "auth.Group": Group.objects.create(name=f"{tag}-group"),
        "django_q.Schedule": Schedule.objects.create(name=f"{tag}-schedule", func="math.floor"),
        "django_q.Success": Task.objects.create(id=uuid.uuid4().hex, name=f"{tag}-ok", success=True, **task),
        "django_q.Failure": Task.objects.create(id=uuid.uuid4().hex, name=f"{tag}-failed", success=False, **task),
        "django_q.OrmQ": OrmQ.objects.create(key=tag, payload="x", lock=now),
    }


def _build_world() -> World:
    tenants = {
        "own": Tenant.objects.create(name=f"tenant-{OWN}"),
        "other": Tenant.objects.create(name=f"tenant-{OTHER}"),
    }
    objects: dict[tuple[str, str], Any] = {}
    for side, tag in (("own", OWN), ("other", OTHER)):
        for label, row in {**_tenant_rows(tenants[side], tag), **_unscoped_rows(tag)}.items():
            objects[(label, side)] = row
    users: dict[str, User] = {}
    keys: dict[str, str] = {}
    for role in STAFF_ROLES:
        users[role] = User.objects.create_user(f"{role}-{OWN}", password="pw", is_staff=True)
        Membership.objects.create(user=users[role], tenant=tenants["own"], role=role)
        keys[role] = api_key_create(tenant=tenants["own"], role=role, name=f"{OWN}-{role}-key").secret
    users["superuser"] = User.objects.create_superuser(f"root-{OWN}", password="pw")
    scoped = Agent.objects.create(tenant=tenants["own"], name=f"{OWN}-scoped-agent")
    scoped.collections.add(Collection.objects.create(tenant=tenants["own"], name=SCOPED))
    agent_key = api_key_create(tenant=tenants["own"], role=Role.EDITOR, agent=scoped, name=f"{OWN}-agent-key").secret
    Reader.objects.create(tenant=tenants["own"], name=UNDELEGATED_READER, labels=[f"{OWN}-label"])
    delegated_keys: dict[tuple[str, str], str] = {}
    own_reader = objects[("accounts.Reader", "own")]
    for role in STAFF_ROLES:
        delegated_keys[(role, "none")] = keys[role]
        for delegation, readers in (("some", [own_reader]), ("any", ANY_READER)):
            delegated_keys[(role, delegation)] = api_key_create(
                tenant=tenants["own"], role=role, name=f"{OWN}-{role}-{delegation}-key", readers=readers
            ).secret
    return World(
        tenants=tenants, objects=objects, users=users, keys=keys, agent_key=agent_key, delegated_keys=delegated_keys
    )


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker, _storage) -> Iterator[World]:
    # One world for the module inside an outer transaction; each test (the `db` fixture) runs in a
    # savepoint of it, and everything is rolled back at the end. Saves building it ~700 times.
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            yield _build_world()
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


@pytest.fixture(scope="module")
def _storage(tmp_path_factory) -> Iterator[None]:
    # Overrides conftest's per-test storage: one directory for the module keeps each case cheap.
    with override_settings(MEDIA_ROOT=tmp_path_factory.mktemp("storage")):
        yield


@pytest.fixture(autouse=True)
def _no_throttle_carry_over() -> None:
    for cache in caches.all():
        cache.clear()


# --- admin pages ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    label: str
    url_name: str
    kind: str  # changelist, add, change, delete, history, or a tool page's own name
    param: str | None  # the object's id in the URL, if the page is about one object

    @property
    def takes_object(self) -> bool:
        return self.param is not None

    def __str__(self) -> str:
        return f"{self.label}:{self.kind}"


def admin_pages() -> list[Page]:
    pages = []
    for model, model_admin in admin.site._registry.items():
        prefix = f"{model._meta.app_label}_{model._meta.model_name}_"
        for pattern in model_admin.get_urls():
            if pattern.name is None:  # the bare <object_id>/ redirect to change/
                continue
            param = next(iter(pattern.pattern.regex.groupindex), None)  # object_id (or id: a user's password)
            pages.append(Page(model._meta.label, pattern.name, pattern.name.removeprefix(prefix), param))
    return pages


PAGES = admin_pages()


def test_every_registered_model_has_a_rule() -> None:
    unruled = sorted({p.label for p in PAGES} - RULES.keys())
    assert not unruled, f"decide who may see these admin pages, in RULES: {unruled}"


def _needed(page: Page) -> Role | str | None:
    rule = RULES[page.label]
    if rule == SUPERUSER:
        return SUPERUSER
    reader, writer = rule
    if page.kind in ("changelist", "change", "history") or page.url_name in READ_TOOL_PAGES:
        return reader
    return writer  # add, delete, and tool pages that act on the object


def _allowed(role: str, needed: Role | str | None) -> bool:
    if role == "superuser":
        return needed is not None  # audit rows: not even a superuser adds or deletes them
    if needed in (None, SUPERUSER):
        return False
    return ROLE_RANK[Role(role)] >= ROLE_RANK[Role(needed)]


def _admin_url(page: Page, world: World, side: str) -> str:
    if page.param is not None:
        label = "collections_app.Collection" if page.url_name in COLLECTION_TOOL_PAGES else page.label
        return reverse(f"admin:{page.url_name}", kwargs={page.param: world.objects[(label, side)].pk})
    url = reverse(f"admin:{page.url_name}")
    if side == "other":
        # Reach for the other tenant's rows: a changelist filtered to its tenant, an add form preset to it.
        other = world.tenants["other"].pk
        if page.kind == "changelist":
            return f"{url}?tenant__id__exact={other}"
        if page.kind == "add":
            collection = world.objects[("collections_app.Collection", "other")].pk
            return f"{url}?tenant={other}&collection={collection}"
    return url


def _selects(html: str) -> dict[str, list[str]]:
    return {
        name: re.findall(r"<option[^>]*>([^<]*)</option>", body)
        for name, body in re.findall(r'<select[^>]*name="([^"]+)"[^>]*>(.*?)</select>', html, re.S)
    }


ADMIN_CASES = [
    pytest.param(page, role, side, id=f"{page}-{role}-{side}") for page in PAGES for role in ROLES for side in SIDES
]


@pytest.mark.parametrize(("page", "role", "side"), ADMIN_CASES)
def test_admin_page(world: World, client, db, page: Page, role: str, side: str) -> None:
    client.force_login(world.users[role])
    needed = _needed(page)
    allowed = _allowed(role, needed)
    response = client.get(_admin_url(page, world, side))
    body = b"".join(response.streaming_content) if response.streaming else response.content  # a download streams
    status, html = response.status_code, body.decode()

    if side == "other" and page.takes_object and role != "superuser" and needed != SUPERUSER:
        # Another tenant's row does not exist for this person: the admin's "does not exist" answer.
        assert status in (302, 403, 404), status
        if status == 302:
            assert response["Location"] == reverse("admin:index"), response["Location"]
        return
    if page.kind == "changelist" and side == "other" and allowed and status == 302:
        assert "?e=" in response["Location"]  # a lookup this list does not offer: refused, nothing shown
        return
    if role == "superuser" and needed == SUPERUSER:
        assert status in (200, 403), status  # other apps' own rules (django_q adds no task by hand)
        return
    if page.kind == "add" and not allowed and status == 302:
        # Someone who may read the list but not add to it is sent back to the list with a message saying who may
        # add (doors/admin/base.py), not shown a bare 403 page: refused all the same.
        model = apps.get_model(page.label)
        changelist = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        assert response["Location"] == changelist, response["Location"]
        return
    assert status == ((405 if page.url_name in POST_ONLY_PAGES else 200) if allowed else 403), status
    if role == "superuser" or status != 200:
        return

    assert OTHER not in html, f"another tenant's name on {page} for a {role}: " + ", ".join(
        sorted(set(re.findall(rf"[\w.-]*{OTHER}[\w.-]*", html)))
    )
    if page.kind == "add":
        model = apps.get_model(page.label)
        relations = {f.name for f in model._meta.get_fields() if f.is_relation and not f.auto_created}
        for name, options in _selects(html).items():
            if name in relations:
                assert any(OWN in o for o in options), f"{name}: {options}"
    if page.kind == "change" and not _allowed(role, RULES[page.label][1]):
        assert 'name="_save"' not in html  # read-only for a role that may not write here


@pytest.mark.parametrize("role", STAFF_ROLES)
def test_admin_index_lists_no_other_tenant_and_no_superuser_page(world: World, client, db, role: str) -> None:
    client.force_login(world.users[role])
    html = client.get(reverse("admin:index")).content.decode()
    assert OTHER not in html
    for label, rule in RULES.items():
        app, model = label.lower().split(".")
        assert (f"/admin/{app}/{model}/" in html) == (rule != SUPERUSER and _allowed(role, rule[0])), label
    assert client.get(reverse("admin:app_list", args=["auth"])).status_code == 404


# --- API endpoints --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    route: str  # e.g. api/manage/collections/<uuid:collection_id>
    name: str
    method: str
    params: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.method.upper()} {self.name or self.route}"


def _walk(patterns: list[Any], prefix: str = "") -> Iterator[tuple[str, URLPattern]]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _walk(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            yield prefix + str(pattern.pattern), pattern


def api_endpoints() -> list[Endpoint]:
    endpoints = []
    for route, pattern in _walk(get_resolver().url_patterns):
        view = getattr(pattern.callback, "cls", None)
        if not route.startswith("api/") or view is None or not issubclass(view, APIView):
            continue
        if view.__module__.startswith("drf_spectacular"):  # the schema and its docs are public by design
            continue
        params = tuple(pattern.pattern.regex.groupindex)
        for method in ("get", "post", "put", "patch", "delete"):
            if hasattr(view, method):
                endpoints.append(Endpoint(route, pattern.name or "", method, params))
    return endpoints


ENDPOINTS = api_endpoints()
WRITES = {"post", "put", "patch", "delete"}
SAFE_READS = {"search", "citations-verify"}  # POST endpoints that only read: any valid key
# Reading and changing both need an admin key: readers, and the questions nobody could answer (the audit's text).
ADMIN_ONLY = {"reader-list", "reader-detail", "collection-gaps", "collection-gaps-dismiss"}
# Reading needs an editor key too: golden questions, their evaluations and measures are the editors' working
# material, and a version's original is the whole file.
EDITOR_ONLY = {
    "golden-list", "golden-detail", "golden-jsonl", "golden-beir", "evaluation-list", "evaluation-detail",
    "measure-detail", "document-version-original", "paragraph-list", "paragraph-edit-list", "collection-export",
    "trash-list",  # who deleted what: the editors' (issue 41)
}  # fmt: skip


def _api_body(endpoint: Endpoint, side: str) -> tuple[dict[str, Any], str]:
    collection = f"{OTHER if side == 'other' else OWN}-collection"
    bodies: dict[tuple[str, str], dict[str, Any]] = {
        ("collection-list", "post"): {"name": f"new-{uuid.uuid4().hex[:8]}"},
        ("collection-detail", "patch"): {"description": "changed"},
        ("reader-list", "post"): {"name": f"new-{uuid.uuid4().hex[:8]}", "labels": ["x"]},
        ("reader-detail", "patch"): {"labels": ["changed"]},
        ("document-list", "post"): {"file": SimpleUploadedFile("note.txt", b"A short note about lockers.")},
        ("collection-import", "post"): {
            "name": f"new-{uuid.uuid4().hex[:8]}",
            "file": SimpleUploadedFile("c.db", b"x"),
        },
        ("document-ingest-options", "patch"): {"tesseract_langs": ["eng"]},
        ("document-labels", "patch"): {"labels": []},
        ("document-language", "patch"): {"language": "en"},
        ("search", "post"): {"query": "text", "collections": [collection]},
        ("citations-verify", "post"): {"citations": [{"paragraph_id": str(uuid.uuid4()), "quote": "text"}]},
        ("collection-judge", "put"): {"enabled": True, "timeout": 5},
        ("golden-list", "post"): {"question": f"new {uuid.uuid4().hex[:8]}?", "markers": ["text"]},
        ("golden-detail", "patch"): {"note": "changed"},
        ("collection-gaps-dismiss", "post"): {"question": "text?"},
        ("paragraph-detail", "patch"): {"hidden": True},
        ("paragraph-split", "post"): {"at": 2},
        ("paragraph-edit-reapply", "post"): {"paragraph_id": str(uuid.uuid4())},
    }
    body = bodies.get((endpoint.name, endpoint.method), {})
    return body, "multipart" if any(isinstance(v, SimpleUploadedFile) for v in body.values()) else "json"


def _api_url(endpoint: Endpoint, world: World, side: str, missing: bool = False) -> str:
    route = endpoint.route
    for param, label in (
        ("collection_id", "collections_app.Collection"),
        ("document_id", "collections_app.Document"),
        ("reader_id", "accounts.Reader"),
        ("golden_id", "retrieval.GoldenQuestion"),
        ("evaluation_id", "retrieval.Evaluation"),
        ("measure_id", "retrieval.Measure"),
        ("paragraph_id", "collections_app.Chunk"),
        ("edit_id", "collections_app.ParagraphEdit"),
    ):
        value = uuid.uuid4() if missing else world.objects[(label, side)].pk
        route = re.sub(rf"<[^>]*:?{param}>", str(value), route)
    route = re.sub(r"<int:number>", "1", route)  # a document's version (its first)
    assert "<" not in route, f"give {endpoint} a value for its path parameters: {route}"
    return "/" + route


def _call(client: APIClient, endpoint: Endpoint, url: str, side: str):
    body, fmt = _api_body(endpoint, side)
    return getattr(client, endpoint.method)(url, body or None, format=fmt)


API_CASES = [
    pytest.param(endpoint, role, side, id=f"{endpoint}-{role}-{side}")
    for endpoint in ENDPOINTS
    for role in STAFF_ROLES
    for side in SIDES
]


@pytest.mark.parametrize(("endpoint", "role", "side"), API_CASES)
def test_api_endpoint(world: World, db, endpoint: Endpoint, role: str, side: str) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {world.keys[role]}")
    reads_guarded = endpoint.name in ADMIN_ONLY | EDITOR_ONLY
    writes = (endpoint.method in WRITES and endpoint.name not in SAFE_READS) or reads_guarded
    may_write = ROLE_RANK[Role(role)] >= ROLE_RANK[Role.ADMIN if endpoint.name in ADMIN_ONLY else Role.EDITOR]
    response = _call(client, endpoint, _api_url(endpoint, world, side), side)
    status = response.status_code
    assert status < 500, response.content[:500]

    if side == "other" and endpoint.params:
        # Another tenant's id answers exactly as an id that does not exist: 404 (403 first for a
        # viewer's write, whatever the id).
        missing = _call(client, endpoint, _api_url(endpoint, world, side, missing=True), side)
        assert status == missing.status_code == (403 if writes and not may_write else 404), status
        return
    if side == "other":
        # Nothing in the URL to point elsewhere: naming the other tenant's collection in the body answers
        # as a name that does not exist, and no other name of that tenant comes back.
        body = response.content.decode().replace(f"{OTHER}-collection", "<name>")
        assert OTHER not in body, body[:500]
    if writes and not may_write:
        assert status == 403, status
    else:
        assert status not in (401, 403), (status, response.content[:300])
    if side == "own" and endpoint.method == "get" and not (writes and not may_write):
        assert status == 200 and OTHER not in _body(response)


def test_naming_another_tenants_collection_in_a_search_answers_as_an_unknown_name(world: World, db) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {world.keys[Role.ADMIN]}")
    theirs = client.post("/api/search", {"query": "text", "collections": [f"{OTHER}-collection"]}, format="json")
    nowhere = client.post("/api/search", {"query": "text", "collections": ["nowhere-collection"]}, format="json")
    assert theirs.status_code == nowhere.status_code
    assert theirs.content.decode().replace(f"{OTHER}-collection", "X") == nowhere.content.decode().replace(
        "nowhere-collection", "X"
    )


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=str)
def test_an_agent_key_reaches_only_its_agents_collections(world: World, db, endpoint: Endpoint) -> None:
    """The agent-restricted row of the matrix: an editor key whose agent reaches only SCOPED meets the own
    tenant's other collection, at every endpoint, exactly as it meets another tenant's (404 on its id; an
    unknown name in a search; never listed) — the scope search and MCP keep holds at every door."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {world.agent_key}")
    admin_only = endpoint.name in ADMIN_ONLY
    response = _call(client, endpoint, _api_url(endpoint, world, "own"), "own")
    assert response.status_code < 500, response.content[:500]
    if admin_only:
        assert response.status_code == 403
    elif "collection_id" in endpoint.params:
        missing = _call(client, endpoint, _api_url(endpoint, world, "own", missing=True), "own")
        assert response.status_code == missing.status_code == 404, (response.status_code, response.content[:300])
    elif endpoint.name == "collection-list" and endpoint.method == "post":
        assert response.status_code == 403 and "agent" in response.json()["detail"]
    elif endpoint.name == "collection-list":
        names = [c["name"] for c in response.json()]
        assert response.status_code == 200 and names == [SCOPED]
    elif endpoint.name == "search":
        # The name the key sent comes back in the refusal, worded as for a name that exists nowhere.
        assert response.status_code == 400 and "is available to this key" in response.json()["detail"]
        return
    assert f"{OWN}-collection" not in _body(response), _body(response)[:300]


def _body(response) -> str:
    """The answer's text; a download (an original) streams it, an export may be a zip (stored: names still seen)."""
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return content.decode(errors="replace")


# --- reader delegation: a column of the API half --------------------------------------------------------


def _schema_path(route: str) -> str:
    return "/" + re.sub(r"<(?:[^>:]+:)?([^>]+)>", r"{\1}", route)


def reader_endpoints() -> list[Endpoint]:
    """Every endpoint whose request takes a `reader` (a body field or a query parameter), read off the OpenAPI
    schema: an endpoint that starts taking one is in the column without a line here."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema["components"]["schemas"]
    found = []
    for endpoint in ENDPOINTS:
        operation = schema["paths"].get(_schema_path(endpoint.route), {}).get(endpoint.method)
        if operation is None:
            continue
        names = {p["name"] for p in operation.get("parameters", [])}
        for content in operation.get("requestBody", {}).get("content", {}).values():
            ref = content["schema"].get("$ref", "")
            names |= set(components.get(ref.rsplit("/", 1)[-1], {}).get("properties", {}))
        if "reader" in names:
            found.append(endpoint)
    return found


READER_ENDPOINTS = reader_endpoints()
DELEGATIONS = ["none", "some", "any"]
# The reader each case names: the one "some" keys were given, another of the tenant, and another tenant's.
NAMED = {"given": f"{OWN}-reader", "not given": UNDELEGATED_READER, "other tenant's": f"{OTHER}-reader"}
READER_CASES = [
    pytest.param(endpoint, role, delegation, named, id=f"{endpoint}-{role}-{delegation}-{named}")
    for endpoint in READER_ENDPOINTS
    for role in STAFF_ROLES
    for delegation in DELEGATIONS
    for named in NAMED
]


def test_the_reader_column_covers_search_map_citations_evaluate_and_measure() -> None:
    assert {e.name for e in READER_ENDPOINTS} >= {
        "search", "collection-map", "citations-verify", "collection-evaluate", "collection-measure"
    }, sorted(str(e) for e in READER_ENDPOINTS)  # fmt: skip


def _acts_for(delegation: str, named: str) -> bool:
    if named == "other tenant's":
        return False  # not a reader of this tenant: no key acts for it
    return delegation == "any" or (delegation == "some" and named == "given")


@pytest.mark.parametrize(("endpoint", "role", "delegation", "named"), READER_CASES)
def test_a_key_names_only_the_readers_it_was_given(
    world: World, db, endpoint: Endpoint, role: str, delegation: str, named: str
) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {world.delegated_keys[(role, delegation)]}")
    body, fmt = _api_body(endpoint, "own")
    url = _api_url(endpoint, world, "own")
    if endpoint.method == "get":
        response = client.get(url, {"reader": NAMED[named]})
    else:
        response = getattr(client, endpoint.method)(url, {**body, "reader": NAMED[named]}, format=fmt)
    status = response.status_code
    assert status < 500, response.content[:500]

    writes = (endpoint.method in WRITES and endpoint.name not in SAFE_READS) or endpoint.name in EDITOR_ONLY
    needs = Role.ADMIN if endpoint.name in ADMIN_ONLY else Role.EDITOR if writes else Role.VIEWER
    if ROLE_RANK[Role(role)] < ROLE_RANK[needs]:
        assert status == 403, status  # the role refuses first, whatever the reader
        return
    if _acts_for(delegation, named):
        assert status not in (401, 403), (status, response.content[:300])
        return
    assert status == 403, (status, response.content[:300])
    said = response.json()
    message = said.get("detail") or said.get("reader", [""])[0]
    if delegation == "any":  # a key for any reader is told the name is unknown here
        assert "no reader named" in message, message
    else:  # a narrower key is told it may not act for it, whether the reader exists or not
        assert "this key may not act for reader" in message, message
    assert OTHER not in response.content.decode().replace(NAMED["other tenant's"], "<name>")
