"""The registry of workflow types."""

from __future__ import annotations

import pytest

from claims.runtime import (
    DuplicateWorkflowTypeError,
    UnknownWorkflowTypeError,
    is_type_registered,
    load_workflow_modules,
    registered_types,
    workflow,
    workflow_function,
)
from claims.runtime.demo_workflows import order


def test_importing_the_demo_module_registers_the_demo_types():
    assert {"order", "invoice", "ledger"} <= set(load_workflow_modules())
    assert all(is_type_registered(name) for name in ("order", "invoice", "ledger"))
    assert workflow_function("order") is order


def test_unknown_type_is_not_registered_and_has_no_function():
    assert not is_type_registered("no-such-type")
    with pytest.raises(UnknownWorkflowTypeError, match="'no-such-type'"):
        workflow_function("no-such-type")


def test_another_function_under_a_taken_name_is_refused():
    def impostor(ctx):
        return None

    with pytest.raises(DuplicateWorkflowTypeError, match=r"'order' is already registered"):
        workflow("order")(impostor)
    assert workflow_function("order") is order


def test_registering_the_same_function_again_is_harmless():
    assert workflow("order")(order) is order
    assert registered_types().count("order") == 1


@pytest.mark.parametrize("name", ["", "x" * 101, None])
def test_type_name_must_be_a_short_non_empty_string(name):
    with pytest.raises(ValueError, match="workflow type name"):
        workflow(name)
