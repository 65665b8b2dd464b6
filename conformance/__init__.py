"""The KTIR conformance suite (issue: conformance suite). Not built yet."""
