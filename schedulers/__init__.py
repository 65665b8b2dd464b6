"""KTIR tile schedulers (issue: pluggable tile schedulers). Not built yet."""
