"""Shared fixtures for the system tests: where the built binaries and the shared data live."""

import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def bin_dir() -> pathlib.Path:
    d = pathlib.Path(os.environ.get("PEARL_BIN_DIR", ROOT / "target" / "release"))
    if not (d / "pearl-bench").exists():
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "pearl-bench"], cwd=ROOT, check=True)
    return d


@pytest.fixture(scope="session")
def bgp_table() -> pathlib.Path:
    path = pathlib.Path(
        os.environ.get("PEARL_BGP_TABLE", ROOT.parent / "shared" / "data" / "bgp-full-table-2025.txt.gz")
    )
    assert path.exists(), f"{path} is missing (set PEARL_BGP_TABLE)"
    return path


def run_json(cmd: list) -> list:
    """Runs a command that prints one JSON object per line; returns them."""
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{cmd} failed ({done.returncode}): {done.stderr}"
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
