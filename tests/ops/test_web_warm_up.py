"""A web worker loads what its first search needs before it takes a request (gunicorn's post_worker_init)."""

from __future__ import annotations

import logging
from unittest import mock

from embedding import _registry
from kbsite import gunicorn_conf
from kbsite.warmup import web_worker_warm_up


def _loaded() -> set[str]:
    return {model.alias for model, _ in _registry._embedders}


def test_gunicorns_worker_hook_loads_the_model_and_says_so_without_a_path(settings, caplog) -> None:
    settings.KB_WARM_EMBEDDING = True
    # As in a fresh worker: no model loaded yet (the test process's own ones come back afterwards).
    with mock.patch.dict(_registry._embedders, clear=True), caplog.at_level(logging.INFO, logger="kbsite.web"):
        gunicorn_conf.post_worker_init(mock.Mock())
        loaded = _loaded()

    assert settings.KB_DEFAULT_EMBEDDING in loaded
    [line] = [r.getMessage() for r in caplog.records if r.name == "kbsite.web"]
    assert line.startswith("web worker ready") and settings.KB_DEFAULT_EMBEDDING in line
    assert "/" not in line and str(settings.BASE_DIR) not in line  # names and times, never a path


def test_with_the_warm_up_off_a_worker_loads_nothing_at_start(settings) -> None:
    settings.KB_WARM_EMBEDDING = False
    with mock.patch.dict(_registry._embedders, clear=True):
        assert web_worker_warm_up() is False
        assert _loaded() == set()


def test_a_model_that_cannot_be_loaded_leaves_the_worker_serving(settings, caplog) -> None:
    settings.KB_WARM_EMBEDDING = True
    settings.KB_DEFAULT_EMBEDDING = "no-such-model"

    with caplog.at_level(logging.WARNING, logger="kbsite.web"):
        assert web_worker_warm_up() is False

    assert "no-such-model could not be loaded" in caplog.text
