"""Admin plumbing both apps share: tenant-scoped base classes, membership roles, display helpers."""
