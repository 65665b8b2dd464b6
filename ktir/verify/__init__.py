"""The KTIR verifier: structure, types, numbered op constraints, exact integer-set checks."""

from ktir.verify.engine import RULES, STRUCTURAL_RULES, verify
from ktir.verify.validate import validate_text

__all__ = ["RULES", "STRUCTURAL_RULES", "validate_text", "verify"]
