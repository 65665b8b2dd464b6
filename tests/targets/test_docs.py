"""The package docstring's example runs, and the README's claims about files hold."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import ktir.targets

README = Path(ktir.targets.__file__).parents[2] / "docs" / "guides" / "hardware-model.md"


def test_package_doctest():
    failures, tried = doctest.testmod(ktir.targets, verbose=False)
    assert tried > 0 and failures == 0


def test_readme_links_point_to_files():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#:]+)\)", text)
    assert links
    for link in links:
        assert (README.parent / link).exists(), link


def test_readme_lists_every_spyre_assumption():
    text = README.read_text(encoding="utf-8")
    for key in ktir.targets.load_target("spyre").assumptions:
        assert f"`{key}`" in text, key
