"""Example adapters for vendors to copy (see docs/guides/conformance.md)."""
