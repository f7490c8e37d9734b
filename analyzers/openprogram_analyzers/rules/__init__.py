"""Every rule, one per module; ``RULES`` maps code -> rule class."""

from __future__ import annotations

from openprogram_analyzers.rule import Rule
from openprogram_analyzers.rules import (
    op001_parse_error,
    op101_unknown_method,
    op102_unknown_option,
    op103_wrong_type,
    op104_bad_expose,
    op105_bad_render_range,
    op106_tool_only,
    op107_input_metadata,
    op108_options_not_literal,
    op201_dynamic_code,
    op202_nested_import,
    op203_mutable_global,
    op204_mutable_default,
    op205_nondeterministic_call,
    op206_side_effect,
    op207_dynamic_step_name,
    op208_unrestorable_object,
    op209_breaks_recorded_runs,
    op210_planner_code,
    op211_planner_dunder,
    op301_list_schema_arity,
    op302_meta_lookalike,
    op303_unsupported_type,
    op304_bad_enum,
    op305_handler_tuple,
    op306_duplicate_option,
    op401_entries_not_literal,
    op402_entry_undefined,
    op403_entry_private,
    op404_entry_duplicate,
    op405_agent_options,
    op900_unused_suppression,
)

_MODULES = (
    op001_parse_error,
    op101_unknown_method,
    op102_unknown_option,
    op103_wrong_type,
    op104_bad_expose,
    op105_bad_render_range,
    op106_tool_only,
    op107_input_metadata,
    op108_options_not_literal,
    op201_dynamic_code,
    op202_nested_import,
    op203_mutable_global,
    op204_mutable_default,
    op205_nondeterministic_call,
    op206_side_effect,
    op207_dynamic_step_name,
    op208_unrestorable_object,
    op209_breaks_recorded_runs,
    op210_planner_code,
    op211_planner_dunder,
    op301_list_schema_arity,
    op302_meta_lookalike,
    op303_unsupported_type,
    op304_bad_enum,
    op305_handler_tuple,
    op306_duplicate_option,
    op401_entries_not_literal,
    op402_entry_undefined,
    op403_entry_private,
    op404_entry_duplicate,
    op405_agent_options,
    op900_unused_suppression,
)

RULES: dict[str, type[Rule]] = {
    cls.code: cls
    for mod in _MODULES
    for cls in vars(mod).values()
    if isinstance(cls, type) and issubclass(cls, Rule) and cls.__module__ == mod.__name__
}
"""Rule classes by code."""
