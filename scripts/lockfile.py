"""Keep the locks in step with pyproject.toml: stamp each with a digest of the dependency lists, check it.

    python3 scripts/lockfile.py build-requires          # pyproject's build requirements, one a line (for `make lock`)
    python3 scripts/lockfile.py stamp requirements.lock  # write the digest into the lock's header
    python3 scripts/lockfile.py check requirements.lock  # exit 1 with a message if pyproject.toml changed since

Standard library only (Python 3.11+), no network: `make install` checks requirements-dev.lock before it creates the
venv, the image's build checks requirements.lock.
"""

import argparse
import hashlib
import json
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
MARKER = "# pyproject-digest: "


class StaleLockError(Exception):
    """The lock was compiled from other dependency lists than pyproject.toml's."""


def _pyproject(path: Path = PYPROJECT) -> dict:
    with path.open("rb") as handle:
        return tomllib.load(handle)


def build_requires(pyproject: dict) -> list[str]:
    """The packages the project's build backend needs (locked so `pip install --no-build-isolation` works)."""
    return list(pyproject.get("build-system", {}).get("requires", []))


def digest(pyproject: dict) -> str:
    """SHA-256 of everything a lock is compiled from: requires-python, dependencies, extras, build requires."""
    project = pyproject.get("project", {})
    inputs = {
        "requires-python": project.get("requires-python"),
        "dependencies": project.get("dependencies", []),
        "optional-dependencies": project.get("optional-dependencies", {}),
        "build-requires": build_requires(pyproject),
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def stamped_digest(lock_text: str) -> str | None:
    """The digest written into a lock's header, or None if it has none."""
    for line in lock_text.splitlines():
        if not line.startswith("#"):
            break
        if line.startswith(MARKER):
            return line.removeprefix(MARKER).split()[0]
    return None


def stamp(lock: Path, pyproject: dict) -> None:
    """Insert (or replace) the digest line right after the lock's leading comment block."""
    lines = [line for line in lock.read_text().splitlines() if not line.startswith(MARKER)]
    header = 0
    while header < len(lines) and lines[header].startswith("#"):
        header += 1
    lines.insert(
        header, f"{MARKER}{digest(pyproject)}  (of pyproject.toml's dependency lists; `make install` checks it)"
    )
    lock.write_text("\n".join(lines) + "\n")


def check(lock: Path, pyproject: dict) -> None:
    """Raise StaleLockError unless the lock exists and carries the digest of pyproject.toml's dependency lists."""
    if not lock.exists():
        raise StaleLockError(f"{lock} is missing: run `make lock` to compile it from pyproject.toml")
    stamped = stamped_digest(lock.read_text())
    if stamped != digest(pyproject):
        raise StaleLockError(
            f"{lock} is out of date: pyproject.toml's dependencies, extras or build requirements changed since it was "
            "compiled. Run `make lock` and commit the new lock with pyproject.toml."
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["build-requires", "stamp", "check"])
    parser.add_argument("lock", nargs="?", type=Path, default=PYPROJECT.parent / "requirements.lock")
    args = parser.parse_args(argv)
    pyproject = _pyproject()
    if args.command == "build-requires":
        print("\n".join(build_requires(pyproject)))
    elif args.command == "stamp":
        stamp(args.lock, pyproject)
    else:
        try:
            check(args.lock, pyproject)
        except StaleLockError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
