"""labkit.config: what labkit ships is read from the clone or the package, results go elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit import config
from labkit.measure import ledgers, results

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_env(monkeypatch):
    monkeypatch.delenv("LABKIT_DATA", raising=False)


def test_in_the_clone_resources_are_its_folders(no_env):
    assert config.checkout() == ROOT
    assert config.resource("notebooks") == ROOT / "notebooks"
    assert config.resource("seeds") == ROOT / "data" / "seeds"
    assert config.reference_data_dir() == ROOT / "data"
    # each result's ledgers are package data, in its folder of the package
    assert config.results_dir() == ROOT / "labkit" / "results"
    r1 = ROOT / "labkit" / "results" / "r1"
    assert ledgers.path("R1", "published.csv") == r1 / "published.csv"
    # what a user measures never goes into the clone's data/ (git ignores labkit-results/)
    assert config.data_dir() == ROOT / "labkit-results"
    assert "/labkit-results/" in (ROOT / ".gitignore").read_text().split()
    with pytest.raises(KeyError):
        config.resource("nothing")


def test_installed_resources_are_in_the_package(no_env, monkeypatch, tmp_path):
    monkeypatch.setattr(config, "checkout", lambda: None)
    monkeypatch.chdir(tmp_path)
    res = config.PACKAGE_DIR / "_resources"
    assert config.resource("notebooks") == res / "notebooks"
    assert config.resource("seeds") == res / "data" / "seeds"
    assert config.reference_data_dir() == res / "data"
    assert config.results_dir() == config.PACKAGE_DIR / "results"  # package data either way
    assert config.data_dir() == tmp_path / "labkit-results"  # the current directory's


def test_labkit_data_chooses_the_results_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("LABKIT_DATA", str(tmp_path))
    assert config.data_dir() == tmp_path
    assert results.results_dir("x") == tmp_path / "results" / "x"
    assert results.default_data_dirs() == [tmp_path, ROOT / "data"]


def test_runs_read_the_users_and_the_reference_results(monkeypatch, tmp_path):
    monkeypatch.setenv("LABKIT_DATA", str(tmp_path))
    reference = results.runs("ubuf-callgrind")
    assert reference and all(p.is_relative_to(ROOT / "data" / "results") for p in reference)
    import pandas as pd

    mine = results.save("ubuf-callgrind", pd.DataFrame({"a": [1]}), env={"hostname": "me"})
    assert mine.is_relative_to(tmp_path)
    assert results.runs("ubuf-callgrind") == sorted(
        [*reference, mine], key=lambda p: (p.name, str(p))
    )


def test_a_built_package_is_known_by_its_shipped_folder(monkeypatch, tmp_path):
    """Only a build creates labkit/_resources/: with it, labkit is installed, not a clone."""
    pkg = tmp_path / "site-packages" / "labkit"
    pkg.mkdir(parents=True)
    monkeypatch.setattr(config, "PACKAGE_DIR", pkg)
    assert config.checkout() == pkg.parent
    (pkg / config.SHIPPED).mkdir()
    assert config.checkout() is None
