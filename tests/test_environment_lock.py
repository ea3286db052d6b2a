"""The lock file pins an environment the package accepts, and it is the environment tested.

``requirements.lock`` holds the exact versions ``make setup`` installs (as pip constraints):
every dependency pyproject.toml declares must be pinned there at a version its specifier
allows, and the libraries whose versions change the numbers (torch, numpy, pandas) must be
installed at the locked versions, or the pinned results were made elsewhere.
"""
import importlib.metadata
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def _locked() -> dict[str, str]:
    """Canonical package name -> locked version, from ``name==version`` lines."""
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep and version, f"requirements.lock: {line!r} is not an exact pin name==version"
            pins[canonicalize_name(name)] = version
    return pins


def _declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["dev"]]


def test_every_declared_dependency_is_locked_at_a_version_pyproject_allows():
    pins = _locked()
    missing = [str(r) for r in _declared() if canonicalize_name(r.name) not in pins]
    outside = [f"{r} (locked {pins[canonicalize_name(r.name)]})" for r in _declared()
               if canonicalize_name(r.name) in pins
               and not r.specifier.contains(pins[canonicalize_name(r.name)], prereleases=True)]
    assert not missing, f"not in requirements.lock: {missing}; regenerate it (its first lines say how)"
    assert not outside, f"requirements.lock pins versions pyproject.toml excludes: {outside}"


def test_the_lock_does_not_pin_the_package_itself():
    assert canonicalize_name("dpdl-core") not in _locked()


@pytest.mark.parametrize("package", ["torch", "numpy", "pandas"])
def test_the_installed_version_is_the_locked_one(package):
    assert importlib.metadata.version(package) == _locked()[package], (
        f"{package} {importlib.metadata.version(package)} is installed but requirements.lock pins "
        f"{_locked()[package]}: run `make setup`, or regenerate the lock after an intended upgrade")
