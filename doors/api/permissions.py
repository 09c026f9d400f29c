from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework import permissions
from rest_framework.request import Request

from accounts.models import Role, role_at_least
from doors.api.authentication import request_key

if TYPE_CHECKING:  # rest_framework.views reads the permission and throttle settings: a runtime import circles
    from rest_framework.views import APIView


class HasApiKey(permissions.BasePermission):
    """Deny by default: any valid key may read."""

    message = "An API key is required: 'Authorization: Bearer <key>'."

    def has_permission(self, request: Request, view: APIView) -> bool:
        return request.auth is not None


class EditorWrites(HasApiKey):
    """Reading needs any valid key; creating or changing needs editor or admin."""

    message = "This key may only read: creating or changing needs an editor or admin key."

    def has_permission(self, request: Request, view: APIView) -> bool:
        if not super().has_permission(request, view):
            return False
        if request.method in permissions.SAFE_METHODS:
            return True
        return role_at_least(request_key(request).role, Role.EDITOR)


class EditorOnly(HasApiKey):
    """Reading and changing both need an editor or admin key: a document's stored originals are whole files,
    which reader labels do not cut, and golden questions with what their evaluations found are the editors' own
    working material. A view names what it guards in `editors_material` for the refusal's message."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        if not super().has_permission(request, view):
            return False
        self.message = f"{getattr(view, 'editors_material', 'These')} need an editor or admin key."
        return role_at_least(request_key(request).role, Role.EDITOR)


class AdminOnly(HasApiKey):
    """Reading and changing both need an admin key: what readers may read is the tenant admins' call."""

    message = "Only an admin key may read or change readers."

    def has_permission(self, request: Request, view: APIView) -> bool:
        return super().has_permission(request, view) and role_at_least(request_key(request).role, Role.ADMIN)


class EditorWritesNoAgent(EditorWrites):
    """EditorWrites, and an agent's key may not create: it reaches only its agent's collections, and which
    collections an agent reaches is the tenant admins' call (its Agent row), not something a key widens."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        if not super().has_permission(request, view):
            return False
        if request.method in permissions.SAFE_METHODS or request_key(request).agent_id is None:
            return True
        self.message = (
            "This key belongs to an agent and reaches only its agent's collections: create collections with a "
            "key of no agent."
        )
        return False
