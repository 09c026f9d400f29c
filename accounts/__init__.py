"""Who is asking: tenants, memberships and roles, agents and their API keys, and how a presented key is resolved.

The content apps (collections_app, retrieval) build on it; it imports none of them (lint-imports holds it).
"""
