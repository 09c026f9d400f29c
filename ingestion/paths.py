"""Which files of a folder source or a zip are imported: exclude patterns and the files nobody means to import.

Exclude patterns are globs on the path relative to the folder or zip root, with
`/` as separator, as in .gitignore:

- `*` and `?` match within one path segment, `[abc]` a character class;
- `**` matches any number of segments, including none (`**/README.md` also
  matches a README.md at the root; `drafts/**` everything under drafts/);
- a pattern without a `/` matches a file or folder name at any depth (`*.tmp`, `drafts`);
- a pattern ending in `/` matches a folder and everything in it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import PurePosixPath


def is_excluded(relative_path: str, patterns: list[str]) -> bool:
    path = relative_path.replace("\\", "/").strip("/")
    segments = path.split("/")
    for pattern in patterns:
        pattern = pattern.strip()
        if pattern.endswith("/"):
            pattern += "**"  # a folder: everything in it
        if not pattern:
            continue
        if "/" in pattern:
            if _compile(pattern.lstrip("/")).fullmatch(path):
                return True
        elif any(_compile(pattern).fullmatch(segment) for segment in segments):
            return True  # no slash: a file or folder of that name at any depth
    return False


def is_junk(relative_path: str) -> bool:
    """Files nobody means to import: dotfiles and dot-folders, macOS resource forks, Office lock files."""
    parts = PurePosixPath(relative_path.replace("\\", "/")).parts
    # "." and ".." are steps of a path, not dot-names: a path that climbs out is refused by name, never skipped.
    dotted = [p for p in parts if p not in (".", "..")]
    return any(p.startswith(".") or p == "__MACOSX" or p.startswith("~$") or p == "Thumbs.db" for p in dotted)


@lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str]:
    regex = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            regex += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            regex += ".*"
            i += 2
        elif pattern[i] == "*":
            regex += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            regex += "[^/]"
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            body = body.replace("\\", "\\\\")
            regex += "[" + ("^" + body[1:] if body.startswith("!") else body.lstrip("^")) + "]"
            i = end + 1
        else:
            regex += re.escape(pattern[i])
            i += 1
    try:
        return re.compile(regex)
    except re.error:  # e.g. a reversed range [z-a]: the pattern then matches itself, literally
        return re.compile(re.escape(pattern))
