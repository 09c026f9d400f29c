"""Collection files: a collection exported as one SQLite file in the collection format, and imported from one.

    collection_export(collection=..., path=...)            # write the file (a request streams it afterwards)
    collection_export_start(collection=...)                # the same in the background, with progress
    record = collection_import(tenant=..., name=..., path=...)   # check the file, create the collection, queue
    collection_import_run(collection_file_id=...)          # the task: vectors as they are, or embedded again

- _schema.py: the tables, and the checks an untrusted file must pass (BadCollectionFile names the problem);
- _export.py: the live paragraphs, their build record and the ranking settings, in a deterministic order;
- _import.py: one transaction writes documents, paragraphs, keyword index and build: searchable when complete.
"""

from collections_app.services.collection_file._export import (
    RANKING_SETTINGS,
    collection_export,
    collection_export_run,
    collection_export_start,
    collection_file_remove,
)
from collections_app.services.collection_file._import import (
    FileSummary,
    collection_file_check,
    collection_import,
    collection_import_run,
    served_alias_for,
)
from collections_app.services.collection_file._jobs import (
    ExportExpired,
    collection_file_open,
    collection_files_stored,
    collection_files_sweep,
)
from collections_app.services.collection_file._schema import SCHEMA_VERSION, BadCollectionFile

__all__ = [
    "RANKING_SETTINGS",
    "SCHEMA_VERSION",
    "BadCollectionFile",
    "ExportExpired",
    "FileSummary",
    "collection_export",
    "collection_export_run",
    "collection_export_start",
    "collection_file_check",
    "collection_file_open",
    "collection_file_remove",
    "collection_files_stored",
    "collection_files_sweep",
    "collection_import",
    "collection_import_run",
    "served_alias_for",
]
