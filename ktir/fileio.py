"""Reading inputs and writing outputs atomically (a failed run leaves old outputs intact)."""

from __future__ import annotations

import math
import os
import re
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


class InputError(Exception):
    """An input file that cannot be read as text; the message says why, for the user."""


def read_source(path: str) -> str:
    """The UTF-8 text of `path` (`-` is stdin), or InputError naming the problem."""
    try:
        if path == "-":
            return sys.stdin.read()
        return Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{path} is not UTF-8 text (byte {e.start})") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write `data` (text as UTF-8, or bytes) to `path` via a temporary file in the same
    directory and a rename, so a failed write leaves an earlier file intact. The file gets
    the permissions a plain `open(path, "w")` would give it (mkstemp's are owner-only)."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def confined_path(value: str, root: str) -> str:
    """`value` unchanged if it is a relative path that stays inside `root` (no absolute path,
    no drive, no `..` step): files a manifest names must not reach outside its folder.
    Raises ValueError naming `root` otherwise (pydantic turns it into a located error)."""
    parts = value.replace("\\", "/").split("/")
    if value.startswith(("/", "\\")) or (len(value) > 1 and value[1] == ":") or ".." in parts or value in ("", "."):
        raise ValueError(f"{value!r} must be a relative path inside {root} (no absolute path, no '..')")
    return value


def confined_file(folder: Path, name: str) -> Path:
    """`folder / name`, if it is a regular file inside `folder` once symbolic links are
    followed (a link out of the folder, to a device or to a pipe would read what the
    folder's author chose); ValueError saying why not otherwise. `name` is relative (see
    confined_path); a missing file is left for the caller to report."""
    confined_path(name, str(folder))
    path = folder / name
    try:
        real = path.resolve(strict=False)
        root = folder.resolve(strict=False)
    except (OSError, RuntimeError) as e:  # a loop of links
        raise ValueError(f"{path}: cannot follow its links ({e})") from None
    if not real.is_relative_to(root):
        raise ValueError(f"{path} leads outside {folder} (to {real}); a file it names must be inside it")
    if real.exists() and not real.is_file():
        raise ValueError(f"{path} is not a regular file")
    return path


# Arrays and inline tables nested deeper than this are refused before tomllib sees them:
# tomllib recurses per level, and near the interpreter's recursion limit CPython 3.11 can
# raise SystemError ("error return without exception set") instead of RecursionError.
MAX_TOML_DEPTH = 100
_TOML_TOKENS = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:\\.|[^"\\\n])*"|\'[^\'\n]*\'|#[^\n]*|[\[\]{}]')


def toml_loads(text: str) -> dict[str, Any]:
    """tomllib.loads, raising RecursionError (as a deep file did before) when brackets outside
    strings and comments nest deeper than MAX_TOML_DEPTH."""
    depth = deepest = 0
    for m in _TOML_TOKENS.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
    if deepest > MAX_TOML_DEPTH:
        raise RecursionError(f"TOML nested {deepest} deep (at most {MAX_TOML_DEPTH})")
    return tomllib.loads(text)


def check_npy_header(fp: IO[bytes], size: int, where: str) -> None:
    """Raise ValueError when the `.npy` header at the start of `fp` (`size` bytes in all)
    claims more data than follows it: numpy would allocate the claimed array before reading
    (a 30-byte file can ask for 200 GB). Headers numpy cannot read are left to np.load, which
    reports them; `fp` is left where it was."""
    import numpy as np  # not at import: the text commands never need it

    start = fp.tell()
    try:
        version = np.lib.format.read_magic(fp)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read(fp)
        available = size - (fp.tell() - start)
    except Exception:  # noqa: BLE001 - not .npy, or a damaged header: np.load says which
        return
    finally:
        fp.seek(start)
    need = math.prod(shape) * dtype.itemsize
    if need > available:
        raise ValueError(f"{where}: its header says {dtype} {tuple(shape)} ({need:,} bytes) but only "
                         f"{available:,} bytes follow it (a truncated or damaged .npy)")


def load_npy_checked(path: str | Path) -> Any:
    """np.load(path, allow_pickle=False) once a `.npy` header's claimed size is checked
    against the file's (check_npy_header); a `.npz` archive is returned unread, as np.load does."""
    import numpy as np

    with open(path, "rb") as f:
        check_npy_header(f, os.fstat(f.fileno()).st_size, str(path))
    return np.load(path, allow_pickle=False)


def read_npz_checked(path: str | Path | IO[bytes]) -> dict[str, np.ndarray]:
    """Every array of a `.npz` archive, each member's header checked against its size in the
    archive before numpy allocates it (check_npy_header). ValueError for a damaged archive."""
    import numpy as np

    with np.load(path, allow_pickle=False) as z:
        out = {}
        members = set(z.zip.namelist())
        for name in z.files:
            member = name if name in members else name + ".npy"
            with z.zip.open(member) as f:
                check_npy_header(f, z.zip.getinfo(member).file_size, f"{path} [{name}]")
            out[name] = z[name]
        return out
