"""The `syntax` level, derived from the repository's test files.

Every valid program of tests/corpus and examples must be accepted (and, when the
implementation prints, printing must be a fixpoint); every file of
tests/corpus/invalid_syntax, plus truncations of valid programs, must be rejected with
the diagnostic ID `syntax`. (The `validation` level: conformance.gen.validation.)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from conformance.gen.draft import Draft
from ktir.dialects.names import Func

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
VALID_DIRS = ("kernels", "upstream", "upstream_printed", "mlir", "rfc", "legacy", "generic")


def _slug(path: Path) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", path.stem)


def _errors(text: str, name: str) -> list[str] | None:
    """Error IDs the reference verifier reports, or None when the text does not parse."""
    from ktir.verify import validate_text

    module, diagnostics = validate_text(text, name)
    ids = [d.id for d in diagnostics if d.severity == "error"]
    return ids


def syntax_cases() -> Iterator[Draft]:
    valid: list[tuple[str, Path]] = []
    for sub in VALID_DIRS:
        valid += [(sub, p) for p in sorted((CORPUS / sub).glob("*.ktir"))]
    valid += [("examples", p) for p in sorted((ROOT / "examples").glob("*.ktir"))]
    for sub, path in valid:
        text = path.read_text(encoding="utf-8")
        if _errors(text, str(path)):
            continue  # semantically invalid corpus files belong to the validation level
        yield Draft(id=f"syntax.accept.{sub}.{_slug(path)}", level="syntax", text=text, expect="accept",
                    description=f"{path.relative_to(ROOT)} parses, verifies and prints to a fixpoint")
    for path in sorted((CORPUS / "invalid_syntax").glob("*.ktir")):
        located = _located(path.read_text(encoding="utf-8"), str(path))
        if located is None:
            continue
        yield Draft(id=f"syntax.reject.{_slug(path)}", level="syntax", text=located, expect="reject", diagnostic="syntax",
                    description=f"{path.relative_to(ROOT)} is rejected as malformed", file_key=f"invalid_syntax/{_slug(path)}")
    # truncated programs: a kernel cut inside its body is malformed wherever the cut falls
    for path in sorted((ROOT / "examples").glob("*.ktir")):
        source = path.read_text(encoding="utf-8")
        body = source.index(Func.func)
        for k, frac in enumerate((0.5, 0.8)):
            cut = body + int((len(source) - body) * frac)
            cut_text = _located(source[:cut], str(path))
            if cut_text is None:
                continue
            name = f"truncated.{_slug(path)}.{k}"
            yield Draft(id=f"syntax.reject.{name}", level="syntax", text=cut_text, expect="reject", diagnostic="syntax",
                        description=f"{path.name} cut at {int(frac * 100)}% of its body is rejected",
                        file_key=f"invalid_syntax/{name}")


def _located(text: str, name: str) -> str | None:
    """`text` with a first line `// error-at: LINE:COL` giving where the reference parser
    stops (the convention of tests/corpus/invalid_syntax); None if it parses."""
    import ktir

    body = text.split("\n", 1)[1] if text.startswith("// error-at:") else text
    candidate = "// error-at: 0:0\n" + body
    try:
        ktir.parse(candidate, name)
    except ktir.ParseError as e:
        return f"// error-at: {e.line}:{e.column}\n" + body
    return None
