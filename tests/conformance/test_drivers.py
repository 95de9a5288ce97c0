"""How the suite finds drivers: from providers/known.py by convention, loudly when one is missing."""

from __future__ import annotations

import sys
import types

import pytest

from compat.conformance import Driver, conformance_ids, load_driver
from providers.known import KNOWN_PROVIDERS, package


def test_every_registered_provider_has_its_driver():
    for provider_id in KNOWN_PROVIDERS:
        driver = load_driver(provider_id)
        assert issubclass(driver, Driver) and driver.provider_id == provider_id
        assert driver.__module__ == f"compat.{package(provider_id)}.driver"
    assert set(KNOWN_PROVIDERS) <= set(conformance_ids())


def test_a_registered_provider_without_a_driver_fails_loudly():
    known = {"nosuch": "providers.nosuch.NoSuchProvider"}
    with pytest.raises(pytest.fail.Exception, match=r"compat\.nosuch\.driver has no conformance driver"):
        load_driver("nosuch", known)


def test_a_driver_module_must_export_its_driver(monkeypatch):
    known = {"nosuch": "providers.nosuch.NoSuchProvider"}
    monkeypatch.setitem(sys.modules, "compat.nosuch", types.ModuleType("compat.nosuch"))
    monkeypatch.setitem(sys.modules, "compat.nosuch.driver", types.ModuleType("compat.nosuch.driver"))
    with pytest.raises(pytest.fail.Exception, match="export DRIVER"):
        load_driver("nosuch", known)


def test_a_registry_line_names_a_class_in_a_provider_package():
    assert package("claude-code") == "claude_code"
    with pytest.raises(ValueError, match=r"providers\.<package>\.<Class>"):
        package("odd", {"odd": "elsewhere.Odd"})
