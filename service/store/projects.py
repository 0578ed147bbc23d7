"""Projects: a repository plus base ref on one code host, owned by an account."""

import redis

from service.clock import now_iso
from service.errors import ProjectNotFound
from service.ids import UlidGenerator, new_id
from service.models import Project
from service.store.codec import dump, load
from service.store.replies import text, transaction

_INDEX = "cd:projects"
# host + repository -> project id, for hosts where a repository has exactly one project (GitHub).
_BY_REPOSITORY = "cd:projects:by-repository"
# host + the code host's id of the repository -> project id: names change (renames, transfers), ids never.
_BY_REPOSITORY_ID = "cd:projects:by-repository-id"


def _key(project_id: str) -> str:
    return f"cd:project:{project_id}"


def _repository_field(host: str, repository: str) -> str:
    return f"{host}:{repository.lower()}"


def _repository_id_field(host: str, repository_id: int) -> str:
    return f"{host}:{int(repository_id)}"


class ProjectStore:
    def __init__(self, client: redis.Redis, ids: UlidGenerator) -> None:
        self._redis = client
        self._ids = ids

    def add(self, *, account: str, host: str, repository: str, web_url: str, ref: str,
            docs_root: str = "", host_data: dict | None = None) -> Project:
        """Register a project and return it with its new id."""
        project = self._new(account=account, host=host, repository=repository, web_url=web_url, ref=ref,
                            docs_root=docs_root, host_data=host_data)
        with self._redis.pipeline() as pipe:
            self._write_new(pipe, project)
            pipe.execute()
        return project

    def ensure(self, *, account: str, host: str, repository: str, web_url: str, ref: str,
               host_data: dict | None = None) -> tuple[Project, bool]:
        """The one project of `repository` on `host`, enabled and up to date; True when it was created now.

        Two deliveries about the same repository may race; the index makes the loser reuse the winner's project.
        A `repository_id` in `host_data` finds the project first by that id, so a renamed repository keeps its
        project (and its name is updated).
        """
        field = _repository_field(host, repository)
        repository_id = (host_data or {}).get("repository_id")
        if repository_id is not None:
            self.find_by_repository_id(host, repository_id)  # indexes a project from before the id index

        def attempt(pipe: redis.client.Pipeline) -> tuple[Project, bool]:
            existing = pipe.hget(_BY_REPOSITORY_ID, _repository_id_field(host, repository_id)) if repository_id \
                else None
            existing = existing or pipe.hget(_BY_REPOSITORY, field)
            project = load(Project, pipe.get(_key(text(existing)))) if existing else None
            created = project is None
            old_field = None
            if project is None:
                project = self._new(account=account, host=host, repository=repository, web_url=web_url,
                                    ref=ref, docs_root="", host_data=host_data)
            else:
                if project.repository.lower() != repository.lower():
                    old_field = _repository_field(host, project.repository)
                project.account, project.repository, project.web_url, project.ref = account, repository, web_url, ref
                project.host_data = {**project.host_data, **(host_data or {})}
                project.enabled, project.disabled_reason = True, None
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
        found = next((p for p in self.all() if p.host == host
                      and str(p.host_data.get("repository_id")) == str(int(repository_id))), None)
        if found is not None:
            self._redis.hsetnx(_BY_REPOSITORY_ID, field, found.id)
        return found

    def find_by_repository(self, host: str, repository: str) -> Project | None:
        """The project `ensure` made for `repository` on `host`, if any."""
        project_id = self._redis.hget(_BY_REPOSITORY, _repository_field(host, repository))
        return self.find(text(project_id)) if project_id else None

    def save(self, project: Project) -> None:
        """Write back a changed project (e.g. enabled or disabled)."""
        self._redis.set(_key(project.id), dump(project))

    def set_enabled(self, project_id: str, enabled: bool, *, reason: str | None = None) -> Project:
        """Switch a project on or off; a disabled project keeps its jobs readable but takes no new work.

        `reason` is the error code a run of the disabled project fails with (default `project_disabled`).
        """
        project = self.get(project_id)
        project.enabled = enabled
        project.disabled_reason = None if enabled else (reason or "project_disabled")
        self.save(project)
        return project

    def set_max_tokens(self, project_id: str, max_tokens: int | None) -> Project:
        """Set (or, with None, clear) the default token budget of the project's new jobs."""
        project = self.get(project_id)
        project.max_tokens = max_tokens
        self.save(project)
        return project

    def find(self, project_id: str) -> Project | None:
        return load(Project, self._redis.get(_key(project_id)))

    def get(self, project_id: str) -> Project:
        """The project, or ProjectNotFound."""
        project = self.find(project_id)
        if project is None:
            raise ProjectNotFound(f"no project {project_id}")
        return project

    def all(self) -> list[Project]:
        """Every project, oldest first."""
        ids = [text(i) for i in self._redis.zrangebylex(_INDEX, "-", "+")]
        if not ids:
            return []
        raws = self._redis.mget([_key(i) for i in ids])
        return [load(Project, raw) for raw in raws if raw is not None]

    def _new(self, *, account, host, repository, web_url, ref, docs_root, host_data) -> Project:
        return Project(id=new_id("prj", self._ids), account=account, host=host, repository=repository,
                       web_url=web_url, ref=ref, docs_root=docs_root, created_at=now_iso(),
                       host_data=host_data or {})

    @staticmethod
    def _write_new(pipe, project: Project) -> None:
        pipe.set(_key(project.id), dump(project))
        pipe.zadd(_INDEX, {project.id: 0})
