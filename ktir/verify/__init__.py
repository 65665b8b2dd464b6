"""The KTIR verifier: structure, types, numbered op constraints, exact integer-set checks."""

from ktir.verify import rules  # noqa: F401  (registers the rule functions with the engine)
from ktir.verify.engine import RULES, STRUCTURAL_RULES, WARNINGS, verify
from ktir.verify.validate import validate_text

__all__ = ["RULES", "STRUCTURAL_RULES", "WARNINGS", "checked_constraints", "validate_text", "verify"]


def checked_constraints() -> frozenset[str]:
    """Constraint IDs with a rule in the verifier (read by the docs' status table): every
    constraint of an op whose rule function is registered, and every typed constraint (checked
    by the generic pass)."""
    from ktir.dialects.registry import OPS

    by_rule = {i for name, op in OPS.items() if name in RULES for i in op.constraint_ids()}
    typed = {f"{op.name}.{c.id}" for op in OPS.values() for c in op.checked_constraints()}
    return frozenset(by_rule | typed)
