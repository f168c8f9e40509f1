"""hookd-client is versioned with hookd."""

from __future__ import annotations

import tomllib
from pathlib import Path

import hookd_client

ROOT = Path(__file__).resolve().parents[3]


def test_version_is_hookds() -> None:
    workspace = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]["version"]
    project = tomllib.loads((ROOT / "clients/python/pyproject.toml").read_text())["project"]["version"]
    assert project == workspace, f"clients/python/pyproject.toml has {project}, hookd is {workspace}"
    assert hookd_client.__version__ == workspace, "the installed hookd-client is not this version"
