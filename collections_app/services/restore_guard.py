"""A backup's dump is code as much as data: what keeps it from running as the database's superuser.

A dump is a list of SQL statements. A checksum in the manifest proves the dump is the one the archive names, not
that `manage.py backup` wrote it: a forged dump can hold a function that runs `COPY ... TO PROGRAM` (a shell
command as the server's user) inside a CHECK constraint, a default or a trigger, which runs as soon as its table
is loaded, or later, whenever the platform writes that table. Two guards:

1. **The dump is loaded, and the loaded database read, by a role that is no superuser** (`kbsite_restore`, made
   for the load with a password of the moment and no rights beyond owning the new database). Connecting *as* it
   matters: a `SET ROLE` could be undone by the dump itself (`RESET ROLE`). Such a role may not run programs, read
   or write server files or make event triggers, so nothing in the dump can while it loads. Where the configured
   user is itself no superuser (a managed server), it is the loader, unless it holds `pg_execute_server_program`
   or the file roles, which would let a dump run a program: then the restore refuses.
2. **The loaded database may hold no code the installation's own database does not**: every function, trigger,
   rule, view, policy, check constraint and column default of the loaded database must be, by name and definition,
   one the installation's database has. The platform's migrations make the same ones in both; anything else was
   put there by someone, and would run later as the platform's user (on the embedded server, a superuser). A
   restore into a database that holds no installation yet (empty) has nothing to compare with: it is said in the
   command's output, and such a restore trusts its archive.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql

from collections_app.services.backup import BackupFailed, database_connect

LOADER_ROLE = "kbsite_restore"
# What a dump needs that only a superuser may create: made in the new database before the dump is loaded.
EXTENSIONS = ("vector",)
# Roles whose holder can reach the server's programs or files from SQL (COPY TO PROGRAM, pg_read_file, ...).
DANGEROUS_ROLES = ("pg_execute_server_program", "pg_read_server_files", "pg_write_server_files")

# The code a database holds, one line per object: its kind, name and definition (system schemas and extensions'
# own objects left out). Two databases made by the same migrations give the same lines.
CODE = """
SELECT 'function ' || p.oid::regprocedure::text || ': ' || pg_get_functiondef(p.oid)
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%%'
   AND p.prokind IN ('f', 'p', 'w')
   AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                   AND d.deptype = 'e')
UNION ALL
SELECT 'trigger ' || t.tgrelid::regclass::text || '.' || t.tgname || ': ' || pg_get_triggerdef(t.oid)
  FROM pg_trigger t WHERE NOT t.tgisinternal
UNION ALL
SELECT 'rule ' || r.ev_class::regclass::text || '.' || r.rulename || ': ' || pg_get_ruledef(r.oid)
  FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND r.rulename <> '_RETURN'
UNION ALL
SELECT 'view ' || c.oid::regclass::text || ': ' || pg_get_viewdef(c.oid)
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind IN ('v', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
UNION ALL
SELECT 'policy ' || pol.polrelid::regclass::text || '.' || pol.polname FROM pg_policy pol
UNION ALL
SELECT 'constraint ' || con.conrelid::regclass::text || '.' || con.conname || ': ' || pg_get_constraintdef(con.oid)
  FROM pg_constraint con JOIN pg_namespace n ON n.oid = con.connamespace
 WHERE con.contype = 'c' AND n.nspname NOT IN ('pg_catalog', 'information_schema')
UNION ALL
SELECT 'default ' || d.adrelid::regclass::text || '.' || a.attname || ': ' || pg_get_expr(d.adbin, d.adrelid)
  FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
  JOIN pg_class c ON c.oid = d.adrelid JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
"""


@contextmanager
def unprivileged_loader(server: psycopg.Connection, database: dict[str, Any], loading: str) -> Iterator[dict[str, Any]]:
    """The settings to load and read `loading` with: a role that is no superuser (guard 1). On leaving, what it
    made is handed to the configured user and the role can no longer log in."""
    superuser, dangerous = server.execute(
        "SELECT r.rolsuper, coalesce(bool_or(pg_has_role(current_user, d.rolname, 'USAGE')), false)"
        " FROM pg_roles r LEFT JOIN pg_roles d ON d.rolname = ANY(%s) WHERE r.rolname = current_user"
        " GROUP BY r.rolsuper",
        [list(DANGEROUS_ROLES)],
    ).fetchone() or (False, False)
    if not superuser:
        if dangerous:
            raise BackupFailed(
                "the database user may run programs or read server files (pg_execute_server_program or a file "
                "role): a backup's dump could use that. Nothing was changed; restore as a user without those roles"
            )
        yield database
        return
    secret = secrets.token_urlsafe(24)
    exists = server.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [LOADER_ROLE]).fetchone()
    verb = sql.SQL("ALTER ROLE" if exists else "CREATE ROLE")
    server.execute(
        sql.SQL("{} {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD {}").format(
            verb, sql.Identifier(LOADER_ROLE), sql.Literal(secret)
        )
    )
    with database_connect(database, dbname=loading) as new:
        for extension in EXTENSIONS:
            new.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(sql.Identifier(extension)))
    server.execute(
        sql.SQL("ALTER DATABASE {} OWNER TO {}").format(sql.Identifier(loading), sql.Identifier(LOADER_ROLE))
    )
    try:
        yield {**database, "USER": LOADER_ROLE, "PASSWORD": secret}
        with database_connect(database, dbname=loading) as new:
            new.execute(sql.SQL("REASSIGN OWNED BY {} TO CURRENT_USER").format(sql.Identifier(LOADER_ROLE)))
    finally:
        server.execute(sql.SQL("ALTER ROLE {} NOLOGIN PASSWORD NULL").format(sql.Identifier(LOADER_ROLE)))


def code_of(connection: psycopg.Connection) -> set[str]:
    return {str(row[0]) for row in connection.execute(CODE).fetchall()}


def foreign_code_refuse(loaded: set[str], installation: set[str] | None) -> None:
    """Guard 2: refuse a loaded database holding code the installation's database does not."""
    if installation is None:
        return
    foreign = sorted(loaded - installation)
    if foreign:
        what = foreign[0].split(":", 1)[0][:120]
        raise BackupFailed(
            f"the backup's database holds {len(foreign)} piece(s) of code this installation's does not (first: "
            f"{what}): it was altered, or made by another kbsite version. Nothing was changed; restore a backup "
            "made by this version"
        )
