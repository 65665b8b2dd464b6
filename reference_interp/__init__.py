"""The KTIR reference interpreter (issue: reference interpreter). Not built yet."""
