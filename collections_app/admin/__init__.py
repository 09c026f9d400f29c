"""The editors' admin, one module per concern; importing the package registers every page.

- base.py, roles.py: the tenant-scoped base classes and who may do what (membership roles)
- access.py: tenants, memberships, API keys, agents, reader labels
- collections.py, documents.py: what editors manage
- ocr.py, column_roles.py, sources.py: a document's tool pages and where documents come from
- audit.py: paragraphs and builds (search events: retrieval/admin.py)
- collection_files.py: exports and imports of collection files, and the import page
"""

from collections_app.admin import access, audit, collection_files, collections, documents  # noqa: F401  (registers)
from collections_app.admin.access import MembershipForm

__all__ = ["MembershipForm"]
