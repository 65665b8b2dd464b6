"""`python -m ktir.targets.gen_schema`: write the published JSON Schemas.

`target.schema.json` (target descriptions) and `report.schema.json` (`ktir run
--report-json`), beside this module; a test keeps both up to date.
"""

from __future__ import annotations

import sys

from ktir.targets.report import REPORT_SCHEMA_PATH, report_schema_text
from ktir.targets.schema import SCHEMA_PATH, json_schema_text


def main() -> int:
    for path, text in ((SCHEMA_PATH, json_schema_text()), (REPORT_SCHEMA_PATH, report_schema_text())):
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
