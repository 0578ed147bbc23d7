"""Plumbing commits and never-forced pushes to the job branch, including branches that move during a run."""

import pytest

from service.workspace.entries import BranchConflict, WorkspaceError
from service.workspace.fsck import UnsafeCommit
from service.workspace.git import GitError, Remote
from service.workspace.mirror import MirrorStore
from service.workspace.publish import Identity, PushRequest, PushResult, build_commit, push_commit
from tests.conftest import commit_files
from tests.hostile_repos import hostile_repo
from tests.repositories import add_entries

BOT = Identity("Copydesk", "bot@copydesk.example")
PERSON = Identity("Ada Writer", "ada@example.com")
BRANCH = "copydesk/job_1"


@pytest.fixture(params=[False, True], ids=["push", "in_place"])
def setup(request, git, make_repo, tmp_path):
    """A repository, its remote and mirror: reached by the pack protocol, or trusted as a local project's (its mirror
    borrows the objects and a publish copies the run's pack in: service.workspace.inplace)."""
    bare = make_repo({"README.md": "# Docs\n", "docs/intro.md": "Intro\n", "docs/guide/setup.md": "Setup\n"})
    remote = Remote(str(bare), trusted=request.param)
    return bare, remote, MirrorStore(tmp_path / "mirrors", git).mirror(remote)


def tree_of(git, repo, commit) -> dict[str, tuple[str, bytes]]:
    """path -> (mode, content) of every entry of `commit`."""
    out = git.run("ls-tree", "-r", "-z", commit, git_dir=repo).stdout.decode()
    result = {}
    for record in filter(None, out.split("\0")):
        meta, path = record.split("\t", 1)
        mode, _, oid = meta.split(" ")
        result[path] = (mode, git.run("cat-file", "blob", oid, git_dir=repo).stdout)
    return result


def remote_head(git, bare, branch=BRANCH) -> str | None:
    return git.out("rev-parse", "--verify", "-q", f"refs/heads/{branch}", git_dir=bare, check=False) or None


def run(git, mirror, remote, edits, *, base="main", message="Edit docs", **push_options):
    """One Copydesk run: start from the job branch if it exists, else `base`; apply `edits` and push
    (`push_options`: push_commit's trailer, base_head and guard)."""
    with mirror.run_refs(remote, {"base": f"refs/heads/{base}", "branch": f"refs/heads/{BRANCH}"}) as heads:
        start = heads["branch"] or heads["base"]
        with mirror.open(start) as ws:
            edits(ws)
            changes = ws.changes()
        commit = build_commit(mirror, start, changes, message, PERSON, BOT)
        if commit is None:
            return None
        guard = push_options.pop("guard", lambda: None)
        push = PushRequest(
            commit=commit,
            branch=BRANCH,
            start_commit=start,
            changes=changes,
            message=message,
            author=PERSON,
            committer=BOT,
            **push_options,
        )
        return push_commit(mirror, remote, push, guard=guard)


def test_commit_holds_exactly_the_changes(git, setup):
    bare, remote, mirror = setup
    with mirror.run_refs(remote, {"base": "refs/heads/main"}) as heads:
        base = heads["base"]
        changes = {"docs/intro.md": b"New intro\n", "docs/new/deep/page.md": b"Deep\n", "README.md": None}
        commit = build_commit(
            mirror, base, changes, "Rewrite intro\n\nCo-authored-by: Ada <ada@example.com>", PERSON, BOT
        )
    assert tree_of(git, mirror.path, commit) == {
        "docs/intro.md": ("100644", b"New intro\n"),
        "docs/new/deep/page.md": ("100644", b"Deep\n"),
        "docs/guide/setup.md": ("100644", b"Setup\n"),
    }
    assert git.out("log", "-1", "--format=%P|%an <%ae>|%cn <%ce>|%B", commit, git_dir=mirror.path) == (
        f"{base}|Ada Writer <ada@example.com>|Copydesk <bot@copydesk.example>|"
        "Rewrite intro\n\nCo-authored-by: Ada <ada@example.com>"
    )
    git.run("fsck", "--strict", "--no-dangling", git_dir=mirror.path)  # canonical trees
    slow = _index_commit(git, mirror.path, base, changes)
    assert tree_of(git, mirror.path, commit) == tree_of(git, mirror.path, slow)


def _index_commit(git, repo, parent, changes):
    """The same commit built the slow way (a temporary index), to compare trees with."""
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        env = {
            "GIT_INDEX_FILE": os.path.join(tmp, "i"),
            "GIT_AUTHOR_NAME": "x",
            "GIT_AUTHOR_EMAIL": "x",
            "GIT_COMMITTER_NAME": "x",
            "GIT_COMMITTER_EMAIL": "x",
        }
        git.run("read-tree", parent, git_dir=repo, env=env)
        lines = []
        for path, data in changes.items():
            if data is None:  # mode 0 removes an entry (`update-index --force-remove` wants a work tree)
                lines.append(f"0 {'0' * 40}\t{path}\0")
            else:
                lines.append(f"100644 {git.out('hash-object', '-w', '--stdin', git_dir=repo, input=data)}\t{path}\0")
        git.run("update-index", "-z", "--index-info", git_dir=repo, env=env, input="".join(lines).encode())
        return git.out("commit-tree", git.out("write-tree", git_dir=repo, env=env), "-m", "x", git_dir=repo, env=env)


def test_random_changes_match_an_index_built_tree(git, setup):
    import random

    bare, remote, mirror = setup
    rng = random.Random(7)
    folders = ["", "docs/", "docs/guide/", "docs/guide/deep/", "api/", "api/v1/"]
    with mirror.run_refs(remote, {"base": "refs/heads/main"}) as heads:
        parent = heads["base"]
        for _ in range(8):
            existing = git.out("ls-tree", "-r", "--name-only", parent, git_dir=mirror.path).splitlines()
            changes = {path: None for path in rng.sample(existing, k=min(2, len(existing) - 1))}
            changes.update(
                {
                    f"{rng.choice(folders)}p{rng.randrange(6)}.md": rng.randbytes(rng.randrange(1, 40))
                    for _ in range(rng.randrange(1, 6))
                }
            )
            commit = build_commit(mirror, parent, changes, "x", BOT, BOT)
            slow = _index_commit(git, mirror.path, parent, changes)
            expected = git.out("rev-parse", f"{slow}^{{tree}}", git_dir=mirror.path)
            assert git.out("rev-parse", f"{commit}^{{tree}}", git_dir=mirror.path) == expected
            parent = commit


def test_executable_mode_is_kept(git, setup):
    bare, remote, mirror = setup
    add_entries(git, bare, {"tools/build.sh": ("100755", "#!/bin/sh\n")})
    with mirror.run_refs(remote, {"base": "refs/heads/main"}) as heads:
        commit = build_commit(mirror, heads["base"], {"tools/build.sh": b"#!/bin/sh\necho hi\n"}, "x", BOT, BOT)
    assert tree_of(git, mirror.path, commit)["tools/build.sh"] == ("100755", b"#!/bin/sh\necho hi\n")


def test_files_and_directories_can_swap(git, setup):
    bare, remote, mirror = setup
    with mirror.run_refs(remote, {"base": "refs/heads/main"}) as heads:
        swap = {
            "docs/guide/setup.md": None,
            "docs/guide": b"file now\n",
            "README.md": None,
            "README.md/inner.md": b"dir now\n",
        }
        swapped = build_commit(mirror, heads["base"], swap, "x", BOT, BOT)
        assert set(tree_of(git, mirror.path, swapped)) == {"docs/intro.md", "docs/guide", "README.md/inner.md"}
        drop = {"docs/guide": None, "docs/guide/new.md": b"new\n"}  # None on a directory drops all of it
        dropped = build_commit(mirror, heads["base"], drop, "x", BOT, BOT)
        assert set(tree_of(git, mirror.path, dropped)) == {"README.md", "docs/intro.md", "docs/guide/new.md"}
        with pytest.raises(WorkspaceError):  # a file under a file that stays
            build_commit(mirror, heads["base"], {"docs/intro.md/x.md": b"x"}, "x", BOT, BOT)
        with pytest.raises(WorkspaceError):  # a file over a directory that keeps files
            build_commit(mirror, heads["base"], {"docs": b"x"}, "x", BOT, BOT)
        git.run("fsck", "--strict", "--no-dangling", git_dir=mirror.path)


def test_no_effective_change_commits_and_pushes_nothing(git, setup):
    bare, remote, mirror = setup
    assert run(git, mirror, remote, lambda ws: ws.write("README.md", b"# Docs\n")) is None
    with mirror.run_refs(remote, {"base": "refs/heads/main"}) as heads:
        assert build_commit(mirror, heads["base"], {"README.md": b"# Docs\n", "gone.md": None}, "x", BOT, BOT) is None
    assert remote_head(git, bare) is None


def test_push_creates_the_job_branch(git, setup):
    bare, remote, mirror = setup
    main = remote_head(git, bare, "main")
    result = run(git, mirror, remote, lambda ws: ws.write("docs/intro.md", b"Better intro\n"))
    assert result.rebuilt is False
    assert remote_head(git, bare) == result.commit
    assert git.out("rev-parse", f"{result.commit}^", git_dir=bare) == main
    assert remote_head(git, bare, "main") == main


def test_a_persons_commit_on_the_branch_is_kept_by_the_next_run(git, setup):
    bare, remote, mirror = setup
    first = run(git, mirror, remote, lambda ws: ws.write("docs/intro.md", b"Run one\n")).commit
    person = commit_files(git, bare, {"docs/guide/setup.md": "Fixed by a person\n"}, branch=BRANCH)
    second = run(git, mirror, remote, lambda ws: ws.write("README.md", b"# Run two\n"))
    assert second.rebuilt is False
    assert git.out("rev-list", "--parents", second.commit, git_dir=bare).splitlines()[:3] == [
        f"{second.commit} {person}",
        f"{person} {first}",
        f"{first} {remote_head(git, bare, 'main')}",
    ]
    files = tree_of(git, bare, second.commit)
    assert files["docs/guide/setup.md"][1] == b"Fixed by a person\n"
    assert files["docs/intro.md"][1] == b"Run one\n" and files["README.md"][1] == b"# Run two\n"


def test_branch_moved_in_other_files_rebuilds_on_the_new_head(git, setup):
    bare, remote, mirror = setup
    run(git, mirror, remote, lambda ws: ws.write("docs/intro.md", b"Run one\n"))
    person = None

    def edits(ws):
        nonlocal person
        ws.write("README.md", b"# Run two\n")
        person = commit_files(git, bare, {"docs/guide/setup.md": "Meanwhile\n"}, branch=BRANCH)  # during the run

    result = run(git, mirror, remote, edits)
    assert result.rebuilt is True
    assert remote_head(git, bare) == result.commit
    assert git.out("rev-list", "--parents", "-1", result.commit, git_dir=bare) == f"{result.commit} {person}"
    history = git.out("rev-list", "--parents", result.commit, git_dir=bare).splitlines()
    assert all(len(line.split()) <= 2 for line in history)  # linear: no merges
    files = tree_of(git, bare, result.commit)
    assert files["README.md"][1] == b"# Run two\n" and files["docs/guide/setup.md"][1] == b"Meanwhile\n"


class LeaseGone(Exception):
    """What the runner's guard raises when its lease lapsed (LeaseLost), as seen by push_commit."""


def test_a_guard_that_refuses_the_rebuilt_push_stops_it_and_nothing_lands(git, setup):
    bare, remote, mirror = setup
    run(git, mirror, remote, lambda ws: ws.write("docs/intro.md", b"Run one\n"))
    person = None
    heads_at_guard = []

    def edits(ws):
        nonlocal person
        ws.write("README.md", b"# Run two\n")
        person = commit_files(git, bare, {"docs/guide/setup.md": "Meanwhile\n"}, branch=BRANCH)  # during the run

    def guard():
        heads_at_guard.append(remote_head(git, bare))
        if len(heads_at_guard) > 1:  # the first push was refused (the branch moved); the lease lapsed since
            raise LeaseGone

    with pytest.raises(LeaseGone):
        run(git, mirror, remote, edits, message="Run two", guard=guard)
    assert heads_at_guard == [person, person]  # called before the first push and before the rebuilt one
    assert remote_head(git, bare) == person
    assert "Run two" not in git.out("log", "--format=%s", BRANCH, git_dir=bare).splitlines()


def test_a_moved_branch_that_holds_this_messages_commit_already_is_the_result_and_nothing_is_pushed(git, setup):
    bare, remote, mirror = setup
    main = remote_head(git, bare, "main")
    run(git, mirror, remote, lambda ws: ws.write("docs/intro.md", b"Run one\n"))
    trailer = "Copydesk-Message: msg_2"
    message = f"Run two\n\n{trailer}"
    earlier = None
    guarded = []

    def edits(ws):
        nonlocal earlier
        ws.write("README.md", b"# Run two, again\n")
        # Meanwhile an earlier attempt of the same message pushed its commit, and a person pushed on top of it.
        earlier = commit_files(git, bare, {"README.md": "# Run two\n"}, branch=BRANCH, message=message)
        commit_files(git, bare, {"docs/other.md": "Person\n"}, branch=BRANCH)

    head_before = None

    def guard():
        nonlocal head_before
        guarded.append(True)
        head_before = remote_head(git, bare)

    result = run(git, mirror, remote, edits, message=message, trailer=trailer, base_head=main, guard=guard)
    assert result == PushResult(earlier, rebuilt=False, already=True)
    assert guarded == [True]  # only the first push, refused because the branch moved; no rebuilt push
    assert remote_head(git, bare) == head_before
    assert git.out("log", "--format=%H", "--fixed-strings", f"--grep={trailer}", BRANCH, git_dir=bare).splitlines() == [
        earlier
    ]


def test_branch_created_during_a_first_run_is_built_upon(git, setup):
    bare, remote, mirror = setup
    person = None

    def edits(ws):
        nonlocal person
        ws.write("README.md", b"# Run\n")
        person = commit_files(
            git, bare, {"docs/other.md": "Person\n"}, branch=BRANCH, parent=remote_head(git, bare, "main")
        )

    result = run(git, mirror, remote, edits)
    assert result.rebuilt is True
    assert git.out("rev-parse", f"{result.commit}^", git_dir=bare) == person


def test_branch_moved_in_the_same_file_is_a_conflict(git, setup):
    bare, remote, mirror = setup
    run(git, mirror, remote, lambda ws: ws.write("docs/intro.md", b"Run one\n"))
    person = None

    def edits(ws):
        nonlocal person
        ws.write("docs/guide/setup.md", b"Run two\n")
        ws.write("README.md", b"# Run two\n")
        person = commit_files(git, bare, {"docs/guide/setup.md": "Person\n"}, branch=BRANCH)

    with pytest.raises(BranchConflict) as info:
        run(git, mirror, remote, edits)
    assert info.value.files == ["docs/guide/setup.md"]
    assert remote_head(git, bare) == person


def test_a_push_refused_for_another_reason_raises_git_error(git, make_repo, tmp_path):
    bare = make_repo({"README.md": "# Docs\n"})
    remote = Remote(str(bare))
    mirror = MirrorStore(tmp_path / "mirrors", git).mirror(remote)
    hook = bare / "hooks" / "pre-receive"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho protected >&2\nexit 1\n")
    hook.chmod(0o755)
    with pytest.raises(GitError) as info:
        run(git, mirror, remote, lambda ws: ws.write("README.md", b"x\n"))
    assert "remote rejected" in str(info.value)
    assert remote_head(git, bare) is None


def test_a_commit_that_would_fail_fsck_is_refused_before_any_push(git, tmp_path):
    # The base holds a `.git` look-alike beside the page the run edits: rewriting that folder would make a tree
    # git fsck --strict refuses (hasDotgit), so the commit is refused; an untouched folder is no problem.
    bare = hostile_repo(
        git,
        tmp_path / "hostile.git",
        {
            "README.md": "# Docs\n",
            "docs/intro.md": "Intro\n",
            "docs/.GIT./config": "[core]\n",
            "guide/setup.md": "Setup\n",
        },
    )
    remote = Remote(str(bare))
    mirror = MirrorStore(tmp_path / "mirrors", git).mirror(remote)
    with mirror.run_refs(remote, {"base": "refs/heads/main"}) as heads:
        with pytest.raises(UnsafeCommit) as caught:
            build_commit(mirror, heads["base"], {"docs/intro.md": b"New\n"}, "Edit", PERSON, BOT)
        assert caught.value.code == "unsafe_commit" and "hasDotgit" in caught.value.message
        assert build_commit(mirror, heads["base"], {"guide/setup.md": b"New\n"}, "Edit", PERSON, BOT)
    assert remote_head(git, bare) is None


def test_the_commit_is_the_one_git_commit_tree_makes_of_the_same_tree_and_dates(git, setup):
    bare, remote, mirror = setup
    author = Identity(" Ada <the> Writer. ", "<ada@example.com>")
    message = "Rewrite intro\n\nCopydesk-Job: job_1"
    with mirror.run_refs(remote, {"base": "refs/heads/main"}) as heads:
        commit = build_commit(mirror, heads["base"], {"docs/intro.md": b"New\n"}, message, author, BOT)
        assert commit is not None
        dates = git.out("log", "-1", "--format=%ad|%cd", "--date=raw", commit, git_dir=mirror.path).split("|")
        env = {
            "GIT_AUTHOR_NAME": author.name,
            "GIT_AUTHOR_EMAIL": author.email,
            "GIT_AUTHOR_DATE": dates[0],
            "GIT_COMMITTER_NAME": BOT.name,
            "GIT_COMMITTER_EMAIL": BOT.email,
            "GIT_COMMITTER_DATE": dates[1],
        }
        by_git = git.out(
            "commit-tree",
            "--no-gpg-sign",
            "-p",
            heads["base"],
            "-F",
            "-",
            f"{commit}^{{tree}}",
            git_dir=mirror.path,
            input=message.encode(),
            env=env,
        )
    assert by_git == commit
    assert git.out("log", "-1", "--format=%an <%ae>", commit, git_dir=mirror.path) == "Ada the Writer <ada@example.com>"


def test_objects_whose_links_do_not_resolve_are_refused_and_not_stored(git, setup):
    from service.workspace.fsck import store_checked
    from service.workspace.trees import format_tree, object_id

    _bare, _remote, mirror = setup
    raw = format_tree({"ghost.md": (0o100644, "1" * 40)})
    tree = object_id("tree", raw)
    with pytest.raises(UnsafeCommit):
        store_checked(git, mirror.path, {tree: ("tree", raw)})
    assert git.run("cat-file", "-e", tree, git_dir=mirror.path, check=False).returncode != 0
    blob = b"fine\n"
    store_checked(git, mirror.path, {object_id("blob", blob): ("blob", blob)})
    assert git.run("cat-file", "blob", object_id("blob", blob), git_dir=mirror.path).stdout == blob


@pytest.mark.parametrize(
    "branch",
    [
        "copydesk/job_1",
        "a.lock",
        ".a",
        "a..b",
        "a b",
        "a~",
        "a^",
        "a:b",
        "a?",
        "a*",
        "a[",
        "a\\b",
        "/a",
        "a/",
        "a.",
        "a@{b",
        "@",
        "a@b",
        "é",
        "a\x7f",
        "a\tb",
        "a.lockx",
        "a/.b/c",
        "-a",
        "",
        "a/b.lock/c",
        "{",
        "a//b",
    ],
)
def test_branch_names_are_judged_as_git_check_ref_format_judges_them(git, branch):
    from service.workspace.gitnames import valid_branch_ref

    ref = f"refs/heads/{branch}"
    assert valid_branch_ref(ref) == (git.run("check-ref-format", ref, check=False).returncode == 0)


def test_a_branch_another_process_is_updating_is_refused_as_moved_and_nothing_lands(git, setup):
    bare, remote, mirror = setup
    lock = bare / "refs" / "heads" / "copydesk" / "job_1.lock"  # what a concurrent push or merge holds
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("")
    with pytest.raises(BranchConflict):
        run(git, mirror, remote, lambda ws: ws.write("README.md", b"x\n"))
    lock.unlink()
    assert remote_head(git, bare) is None
    assert run(git, mirror, remote, lambda ws: ws.write("README.md", b"x\n")).rebuilt is False


def test_in_place_runs_no_hook_of_the_repository_and_copies_only_the_runs_pack(git, make_repo, tmp_path):
    bare = make_repo({"README.md": "# Docs\n"})
    ran = tmp_path / "hook-ran"
    for name in ("pre-receive", "update", "post-receive", "reference-transaction"):
        hook = bare / "hooks" / name
        hook.parent.mkdir(exist_ok=True)
        hook.write_text(f"#!/bin/sh\ntouch {ran}\nexit 1\n")
        hook.chmod(0o755)
    remote = Remote(str(bare), trusted=True)
    mirror = MirrorStore(tmp_path / "mirrors", git).mirror(remote)
    packs_before = set((bare / "objects" / "pack").iterdir())
    result = run(git, mirror, remote, lambda ws: ws.write("docs/new.md", b"New\n"))
    assert remote_head(git, bare) == result.commit and not ran.exists()
    added = {p.name for p in set((bare / "objects" / "pack").iterdir()) - packs_before}
    assert added == {f"pack-{mirror.packs[result.commit]}.pack", f"pack-{mirror.packs[result.commit]}.idx"}


def test_in_place_pushes_a_commit_whose_pack_it_does_not_have(git, make_repo, tmp_path):
    # Another mirror object (a retried run) or upkeep that repacked meanwhile: the pack protocol publishes it.
    bare = make_repo({"README.md": "# Docs\n"})
    remote = Remote(str(bare), trusted=True)
    store = MirrorStore(tmp_path / "mirrors", git)
    mirror = store.mirror(remote)
    with mirror.run_refs(remote, {"base": "refs/heads/main"}) as heads:
        commit = build_commit(mirror, heads["base"], {"a.md": b"a\n"}, "Add a", PERSON, BOT)
        other = build_commit(mirror, heads["base"], {"b.md": b"b\n"}, "Add b", PERSON, BOT)
        assert commit is not None and other is not None
        mirror.maintenance(pack_limit=1)  # repacks: the run's packs are gone
        assert not (mirror.path / "objects" / "pack" / f"pack-{mirror.packs[commit]}.pack").exists()
        for target, pushed, branch in ((mirror, commit, "copydesk/a"), (store.mirror(remote), other, "copydesk/b")):
            push = PushRequest(pushed, branch, heads["base"], {}, "Add", PERSON, BOT)
            assert push_commit(target, remote, push).commit == pushed
            assert remote_head(git, bare, branch) == pushed
