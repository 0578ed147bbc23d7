"""Every commit Copydesk makes passes `git fsck --strict`: the check the end-to-end fixtures run on teardown."""

import re
from pathlib import Path

from service.describe import TRAILER_JOB
from service.workspace.git import Git

_FINDING = re.compile(r"^(?:error|warning) in (?:tree|blob|commit|tag) ([0-9a-f]{40,64}): (.*)$")


def assert_copydesk_commits_pass_fsck(repo: Path, git: Git | None = None) -> int:
    """Fail if `git fsck --strict` flags an object one of Copydesk's commits (those with its job trailer) added.

    Objects the commits' parents already held are not Copydesk's doing (hostile repositories hold some on
    purpose), so a finding counts only when its object is new in a Copydesk commit. Returns how many commits
    were checked.
    """
    git = git or Git()
    commits = git.out("rev-list", "--all", f"--grep=^{TRAILER_JOB}: ", git_dir=repo).split()
    if not commits:
        return 0
    ours: set[str] = set()
    for commit in commits:
        objects = git.out("rev-list", "--objects", commit, "--not", f"{commit}^@", git_dir=repo)
        ours.update(line.split(" ", 1)[0] for line in objects.splitlines())
    fsck = git.run("fsck", "--strict", "--no-dangling", "--no-progress", git_dir=repo, check=False)
    report = (fsck.stdout + fsck.stderr).decode("utf-8", "replace").splitlines()
    findings = [(m[1], m[2]) for m in map(_FINDING.match, report) if m and m[1] in ours]
    assert not findings, f"git fsck --strict flags objects Copydesk committed in {repo}: {findings}"
    broken = [line for line in report if "broken link" in line or "missing" in line]
    assert not broken, f"git fsck --strict finds broken links in {repo}: {broken}"
    return len(commits)
