"""GitHub App settings, the token-cache secret box, the App JWT, and installation tokens cached in Redis."""

import json
import time
from datetime import UTC, datetime

import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from bot.github.apps import GitHubApp
from bot.github.auth import InstallationGone, InstallationTokens, app_jwt
from bot.github.secretbox import SecretBox
from bot.github.settings import GitHubSettings
from service.settings import SettingsError
from tests.github_fixtures import pem_of
from tests.harness import wait_until
from tests.scripted_github import Answer


@pytest.fixture(scope="module")
def rsa_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def pem(rsa_key) -> str:
    return pem_of(rsa_key)


@pytest.fixture
def settings(pem):
    return GitHubSettings(app_id="4242", private_key=pem, webhook_secret="whsec")


# -- settings -------------------------------------------------------------------------------------


def test_from_env_reads_every_variable(pem):
    s = GitHubSettings.from_env(
        {
            "GITHUB_APP_ID": " 4242 ",
            "GITHUB_PRIVATE_KEY": pem,
            "GITHUB_WEBHOOK_SECRET": "whsec",
            "GITHUB_API_URL": "https://api.github.com/",
            "GITHUB_APP_SLUG": "copydesk-bot",
        }
    )
    assert (s.app_id, s.webhook_secret, s.api_url, s.web_url, s.app_slug) == (
        "4242",
        "whsec",
        "https://api.github.com",
        "https://github.com",
        "copydesk-bot",
    )
    assert s.private_key.strip() == pem.strip()
    assert s.configured


def test_defaults_and_not_configured():
    s = GitHubSettings.from_env({})
    assert (s.app_id, s.private_key, s.webhook_secret, s.app_slug) == (None, None, None, None)
    assert (s.api_url, s.web_url) == ("https://api.github.com", "https://github.com")
    assert not s.configured


def test_configured_needs_the_webhook_secret_too(pem):
    assert not GitHubSettings.from_env({"GITHUB_APP_ID": "1", "GITHUB_PRIVATE_KEY": pem}).configured


def test_private_key_with_escaped_newlines(pem):
    s = GitHubSettings.from_env({"GITHUB_PRIVATE_KEY": pem.strip().replace("\n", "\\n")})
    assert s.private_key == pem


def test_private_key_from_a_file(pem, tmp_path):
    path = tmp_path / "app.pem"
    path.write_text(pem)
    assert GitHubSettings.from_env({"GITHUB_PRIVATE_KEY_PATH": str(path)}).private_key == pem


def test_unreadable_key_path_names_the_variable(tmp_path):
    with pytest.raises(SettingsError, match=r"GITHUB_PRIVATE_KEY_PATH: cannot read .*missing.pem"):
        GitHubSettings.from_env({"GITHUB_PRIVATE_KEY_PATH": str(tmp_path / "missing.pem")})


def test_key_that_does_not_parse_names_the_variable_and_not_the_value():
    garbage = "-----BEGIN RSA PRIVATE KEY-----\nc2VjcmV0LWJ1dC1icm9rZW4=\n-----END RSA PRIVATE KEY-----"
    with pytest.raises(SettingsError, match="GITHUB_PRIVATE_KEY is not an unencrypted PEM private key") as caught:
        GitHubSettings.from_env({"GITHUB_PRIVATE_KEY": garbage})
    assert "c2VjcmV0" not in str(caught.value) and caught.value.__suppress_context__  # no parser detail in tracebacks


def test_key_must_be_rsa(tmp_path):
    path = tmp_path / "ec.pem"
    path.write_text(pem_of(ec.generate_private_key(ec.SECP256R1())))
    with pytest.raises(SettingsError, match="GITHUB_PRIVATE_KEY_PATH must be an RSA private key"):
        GitHubSettings.from_env({"GITHUB_PRIVATE_KEY_PATH": str(path)})


def test_both_key_variables_is_ambiguous(pem, tmp_path):
    with pytest.raises(SettingsError, match="not both"):
        GitHubSettings.from_env({"GITHUB_PRIVATE_KEY": pem, "GITHUB_PRIVATE_KEY_PATH": str(tmp_path / "k.pem")})


@pytest.mark.parametrize(
    "name, value",
    [("GITHUB_APP_ID", "my app"), ("GITHUB_API_URL", "api.github.com"), ("GITHUB_WEB_URL", "ftp://github.example")],
)
def test_bad_values_name_their_variable(name, value):
    with pytest.raises(SettingsError, match=name):
        GitHubSettings.from_env({name: value})


@pytest.mark.parametrize(
    "api_url, web_url",
    [
        ("https://api.github.com", "https://github.com"),
        ("https://ghe.example.com/api/v3", "https://ghe.example.com"),
        ("https://ghe.example.com/api/v3/", "https://ghe.example.com"),
        ("https://api.acme.ghe.com", "https://acme.ghe.com"),
        ("http://127.0.0.1:5123", "http://127.0.0.1:5123"),
    ],
)
def test_web_url_follows_the_api_url(api_url, web_url):
    assert GitHubSettings.from_env({"GITHUB_API_URL": api_url}).web_url == web_url


def test_web_url_can_be_set():
    s = GitHubSettings.from_env(
        {"GITHUB_API_URL": "https://ghe.example.com/api/v3", "GITHUB_WEB_URL": "https://code.example.com/"}
    )
    assert s.web_url == "https://code.example.com"


def test_client_id_is_an_accepted_app_id():
    assert GitHubSettings.from_env({"GITHUB_APP_ID": "Iv23liABCdef"}).app_id == "Iv23liABCdef"


def test_repr_hides_the_key_and_the_secret(settings):
    text = repr(settings)
    assert "4242" in text and "PRIVATE" not in text and "whsec" not in text


# -- secret box -----------------------------------------------------------------------------------


def test_secret_box_round_trip_and_no_plain_text(pem):
    box = SecretBox(pem)
    sealed = box.seal("ghs_token")
    assert b"ghs_token" not in sealed
    assert box.unseal(sealed) == "ghs_token"
    assert box.unseal(sealed.decode()) == "ghs_token"  # a Redis client that decodes responses


def test_secret_box_key_does_not_depend_on_the_pem_layout(rsa_key, pem):
    pkcs8 = rsa_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    assert pkcs8 != pem
    assert SecretBox(pkcs8).unseal(SecretBox(pem).seal("same key")) == "same key"


def test_secret_box_refuses_another_keys_value_and_tampering(pem):
    other = SecretBox(pem_of(rsa.generate_private_key(public_exponent=65537, key_size=2048)))
    sealed = SecretBox(pem).seal("ghs_token")
    assert other.unseal(sealed) is None
    assert SecretBox(pem).unseal(sealed[:-3] + b"AAA") is None


# -- the App JWT ----------------------------------------------------------------------------------


def test_app_jwt_claims(settings, rsa_key):
    before = int(time.time())
    token = app_jwt(settings)
    after = int(time.time())
    assert jwt.get_unverified_header(token)["alg"] == "RS256"
    claims = jwt.decode(token, rsa_key.public_key(), algorithms=["RS256"])
    assert claims["iss"] == "4242"
    assert before - 60 <= claims["iat"] <= after - 60  # backdated for clock skew
    assert claims["exp"] - claims["iat"] == 600  # GitHub's ceiling is 10 minutes
    assert claims["exp"] <= after + 600


def test_app_jwt_needs_id_and_key():
    with pytest.raises(SettingsError, match="GITHUB_APP_ID"):
        app_jwt(GitHubSettings())


# -- installation tokens (against a scripted GitHub) ----------------------------------------------


@pytest.fixture
def scripted(scripted_github_server):
    return scripted_github_server.reset()


def token_answer(token: str, lifetime: float) -> Answer:
    expires = datetime.fromtimestamp(time.time() + lifetime, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Answer(201, body={"token": token, "expires_at": expires, "permissions": {"contents": "write"}})


@pytest.fixture
def app(scripted, settings, redis_client):
    return GitHubApp(
        GitHubSettings(
            app_id=settings.app_id, private_key=settings.private_key, webhook_secret="whsec", api_url=scripted.url
        ),
        redis_client,
        requests.Session(),
        sleep=lambda s: None,
    )


def test_token_is_minted_with_the_app_jwt_then_cached(scripted, app, rsa_key):
    scripted.then(token_answer("ghs_first", 3600))
    assert app.tokens.token(7) == "ghs_first"
    assert app.tokens.token(7) == "ghs_first"
    assert len(scripted.seen) == 1
    mint = scripted.seen[0]
    assert (mint.method, mint.path, json.loads(mint.body)) == ("POST", "/app/installations/7/access_tokens", {})
    scheme, _, bearer = mint.headers["Authorization"].partition(" ")
    assert scheme == "bearer"
    assert jwt.decode(bearer, rsa_key.public_key(), algorithms=["RS256"])["iss"] == "4242"


def test_cache_is_encrypted_and_lives_until_five_minutes_before_expiry(scripted, app, redis_client):
    scripted.then(token_answer("ghs_plain_text_never", 3600))
    app.tokens.token(7)
    (key,) = redis_client.keys("cd:gh:token:*")
    assert b"ghs_plain_text_never" not in redis_client.get(key)
    assert 3600 - 300 - 5 <= redis_client.ttl(key) <= 3600 - 300


def test_short_lived_tokens_are_cached_half_their_life(scripted, app, redis_client):
    scripted.then(token_answer("ghs_short", 120))
    app.tokens.token(7)
    (key,) = redis_client.keys("cd:gh:token:*")
    assert 55 <= redis_client.ttl(key) <= 60


def test_the_cache_is_shared_between_processes(scripted, app, settings, redis_client):
    scripted.then(token_answer("ghs_shared", 3600))
    assert app.tokens.token(7) == "ghs_shared"
    elsewhere = InstallationTokens(redis_client, settings, lambda: pytest.fail("the other process minted again"))
    assert elsewhere.token(7) == "ghs_shared"
    assert len(scripted.seen) == 1


def test_scoped_tokens_ask_for_the_repository_and_are_cached_apart(scripted, app):
    scripted.then(token_answer("ghs_all", 3600), token_answer("ghs_docs", 3600))
    assert app.tokens.token(7) == "ghs_all"
    assert app.tokens.token(7, "acme/Docs") == "ghs_docs"
    assert app.tokens.token(7, "acme/docs") == "ghs_docs"
    assert json.loads(scripted.seen[1].body) == {"repositories": ["Docs"]}
    assert len(scripted.seen) == 2


def test_invalidate_forces_a_new_token(scripted, app):
    scripted.then(token_answer("ghs_old", 3600), token_answer("ghs_new", 3600))
    assert app.tokens.token(7, "acme/docs") == "ghs_old"
    app.tokens.invalidate(7, "acme/docs")
    assert app.tokens.token(7, "acme/docs") == "ghs_new"


def test_a_value_sealed_with_another_key_is_a_cache_miss(scripted, app, redis_client):
    other = SecretBox(pem_of(rsa.generate_private_key(public_exponent=65537, key_size=2048)))
    redis_client.set("cd:gh:token:7:*", other.seal("ghs_from_rotated_key"))
    scripted.then(token_answer("ghs_fresh", 3600))
    assert app.tokens.token(7) == "ghs_fresh"


@pytest.mark.parametrize(
    "status, message, reason",
    [
        (404, "Not Found", "gone"),
        (403, "This installation has been suspended", "suspended"),
    ],
)
def test_removed_or_suspended_installation_is_gone(scripted, app, status, message, reason):
    scripted.then(Answer(status, body={"message": message}))
    with pytest.raises(InstallationGone, match=f"installation 7 is {reason}") as caught:
        app.tokens.token(7)
    assert caught.value.installation_id == 7


def test_other_refusals_are_not_gone(scripted, app):
    from gidgethub import BadRequest

    scripted.then(Answer(403, body={"message": "Resource not accessible by integration"}))
    with pytest.raises(BadRequest) as caught:
        app.tokens.token(7)
    assert not isinstance(caught.value, InstallationGone)


def test_installation_client_sends_the_cached_token(scripted, app):
    scripted.then(token_answer("ghs_for_calls", 3600), Answer(body={"id": 1}), Answer(body={"id": 2}))
    client = app.installation_client(7, "acme/docs")
    client.getitem("/repos/acme/docs")
    client.getitem("/repos/acme/docs")
    assert [s.headers["Authorization"] for s in scripted.seen[1:]] == ["token ghs_for_calls"] * 2


def test_a_refused_installation_token_is_replaced_once(scripted, app):
    scripted.then(
        token_answer("ghs_revoked", 3600),
        Answer(401, body={"message": "Bad credentials"}),
        token_answer("ghs_new", 3600),
        Answer(201, body={"id": 1}),
    )
    assert app.installation_client(7, "acme/docs").post("/repos/acme/docs/issues/1/comments", data={"body": "x"})
    assert [(s.method, s.path) for s in scripted.seen] == [
        ("POST", "/app/installations/7/access_tokens"),
        ("POST", "/repos/acme/docs/issues/1/comments"),
        ("POST", "/app/installations/7/access_tokens"),
        ("POST", "/repos/acme/docs/issues/1/comments"),
    ]
    assert [s.headers["Authorization"] for s in scripted.seen[1::2]] == ["token ghs_revoked", "token ghs_new"]
    assert app.tokens.token(7, "acme/docs") == "ghs_new"  # cached in place of the refused one


def test_a_refused_app_jwt_is_not_retried(scripted, app):
    from gidgethub import BadRequest

    scripted.then(Answer(401, body={"message": "A JSON web token could not be decoded"}))
    with pytest.raises(BadRequest):
        app.app_client().getitem("/app")
    assert len(scripted.seen) == 1


def test_a_token_mint_answered_5xx_is_retried(scripted, app):
    scripted.then(Answer(502), token_answer("ghs_after_502", 3600))
    assert app.tokens.token(7) == "ghs_after_502"
    assert len(scripted.seen) == 2


def test_slug_from_settings_github_then_cache(scripted, app, settings, redis_client):
    scripted.then(Answer(body={"id": 4242, "slug": "copydesk-test"}))
    assert app.slug() == "copydesk-test"
    assert app.slug() == "copydesk-test"
    assert [s.path for s in scripted.seen] == ["/app"]
    named = GitHubApp(
        GitHubSettings(app_id="4242", private_key=settings.private_key, app_slug="named"),
        redis_client,
        requests.Session(),
    )
    assert named.slug() == "named"


# -- installation tokens against the GitHub emulator ----------------------------------------------


@pytest.fixture
def emulated(github, redis_client):
    github.add_repo("acme/docs")
    github.add_repo("acme/other")
    installation_id = github.add_installation("acme", ["acme/docs", "acme/other"])
    settings = GitHubSettings(
        app_id=str(github.app.id),
        private_key=github.app.private_key_pem,
        webhook_secret=github.app.webhook_secret,
        api_url=github.url,
    )
    return GitHubApp(settings, redis_client, requests.Session()), installation_id


def mints(github) -> list:
    return [r for r in github.requests if r.operation == "apps/create-installation-access-token"]


def test_emulator_accepts_the_jwt_and_caches_the_token_for_every_process(github, emulated, redis_client):
    app, installation_id = emulated
    token = app.tokens.token(installation_id)
    assert token in github.state.tokens
    elsewhere = InstallationTokens(redis_client, app.settings, app.app_client)
    assert elsewhere.token(installation_id) == token
    assert len(mints(github)) == 1 and mints(github)[0].auth == "jwt"
    assert app.slug() == github.app.slug


def test_emulator_token_expiry_mints_a_new_one(github, emulated, redis_client):
    app, installation_id = emulated
    github.token_ttl = 2
    first = app.tokens.token(installation_id)
    assert app.tokens.token(installation_id) == first
    wait_until(lambda: not redis_client.keys("cd:gh:token:*"), 10, "the cached token to expire")
    assert app.tokens.token(installation_id) != first
    assert len(mints(github)) == 2


def test_emulator_scoped_token_reaches_only_its_repository(github, emulated):
    from gidgethub import BadRequest

    app, installation_id = emulated
    client = app.installation_client(installation_id, "acme/docs")
    assert client.getitem("/repos/acme/docs")["full_name"] == "acme/docs"
    with pytest.raises(BadRequest) as caught:
        client.getitem("/repos/acme/other")
    assert caught.value.status_code == 404
    everything = app.installation_client(installation_id)
    names = [
        r["full_name"]
        for r in everything.getiter(
            "/installation/repositories{?per_page}", {"per_page": 1}, iterable_key="repositories"
        )
    ]
    assert names == ["acme/docs", "acme/other"]  # two pages, followed


def test_emulator_uninstalled_and_suspended_installations_are_gone(github, emulated):
    app, installation_id = emulated
    github.suspend(installation_id)
    with pytest.raises(InstallationGone, match="suspended"):
        app.tokens.token(installation_id)
    github.uninstall(installation_id)
    with pytest.raises(InstallationGone, match="gone"):
        app.tokens.token(installation_id, "acme/docs")


def test_emulator_revoked_token_is_invalidated_and_replaced(github, emulated):
    app, installation_id = emulated
    client = app.installation_client(installation_id, "acme/docs")
    assert client.getitem("/repos/acme/docs")["full_name"] == "acme/docs"
    revoked = app.tokens.token(installation_id, "acme/docs")  # cached
    github.state.revoke_tokens(installation_id)
    assert client.getitem("/repos/acme/docs")["full_name"] == "acme/docs"
    fresh = app.tokens.token(installation_id, "acme/docs")
    assert fresh != revoked and fresh in github.state.tokens
    assert [r.status for r in github.requests if r.operation == "repos/get"] == [200, 401, 200]
    assert len(mints(github)) == 2
