"""Bare mirrors: creation, locked fetches into caller-owned refs, run namespaces, concurrency, maintenance."""

import hashlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from service.workspace.git import GitError, Remote
from service.workspace.mirror import CACHE_PREFIX, RUNS_PREFIX, MirrorStore
from tests.conftest import commit_files


@pytest.fixture
def store(git, tmp_path):
    return MirrorStore(tmp_path / "mirrors", git)


def refs(git, mirror) -> dict[str, str]:
    out = git.out("for-each-ref", "--format=%(refname) %(objectname)", git_dir=mirror.path)
    return dict(line.split(" ") for line in out.splitlines())


def test_one_bare_mirror_per_url(git, store, make_repo, tmp_path):
    bare = make_repo({"a.md": "a\n"})
    mirror = store.mirror(Remote(str(bare)))
    assert mirror.path == tmp_path / "mirrors" / (hashlib.sha256(str(bare).encode()).hexdigest()[:16] + ".git")
    assert git.out("rev-parse", "--is-bare-repository", git_dir=mirror.path) == "true"
    assert git.out("config", "gc.auto", git_dir=mirror.path) == "0"
    assert git.out("config", "maintenance.auto", git_dir=mirror.path) == "false"
    assert store.mirror(Remote(str(bare))).path == mirror.path
    assert store.mirror(Remote(str(tmp_path / "other.git"))).path != mirror.path


def test_fetch_into_caller_refs_and_missing_refs_map_to_none(git, store, make_repo):
    bare = make_repo({"a.md": "a\n"})
    main = git.out("rev-parse", "refs/heads/main", git_dir=bare)
    remote = Remote(str(bare))
    mirror = store.mirror(remote)
    got = mirror.fetch(remote, {"refs/heads/main": "refs/test/base", "refs/heads/copydesk/job_1": "refs/test/branch"})
    assert got == {"refs/test/base": main, "refs/test/branch": None}
    assert refs(git, mirror) == {"refs/test/base": main, CACHE_PREFIX + "heads/main": main}
    assert not (mirror.path / "FETCH_HEAD").exists()


def test_run_refs_yield_shas_by_name_and_are_deleted_afterwards(git, store, make_repo):
    bare = make_repo({"a.md": "a\n"})
    remote = Remote(str(bare))
    mirror = store.mirror(remote)
    with mirror.run_refs(remote, {"base": "refs/heads/main", "branch": "refs/heads/copydesk/job_1"}) as heads:
        assert heads == {"base": git.out("rev-parse", "refs/heads/main", git_dir=bare), "branch": None}
        run_refs = [r for r in refs(git, mirror) if r.startswith(RUNS_PREFIX)]
        assert len(run_refs) == 1 and run_refs[0].endswith("/base")
    assert not any(r.startswith(RUNS_PREFIX) for r in refs(git, mirror))
    with mirror.open(heads["base"]) as ws:
        assert ws.read("a.md") == b"a\n"  # objects stay in the mirror


def test_incremental_fetch_sees_new_commits(git, store, make_repo):
    bare = make_repo({"a.md": "a\n"})
    remote = Remote(str(bare))
    mirror = store.mirror(remote)
    with mirror.run_refs(remote, {"base": "refs/heads/main"}) as first:
        pass
    second_sha = commit_files(git, bare, {"b.md": "b\n"})
    with mirror.run_refs(remote, {"base": "refs/heads/main"}) as second:
        assert second["base"] == second_sha != first["base"]
        with mirror.open(second["base"]) as ws:
            assert ws.read("b.md") == b"b\n"
    with mirror.run_refs(remote, {"base": "refs/heads/main"}) as third:  # nothing new: no fetch needed
        assert third["base"] == second_sha


@pytest.mark.parametrize("trusted", [False, True], ids=["fetched", "borrowed"])
def test_concurrent_fetches_into_one_mirror(git, store, make_repo, trusted):
    bare = make_repo({"a.md": "a\n"})
    expected = {
        f"refs/heads/b{i}": commit_files(git, bare, {f"b{i}.md": f"{i}\n"}, branch=f"b{i}", parent=None)
        for i in range(4)
    }
    remote = Remote(str(bare), trusted=trusted)
    upstream = threading.Lock()

    def run(ref: str) -> list[str | None]:
        seen = []
        for n in range(3):
            with upstream:  # main moves while the others fetch: unlocked, they would race on the mirror's refs
                main = commit_files(git, bare, {f"{ref[-2:]}-{n}.md": "x\n"})
            mirror = store.mirror(remote)  # the first contact races too
            wanted = {"base": "refs/heads/main", "branch": ref, "missing": "refs/heads/no"}
            with mirror.run_refs(remote, wanted) as heads:
                assert heads["missing"] is None
                ancestor = git.run("merge-base", "--is-ancestor", main, heads["base"], git_dir=mirror.path, check=False)
                assert ancestor.returncode == 0
                seen.append(heads["branch"])
        return seen

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(zip(expected, pool.map(run, expected), strict=True))
    assert results == {ref: [sha] * 3 for ref, sha in expected.items()}
    mirror = store.mirror(remote)
    assert not any(r.startswith(RUNS_PREFIX) for r in refs(git, mirror))
    expected["refs/heads/main"] = git.out("rev-parse", "refs/heads/main", git_dir=bare)
    cached = {CACHE_PREFIX + ref[len("refs/") :]: sha for ref, sha in expected.items()}
    assert refs(git, mirror) == ({} if trusted else cached)


def test_a_local_projects_mirror_borrows_the_repositorys_objects_and_never_fetches(git, store, make_repo):
    bare = make_repo({"a.md": "a\n"})
    remote = Remote(str(bare), trusted=True)
    mirror = store.mirror(remote)
    assert (mirror.path / "objects" / "info" / "alternates").read_text() == f"{bare / 'objects'}\n"
    assert (
        mirror.borrows_objects()
        and not store.mirror(Remote(str(make_repo({"b": "b"}, name="other")))).borrows_objects()
    )
    with mirror.run_refs(remote, {"base": "refs/heads/main"}):
        pass
    second = commit_files(git, bare, {"b.md": "b\n"})
    with mirror.run_refs(remote, {"base": "refs/heads/main", "none": "refs/heads/no"}) as heads:
        assert heads == {"base": second, "none": None}
        assert refs(git, mirror) == {}  # the commits are the repository's: no ref of the mirror could keep them
        mirror.maintenance(loose_objects=1, pack_limit=1)  # git gc in a mirror that borrows: it keeps working
        with mirror.open(second) as ws:
            assert ws.read("b.md") == b"b\n"
    counts = dict(line.split(": ") for line in git.out("count-objects", "-v", git_dir=mirror.path).splitlines())
    assert counts["count"] == counts["in-pack"] == "0"  # nothing was copied: no fetch ran
    assert refs(git, mirror) == {}  # and no tips kept to negotiate from (the repository may drop and prune them)


def test_secret_config_never_reaches_the_mirror_on_disk(git, store, make_repo, tmp_path):
    from service.workspace.publish import Identity, PushRequest, build_commit, push_commit

    bare = make_repo({"a.md": "a\n"})
    remote = Remote(str(bare), {"http.extraHeader": "Authorization: Basic c2VjcmV0"})
    assert "c2VjcmV0" not in repr(remote)
    mirror = store.mirror(remote)
    bot = Identity("Copydesk", "bot@example.com")
    with mirror.run_refs(remote, {"base": "refs/heads/main"}) as heads:
        commit = build_commit(mirror, heads["base"], {"b.md": b"b\n"}, "Add b", bot, bot)
        push_commit(
            mirror,
            remote,
            PushRequest(
                commit=commit,
                branch="copydesk/job_1",
                start_commit=heads["base"],
                changes={"b.md": b"b\n"},
                message="Add b",
                author=bot,
                committer=bot,
            ),
        )
    mirror.maintenance(loose_objects=1)
    leaks = [
        path
        for path in (tmp_path / "mirrors").rglob("*")
        if path.is_file() and (b"c2VjcmV0" in path.read_bytes() or b"extraHeader" in path.read_bytes())
    ]
    assert leaks == []


def test_maintenance_packs_and_drops_stale_run_refs(git, store, make_repo):
    bare = make_repo({"a.md": "a\n", "b.md": "b\n"})
    remote = Remote(str(bare))
    mirror = store.mirror(remote)
    got = mirror.fetch(remote, {"refs/heads/main": "refs/test/keep"})
    sha = got["refs/test/keep"]
    stale = f"{RUNS_PREFIX}{int(time.time()) - 7200}-abc/base"
    fresh = f"{RUNS_PREFIX}{int(time.time())}-def/base"
    for ref in (stale, fresh):
        git.run("update-ref", ref, sha, git_dir=mirror.path)
    # gc --auto estimates loose objects from the objects/17/ folder alone: put two there.
    blobs = (b"%d" % n for n in range(100000))
    for blob in [b for b in blobs if hashlib.sha1(b"blob %d\0%s" % (len(b), b)).hexdigest().startswith("17")][:2]:
        git.run("hash-object", "-w", "--stdin", git_dir=mirror.path, input=blob)
    mirror.maintenance(loose_objects=1, stale_after=3600)
    assert stale not in refs(git, mirror) and fresh in refs(git, mirror)
    assert list((mirror.path / "objects" / "pack").glob("*.pack"))
    with mirror.open(sha) as ws:
        assert ws.read("b.md") == b"b\n"


def test_open_an_unknown_commit_fails(store, make_repo):
    mirror = store.mirror(Remote(str(make_repo({"a.md": "a\n"}))))
    with pytest.raises(GitError):
        mirror.open("0" * 40)


def test_existing_lists_made_mirrors_and_maintenance_keeps_live_refs(tmp_path, git, make_repo):
    from service.workspace.git import Remote
    from service.workspace.mirror import MirrorStore

    store = MirrorStore(tmp_path / "mirrors", git)
    assert store.existing() == []
    remote = Remote(str(make_repo({"a.md": "a"})))
    mirror = store.mirror(remote)
    with mirror.run_refs(remote, {"base": "refs/heads/main"}) as heads:
        mirror.maintenance()  # a live run's refs are not stale
        with mirror.open(heads["base"]) as ws:
            assert ws.read("a.md") == b"a"
    assert [m.path for m in store.existing()] == [mirror.path]
