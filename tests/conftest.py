"""Shared test setup: a private kernel cache per run, and the --update-golden switch."""

from __future__ import annotations

import os

import pytest


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite golden files from the current output (review the diff!)")


@pytest.fixture(scope="session", autouse=True)
def private_cache_dir(tmp_path_factory):
    """Generated modules go to a fresh folder, so runs never see each other's kernels."""
    folder = tmp_path_factory.mktemp("symgraph-cache")
    old = os.environ.get("SYMGRAPH_CACHE_DIR")
    os.environ["SYMGRAPH_CACHE_DIR"] = str(folder)
    yield folder
    if old is None:
        os.environ.pop("SYMGRAPH_CACHE_DIR", None)
    else:
        os.environ["SYMGRAPH_CACHE_DIR"] = old


@pytest.fixture
def update_golden(request) -> bool:
    return request.config.getoption("--update-golden")
