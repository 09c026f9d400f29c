"""Bearer API keys. The tenant comes from the key, never from a parameter."""

from __future__ import annotations

from dataclasses import dataclass

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from accounts.keys import api_key_resolve
from accounts.models import ApiKey, Role, Tenant


@dataclass(frozen=True)
class KeyPrincipal:
    """What `request.user` is for an API call: the key's tenant, role and agent."""

    key: ApiKey

    is_authenticated = True
    is_anonymous = False

    @property
    def tenant(self) -> Tenant:
        return self.key.tenant

    @property
    def role(self) -> str:
        return self.key.role

    def __str__(self) -> str:
        return f"API key {self.key.prefix}…"


def request_key(request: Request) -> ApiKey:
    """The API key of an authenticated request (views behind HasApiKey only)."""
    key = request.auth
    assert isinstance(key, ApiKey), "request_key() is for views that require an API key"
    return key


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[KeyPrincipal, ApiKey] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            raise exceptions.AuthenticationFailed("Send the API key as 'Authorization: Bearer <key>'.")
        key = api_key_resolve(secret=secret.strip())
        if key is None:
            raise exceptions.AuthenticationFailed("This API key is not valid (unknown or revoked).")
        return KeyPrincipal(key), key

    def authenticate_header(self, request: Request) -> str:
        # Makes DRF answer 401 (not 403) when the key is missing or wrong.
        return 'Bearer realm="kbsite"'


def request_role(request: Request) -> Role:
    """The role of the request's API key."""
    return Role(request_key(request).role)
