"""Who reads what is the tenant admins' decision: changes that widen it need the admin role, at every door.

Widening means some reader reads a paragraph it could not read before:
- switching a collection's `per_reader` off (every reader then reads every paragraph) — and, since the
  switch is one decision either way, switching it on too;
- giving a document a label it did not carry (holders of that label gain it), or clearing its labels
  (an unlabelled paragraph is readable by every reader).
Narrowing — dropping some of a document's labels while keeping at least one — stays an editor's change.

`role` None is the server itself (a management command, a benchmark), never a request: every API view and
admin page passes the role of the key or the person.
"""

from __future__ import annotations

from collections.abc import Sequence

from accounts.models import Role, role_at_least
from infra.errors import Forbidden


class ReaderAccessNeedsAdmin(Forbidden):
    pass


def labels_widen(old: Sequence[str], new: Sequence[str]) -> bool:
    """Would relabelling a document from `old` to `new` let some reader read what it could not?"""
    if not old:
        return False  # unlabelled already: every reader reads it, nothing can widen
    return not new or bool(set(new) - set(old))


def reader_access_check(*, role: Role | None, per_reader_changed: bool = False, labels_widened: bool = False) -> None:
    if role is None or role_at_least(role, Role.ADMIN):
        return
    if per_reader_changed:
        raise ReaderAccessNeedsAdmin(
            "who reads what is the tenant admins' decision: changing per_reader needs an admin key or admin role"
        )
    if labels_widened:
        raise ReaderAccessNeedsAdmin(
            "who reads what is the tenant admins' decision: adding a reader label to a document, or clearing its "
            "labels, lets more readers read it and needs an admin key or admin role (an editor may only drop some "
            "of its labels)"
        )
