"""Folder sources: a collection mirrors a folder on the server, chosen by its tenant's admins.

A folder source belongs to one collection of one tenant, never to a name. The operator sets
KB_FOLDER_SOURCES_ROOT and puts (or mounts) each tenant's folders under `<root>/<tenant name>/`; a
tenant's admin then gives a collection one of them, relative to that folder (`folder_source_set`). A path
that is absolute, climbs out (`..`), leads out through a symbolic link, or lands in another tenant's folder
is refused, when it is set and again at every sync. The API cannot set or see it, and no answer, build
record, warning or log line carries it (ARCHITECTURE.md, "Paths never travel"): files are known by their
path relative to the folder, documents by `folder://<collection name>/<relative path>`.

Legacy: KB_COLLECTION_<NAME>_FOLDER named a folder by the collection's name alone, so a second tenant that
made a collection of that name read the first one's folder. `folder_sources_adopt_legacy` binds each such
variable once to the one collection of that name (saying which tenant), and refuses while two tenants have
one; after that the variable is never read for any other collection.

A sync (`folder_sync`) imports new files, replaces changed ones (same path, new content: the
document's next version, services/documents/_versions.py — the document keeps its id and its
old paragraphs answer until the new ones replace them in one transaction; a version that
cannot be read leaves the last good one in place), removes documents whose file is gone or
now excluded, and records one Build.

Ingestion runs in the sync itself, file after file, rather than through the queue: the
sync's Build can then say exactly how many paragraphs it built and which files could not
be read.
A scheduled sync is one django-q2 task, so it still runs off the web process.

`Collection.folder_source_options` holds the options of the import, as a .zip upload takes them:
`{"keep_navigation_readmes": true}` indexes README.md files that are navigation hubs (mostly links and
headings), which a sync otherwise skips, naming each one and why in its Build (ingestion/navigation_hubs.py).
"""

from __future__ import annotations

from collections_app.services.folder_sources._legacy import (
    folder_env_name,
    folder_source_name,
    folder_sources_adopt_legacy,
)
from collections_app.services.folder_sources._paths import (
    FolderSourceBusy,
    FolderSourceError,
    FolderSourceForbidden,
    FolderSourceNotConfigured,
    FolderSourceRefused,
    folder_source_configured,
    folder_source_options,
    folder_source_options_set,
    folder_source_root,
    folder_source_set,
    tenant_folder,
)
from collections_app.services.folder_sources._schedule import (
    SCHEDULE_PREFIX,
    folder_sync_schedules_update,
)
from collections_app.services.folder_sources._sync import (
    FolderSync,
    Progress,
    folder_sync,
)

__all__ = [
    "SCHEDULE_PREFIX",
    "FolderSourceBusy",
    "FolderSourceError",
    "FolderSourceForbidden",
    "FolderSourceNotConfigured",
    "FolderSourceRefused",
    "FolderSync",
    "Progress",
    "folder_env_name",
    "folder_source_configured",
    "folder_source_name",
    "folder_source_options",
    "folder_source_options_set",
    "folder_source_root",
    "folder_source_set",
    "folder_sources_adopt_legacy",
    "folder_sync",
    "folder_sync_schedules_update",
    "tenant_folder",
]
