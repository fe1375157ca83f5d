"""detect-secrets' plugins load per module, only for text they could match: nothing is missed."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workflows.secret_plugins import (
    NEEDS,
    NEEDS_ANY_CASE,
    SKIPPED_MODULES,
    may_match,
    plugin_modules,
    regex_plugins,
)
from workflows.secrets import scan_text


def denylists() -> list[tuple[str, re.Pattern[str]]]:
    """Every regex of every plugin module scanned with, as (module, regex)."""
    return [
        (module, regex)
        for module in plugin_modules()
        for _, plugin in regex_plugins(module)
        for regex in plugin.denylist
    ]


DENYLISTS = denylists()


# 25 texts per regex, 49 regexes: a pre-filter that misses a regex's literal misses it in
# most texts that regex matches (60 a regex cost the suite 10 s more of CPU).
@pytest.mark.parametrize(("module", "regex"), DENYLISTS, ids=[m for m, _ in DENYLISTS])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_given_text_a_plugin_regex_matches_then_its_module_is_loaded_for_it(
    module: str, regex: re.Pattern[str], data: st.DataObject
) -> None:
    # Given: any text the plugin's own regex finds something in (prose around it included)
    text = data.draw(st.from_regex(regex))
    assert regex.search(text)
    # When / Then: the pre-filter lets the module run on it
    assert may_match(module, text)


def test_every_plugin_module_is_judged_and_the_skipped_ones_hold_no_plugin_we_use() -> None:
    # Given: detect-secrets' plugin modules, as its package lists them
    package = importlib.import_module("detect_secrets.plugins")
    names = {found.name for found in pkgutil.iter_modules(package.__path__)}
    # Then: each module scanned with has its needs written down (a new one is not guessed at),
    assert set(plugin_modules()) == set(NEEDS) == names - SKIPPED_MODULES
    assert set(NEEDS) >= NEEDS_ANY_CASE
    # the modules given re.IGNORECASE needs are exactly those holding such a regex,
    assert {m for m, regex in DENYLISTS if regex.flags & re.IGNORECASE} == NEEDS_ANY_CASE
    # and the skipped ones we load hold no regex plugin we would scan with
    assert all(regex_plugins(m) == () for m in SKIPPED_MODULES - {"ip_public", "keyword"})


def test_given_clean_prose_then_no_plugin_module_but_discords_is_needed() -> None:
    # Given: a packet's ordinary sentence / Then: only the "." of Discord's regex is in it
    needed = [m for m in plugin_modules() if may_match(m, "Migration 0042 stalled at row 8842.")]
    assert needed == ["discord"]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        # A letter re.IGNORECASE matches but str.lower() would not fold: long s for s, Kelvin
        # sign for k. The plugins' own regexes find these, so must the pre-filter.
        ("ſoftlayer_api_key = '" + "a1" * 32 + "'", "SoftLayer Credentials"),
        ("ibm_cloud_iam_\u212aey = '" + "aB3_" * 11 + "'", "IBM Cloud IAM Key"),
        ("cloudant_pa\u017f\u017f = '" + "0f" * 32 + "'", "Cloudant Credentials"),
    ],
)
def test_given_a_case_variant_only_re_matches_then_it_is_still_found(text: str, kind: str) -> None:
    # When scanned / Then found, as before the pre-filter
    assert kind in scan_text(text)
