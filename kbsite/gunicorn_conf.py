"""gunicorn settings for `make run` (Procfile `web`): loopback by default, sized for a small machine.

gunicorn's arbiter loads this before Django (importing kbsite.settings here would start the embedded
PostgreSQL in the arbiter), so its variables are read with kbsite/env.py's readers, as settings.py reads its own.
"""

from kbsite.env import env_int, env_str, port, var_dir

bind = f"{env_str('KB_BIND', '127.0.0.1')}:{port()}"
# Threads, so that many searchers waiting on PostgreSQL do not need a process each; two processes,
# so that one busy embedding a query does not stop the other answering.
worker_class = "gthread"
workers = env_int("KB_WEB_WORKERS", 2)
threads = env_int("KB_WEB_THREADS", 4)
# A 100 MB upload over a slow link takes a while; a stuck request is still cut off.
timeout = env_int("KB_WEB_TIMEOUT", 120)
graceful_timeout = 10
accesslog = env_str("KB_ACCESS_LOG", "-") or None
errorlog = "-"
# Requests never carry a server path back: gunicorn's own error pages stay terse.
proc_name = "kbsite-web"
# gunicorn's control socket under this checkout's var/run, not $XDG_RUNTIME_DIR: two checkouts run by one user
# (or a test's platform beside `make run`) never share it.
(var_dir() / "run").mkdir(parents=True, exist_ok=True, mode=0o700)
control_socket = str(var_dir() / "run" / "gunicorn.ctl")


def post_worker_init(worker: object) -> None:
    """Each worker, once Django is set up and before it takes a request, loads what its first search needs
    (kbsite/warmup.py; KB_WARM_EMBEDDING=0 turns it off)."""
    from kbsite.warmup import web_worker_warm_up

    web_worker_warm_up()
