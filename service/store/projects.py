"""Projects: a repository plus base ref on one code host, owned by an account."""

from collections.abc import Callable

import redis

from service.clock import now_iso
from service.errors import ProjectNotFound
from service.ids import UlidGenerator, new_id
from service.models import Project
from service.projectstate import DisabledReason, ProjectState, reason_of
from service.store.codec import dump, load
from service.store.replies import text, transaction
from service.store.schema import stamp_new

_INDEX = "cd:projects"
# host + repository -> project id, for hosts where a repository has exactly one project (GitHub).
_BY_REPOSITORY = "cd:projects:by-repository"
# host + the code host's id of the repository -> project id: names change (renames, transfers), ids never.
_BY_REPOSITORY_ID = "cd:projects:by-repository-id"


def project_key(project_id: str) -> str:
    """Where the project's record is kept."""
    return f"cd:project:{project_id}"


_key = project_key


def _repository_field(host: str, repository: str) -> str:
    return f"{host}:{repository.lower()}"


def _repository_id_field(host: str, repository_id: int) -> str:
    return f"{host}:{int(repository_id)}"


class ProjectStore:
    def __init__(self, client: redis.Redis, ids: UlidGenerator) -> None:
        self._redis = client
        self._ids = ids

    def add(
        self,
        *,
        account: str,
        host: str,
        repository: str,
        web_url: str,
        ref: str,
        docs_root: str = "",
        host_data: dict | None = None,
    ) -> Project:
        """Register a project and return it with its new id."""
        project = self._new(
            account=account,
            host=host,
            repository=repository,
            web_url=web_url,
            ref=ref,
            docs_root=docs_root,
            host_data=host_data,
        )
        stamp_new(self._redis)  # the first project of a new Redis records the schema version
        with self._redis.pipeline() as pipe:
            self._write_new(pipe, project)
            pipe.execute()
        return project

    def ensure(
        self, *, account: str, host: str, repository: str, web_url: str, ref: str, host_data: dict | None = None
    ) -> tuple[Project, bool]:
        """The one project of `repository` on `host`, up to date; True when it was created now.

        The code host's reason to disable it is lifted (it just listed the repository); an admin's stays.
        Two deliveries about the same repository may race; the index makes the loser reuse the winner's project.
        A `repository_id` in `host_data` finds the project first by that id, so a renamed repository keeps its
        project (and its name is updated).
        """
        field = _repository_field(host, repository)
        stamp_new(self._redis)
        repository_id = (host_data or {}).get("repository_id")
        if repository_id is not None:
            self.find_by_repository_id(host, repository_id)  # indexes a project from before the id index

        def attempt(pipe: redis.client.Pipeline) -> tuple[Project, bool]:
            existing = (
                pipe.hget(_BY_REPOSITORY_ID, _repository_id_field(host, repository_id)) if repository_id else None
            )
            existing = existing or pipe.hget(_BY_REPOSITORY, field)
            if existing:
                pipe.watch(_key(text(existing)))  # an admin's disable meanwhile must not be overwritten
            project = load(Project, pipe.get(_key(text(existing)))) if existing else None
            created = project is None
            old_field = None
            if project is None:
                project = self._new(
                    account=account,
                    host=host,
                    repository=repository,
                    web_url=web_url,
                    ref=ref,
                    docs_root="",
                    host_data=host_data,
                )
            else:
                if project.repository.lower() != repository.lower():
                    old_field = _repository_field(host, project.repository)
                project.account, project.repository, project.web_url, project.ref = account, repository, web_url, ref
                project.host_data = {**project.host_data, **(host_data or {})}
                _put_state(project, state_of(project).host_gives_access())
            pipe.multi()
            if created:
                self._write_new(pipe, project)
            else:
                pipe.set(_key(project.id), dump(project))
            if old_field is not None:
                pipe.hdel(_BY_REPOSITORY, old_field)
            pipe.hset(_BY_REPOSITORY, field, project.id)
            if repository_id is not None:
                pipe.hset(_BY_REPOSITORY_ID, _repository_id_field(host, repository_id), project.id)
            return project, created

        return transaction(self._redis, attempt, _BY_REPOSITORY, _BY_REPOSITORY_ID)

    def move(self, project_id: str, *, repository: str, web_url: str, account: str, host_data: dict) -> Project:
        """The project's repository was renamed or transferred: the same project (id, jobs, state) under its new
        name, owner and `host_data`; the name index follows."""

        def attempt(pipe: redis.client.Pipeline) -> Project:
            project = load(Project, pipe.get(_key(project_id)))
            if project is None:
                raise ProjectNotFound(f"no project {project_id}")
            old_field = _repository_field(project.host, project.repository)
            project.repository, project.web_url, project.account = repository, web_url, account
            project.host_data = {**project.host_data, **host_data}
            pipe.multi()
            pipe.set(_key(project.id), dump(project))
            pipe.hdel(_BY_REPOSITORY, old_field)
            pipe.hset(_BY_REPOSITORY, _repository_field(project.host, repository), project.id)
            return project

        return transaction(self._redis, attempt, _key(project_id), _BY_REPOSITORY)

    def find_by_repository_id(self, host: str, repository_id: int) -> Project | None:
        """The project of the repository with this code-host id, whatever its name is now.

        A project recorded before this index existed is found by its `host_data` and indexed then: the existing
        records migrate on first use."""
        field = _repository_id_field(host, repository_id)
        project_id = self._redis.hget(_BY_REPOSITORY_ID, field)
        if project_id:
            return self.find(text(project_id))
        found = next(
            (
                p
                for p in self.all()
                if p.host == host and str(p.host_data.get("repository_id")) == str(int(repository_id))
            ),
            None,
        )
        if found is not None:
            self._redis.hsetnx(_BY_REPOSITORY_ID, field, found.id)
        return found

    def find_by_repository(self, host: str, repository: str) -> Project | None:
        """The project `ensure` made for `repository` on `host`, if any."""
        project_id = self._redis.hget(_BY_REPOSITORY, _repository_field(host, repository))
        return self.find(text(project_id)) if project_id else None

    def save(self, project: Project) -> None:
        """Write back a changed project (its enabled state changes only through `disable` and `enable`)."""
        self._redis.set(_key(project.id), dump(project))

    def disable(self, project_id: str, reason: DisabledReason) -> Project:
        """Switch a project off for `reason`; its jobs stay readable but it takes no new work.

        A code host's reason is never replaced by an admin's (see service.projectstate for every rule).
        """
        return self._change(project_id, lambda state: state.disabled(reason))

    def enable(self, project_id: str, *, by_host: bool = False) -> Project:
        """Switch a project on: by an admin (HostDisabledProject while its code host has it off), or, with
        `by_host`, by the code host lifting a suspension (an admin's switch stays)."""
        if by_host:
            return self._change(project_id, lambda state: state.unsuspended())
        return self._change(project_id, lambda state: state.enabled_by_admin(project_id))

    def _change(self, project_id: str, change: Callable[[ProjectState], ProjectState]) -> Project:
        return self._update(project_id, lambda project: _put_state(project, change(state_of(project))))

    def _update(self, project_id: str, change: Callable[[Project], None]) -> Project:
        """Change the stored project in a transaction, so that no concurrent change of it is lost."""

        def attempt(pipe: redis.client.Pipeline) -> Project:
            project = load(Project, pipe.get(_key(project_id)))
            if project is None:
                raise ProjectNotFound(f"no project {project_id}")
            change(project)
            pipe.multi()
            pipe.set(_key(project.id), dump(project))
            return project

        return transaction(self._redis, attempt, _key(project_id))

    def delete(self, project: Project) -> None:
        """Forget a project (its jobs and webhook endpoints are deleted first, by their stores)."""
        with self._redis.pipeline() as pipe:
            pipe.delete(_key(project.id))
            pipe.zrem(_INDEX, project.id)
            # Only when the index still names this project: ensure may have made another one meanwhile.
            if (
                self._redis.hget(_BY_REPOSITORY, _repository_field(project.host, project.repository))
                == project.id.encode()
            ):
                pipe.hdel(_BY_REPOSITORY, _repository_field(project.host, project.repository))
            pipe.execute()

    def set_max_tokens(self, project_id: str, max_tokens: int | None) -> Project:
        """Set (or, with None, clear) the default token budget of the project's new jobs."""

        def change(project: Project) -> None:
            project.max_tokens = max_tokens

        return self._update(project_id, change)

    def find(self, project_id: str) -> Project | None:
        return load(Project, self._redis.get(_key(project_id)))

    def get(self, project_id: str) -> Project:
        """The project, or ProjectNotFound."""
        project = self.find(project_id)
        if project is None:
            raise ProjectNotFound(f"no project {project_id}")
        return project

    def ids(self) -> list[str]:
        """Every project's id, oldest first."""
        return [text(i) for i in self._redis.zrangebylex(_INDEX, "-", "+")]

    def all(self) -> list[Project]:
        """Every project, oldest first."""
        ids = [text(i) for i in self._redis.zrangebylex(_INDEX, "-", "+")]
        if not ids:
            return []
        raws = self._redis.mget([_key(i) for i in ids])
        return [load(Project, raw) for raw in raws if raw is not None]

    def _new(self, *, account, host, repository, web_url, ref, docs_root, host_data) -> Project:
        return Project(
            id=new_id("prj", self._ids),
            account=account,
            host=host,
            repository=repository,
            web_url=web_url,
            ref=ref,
            docs_root=docs_root,
            created_at=now_iso(),
            host_data=host_data or {},
        )

    @staticmethod
    def _write_new(pipe, project: Project) -> None:
        pipe.set(_key(project.id), dump(project))
        pipe.zadd(_INDEX, {project.id: 0})


def state_of(project: Project) -> ProjectState:
    """Who has the project switched off, from its record."""
    if project.enabled:
        return ProjectState()
    reason = reason_of(project.disabled_reason)
    return ProjectState(host=reason if reason.by_host else None, admin=project.admin_disabled or not reason.by_host)


def _put_state(project: Project, state: ProjectState) -> None:
    project.enabled, project.admin_disabled = state.enabled, state.admin
    project.disabled_reason = state.reason.value if state.reason else None
