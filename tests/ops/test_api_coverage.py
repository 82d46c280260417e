"""The coverage gate of the public API: every public callable of tensorgrad (``tg.<name>``,
``Tensor`` methods and their in-place forms, ``tg.nn.functional.<name>``) has an entry in
``tests/ops/registry/api.py``, which the differential fuzz against PyTorch draws, or a reason
there for having none. A new public name with neither fails here, by name.
"""

from __future__ import annotations

import tensorgrad as tg
from tests.ops.registry import api


def test_every_public_name_has_an_entry_or_a_reason():
    missing = api.uncovered(api.public_names())
    assert not missing, (
        f"public names with neither an entry nor a reason: {missing}; add each to a table "
        "of tests/ops/registry/api.py (how the fuzz calls it) or to EXEMPT (why not)"
    )


def test_no_entry_or_reason_names_what_is_gone():
    """A renamed or removed name takes its entry with it (the list stays the API's)."""
    stale = sorted(api.covered() - api.public_names())
    assert not stale, f"entries or reasons for names that are no longer public: {stale}"


def test_the_gate_names_a_new_public_function(monkeypatch):
    """A function added to tg, a method added to Tensor: both are reported (it can fail)."""
    monkeypatch.setattr(tg, "brand_new_function", lambda x: x, raising=False)
    monkeypatch.setattr(tg.Tensor, "brand_new_method_", lambda self: self, raising=False)
    missing = api.uncovered(api.public_names())
    assert missing == ["Tensor.brand_new_method_", "tg.brand_new_function"]


def test_every_reason_says_where_the_name_is_tested_or_why_not():
    short = {name: why for name, why in api.EXEMPT.items() if len(why) < 40}
    assert not short, f"reasons too short to say anything: {short}"


def test_every_entry_calls_a_public_name_with_its_arity():
    for name, info in api.API.items():
        assert info.arity >= 1 and callable(info.call), name
        assert name.split("#")[0] in api.public_names() or name in api.EXEMPT, name
