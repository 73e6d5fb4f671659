"""The public API is `hloscope.__all__`: every name there exists, the API module's public
functions are all re-exported, the target travels as one value (no slice or topology keywords
beside it), and the sweep request is keyword-only."""
from __future__ import annotations

import dataclasses
import inspect

import hloscope
import hloscope.api


def test_every_public_name_exists_and_none_is_private() -> None:
    assert len(hloscope.__all__) == len(set(hloscope.__all__))
    for name in hloscope.__all__:
        assert hasattr(hloscope, name), name
        assert not name.startswith("_") or name == "__version__", name


def test_the_api_modules_public_functions_are_reexported() -> None:
    assert set(hloscope.api.__all__) <= set(hloscope.__all__)
    for name in hloscope.api.__all__:
        assert getattr(hloscope, name) is getattr(hloscope.api, name)


def test_no_function_takes_the_target_as_three_arguments() -> None:
    for name in hloscope.api.__all__:
        parameters = inspect.signature(getattr(hloscope.api, name)).parameters
        assert not {"num_slices", "allow_any_topology"} & set(parameters), name


def test_the_sweep_request_is_keyword_only() -> None:
    kinds = {p.kind for p in inspect.signature(hloscope.sweep_request).parameters.values()}
    assert kinds == {inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD}
    assert all(field.kw_only for field in dataclasses.fields(hloscope.SweepRequest))
