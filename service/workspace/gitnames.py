"""Git's own rules: path components a checkout would read as a protected name (its `verify_path`), and which
ref names it accepts (its `check_refname_format`)."""

import functools
import re
import unicodedata

# Code points HFS+ ignores when it compares names, so `.g\u200cit` is `.git` there (git's utf8.c).
HFS_IGNORED = frozenset([0x200C, 0x200D, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF])

# Files git itself reads from a checkout; a look-alike of one would be read as it on some file systems.
GIT_FILES = (".gitmodules", ".gitattributes", ".gitignore", ".mailmap")
_SHORT_NAME = re.compile(r"(?P<stem>[^~]{1,6})~(?P<n>[0-9]+)")


@functools.lru_cache(maxsize=1 << 16)
def canonical(component: str) -> str:
    """The name a case-insensitive checkout on HFS+ or NTFS would use for `component`.

    HFS+-ignored code points go, the name is case-folded (NFKC first, so full-width look-alikes fold too),
    an NTFS alternate data stream (`:$INDEX_ALLOCATION`) is cut off, and trailing dots and spaces dropped.
    """
    if component.isascii():  # no HFS+-ignored code points, NFKC leaves it as it is, casefold is lower
        name = component.lower()
    else:
        name = "".join(c for c in component if ord(c) not in HFS_IGNORED)
        name = unicodedata.normalize("NFKC", name).casefold()
    name = name.split(":", 1)[0]
    return name.rstrip(". ")


# A repository repeats its folder names across thousands of paths: each name is worked out once per process.
@functools.lru_cache(maxsize=1 << 16)
def aliases(component: str, protected: str) -> bool:
    """Whether `component` names `protected` (a lower-case name such as `.git`) on some file system.

    Besides `canonical`, an NTFS 8.3 short name counts: the first six characters of the name without its
    leading dot and `~N` (`GIT~1`, `GITHUB~1`, `WORKFL~1`), or for longer names the hashed form NTFS falls
    back to (`GI7EBA~1` for `.gitmodules`).
    """
    name = canonical(component)
    if name == protected:
        return True
    short = _SHORT_NAME.fullmatch(name)
    if short is None:
        return False
    bare = protected.lstrip(".")
    stem = short["stem"]
    hashed = len(bare) > 6 and len(stem) == 6 and stem[:2] == bare[:2] and _is_hex(stem[2:])
    return stem == bare[:6] or hashed


def is_dotgit(component: str) -> bool:
    """Whether `component` is `.git` or would be read as `.git` by a checkout on some file system."""
    return aliases(component, ".git")


def git_file_alias(component: str) -> str | None:
    """The git-read file (`.gitmodules`, ...) that `component` imitates without being exactly it, else None."""
    for name in GIT_FILES:
        if component != name and aliases(component, name):
            return name
    return None


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{")


def valid_branch_ref(ref: str) -> bool:
    """Whether `git check-ref-format` accepts `ref` (a full name such as `refs/heads/x`), without running it."""
    if ref == "@" or "/" not in ref or ref.endswith(".") or _REF_FORBIDDEN.search(ref):
        return False
    return all(part and not part.startswith(".") and not part.endswith(".lock") for part in ref.split("/"))
