"""Plumbing shared by both apps' doors (the management and search APIs, MCP, the admin).

- api/: API-key authentication, role permissions, the one error handler, the bounded JSON parser,
  per-key throttles and OpenAPI helpers (named in settings.REST_FRAMEWORK)
- admin/: the tenant-scoped admin base classes, membership roles and display helpers

Doors import from here; nothing here imports a door (make lint's import contracts keep it so).
"""
