"""agentweb settings: one module, driven by the environment (a `.env` file is optional).

Every setting is documented in the README. With nothing set, agentweb runs on one
machine with SQLite and an embedded Redis under `AGENTWEB_VAR`.
"""

from __future__ import annotations

import os
import secrets
import socket
from pathlib import Path
from typing import Any

import dj_database_url
import django_stubs_ext
from django.core.exceptions import ImproperlyConfigured

from agentweb.environment import envbool, envint, envlist, load_dotenv
from agentweb.site_names import site_names
from tools_app.core.addresses import trusted_networks

# Lets the typed generics of django-stubs (ModelAdmin[Policy], …) run.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent
load_dotenv(BASE_DIR / ".env")

AGENTWEB_VAR = Path(os.environ.get("AGENTWEB_VAR") or BASE_DIR / "var").resolve()
AGENTWEB_WORKSPACES = Path(
    os.environ.get("AGENTWEB_WORKSPACES") or AGENTWEB_VAR / "workspaces"
).resolve()
AGENTWEB_VAR.mkdir(parents=True, exist_ok=True)
# Local directories sessions may clone from (comma-separated); empty: any the server reads.
AGENTWEB_REPO_ROOTS = [Path(root) for root in envlist("AGENTWEB_REPO_ROOTS", "")]


def _secret_key() -> str:
    """DJANGO_SECRET_KEY, else a key generated once and kept under AGENTWEB_VAR."""
    if os.environ.get("DJANGO_SECRET_KEY"):
        return os.environ["DJANGO_SECRET_KEY"]
    key_file = AGENTWEB_VAR / "secret_key"
    if not key_file.exists():
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(50))
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = envbool("DJANGO_DEBUG", False)
# Where people reach agentweb: links in pull requests and notifications, and the one fact
# the names and origins it accepts derive from (agentweb/site_names.py).
AGENTWEB_BASE_URL = os.environ.get("AGENTWEB_BASE_URL") or "http://127.0.0.1:8000"
try:
    _site = site_names(
        AGENTWEB_BASE_URL,
        envlist("DJANGO_ALLOWED_HOSTS", ""),
        envlist("DJANGO_CSRF_TRUSTED_ORIGINS", ""),
    )
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from exc
ALLOWED_HOSTS = _site.allowed_hosts
CSRF_TRUSTED_ORIGINS = _site.trusted_origins
AGENTWEB_WEBSOCKET_ORIGINS = _site.websocket_origins
# The address `up` binds daphne to: loopback unless set (0.0.0.0 or one interface's address).
AGENTWEB_BIND = os.environ.get("AGENTWEB_BIND") or "127.0.0.1"
AGENTWEB_WEB_PROCESSES = envint("AGENTWEB_WEB_PROCESSES", 1)  # `up`'s daphnes on its one port
# Cookies are Secure only when the deployment says it serves HTTPS.
AGENTWEB_HTTPS = envbool("AGENTWEB_HTTPS", False)
SESSION_COOKIE_SECURE = AGENTWEB_HTTPS
CSRF_COOKIE_SECURE = AGENTWEB_HTTPS
if AGENTWEB_HTTPS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    # Plain HTTP is redirected (probes on the web port excepted) and browsers are told to
    # come back over HTTPS only (HSTS; 0 turns it off).
    SECURE_SSL_REDIRECT = True
    SECURE_REDIRECT_EXEMPT = [r"^(healthz|readyz|metrics)/?$"]
    SECURE_HSTS_SECONDS = envint("AGENTWEB_HSTS_SECONDS", 365 * 24 * 3600)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    # The preload list takes whole registered domains: the domain owner's choice, made for
    # all its sites at once, not a service's on a subdomain of it.
    SILENCED_SYSTEM_CHECKS = ["security.W021"]

# No "daphne" app: every web process is `python -m daphne` (`up`, `serve web`), which
# installs its reactor itself; the app would import daphne and Twisted into every
# process that starts Django (each command, each worker: a sixth of its start-up) only
# to give `runserver` websockets, which agentweb does not use.
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "ninja",  # its templates and static files: /api/docs's Swagger UI, served from here
    "tools_app",
]

MIDDLEWARE = [
    # A Host outside ALLOWED_HOSTS: a 400 naming AGENTWEB_BASE_URL, and one log line.
    "tools_app.api.entry_checks.known_host",
    "django.middleware.security.SecurityMiddleware",
    # Static files from STATIC_ROOT once `collectstatic` ran; before, agentweb/asgi.py
    # serves them from the source folders.
    "tools_app.web.static_files.StaticFiles",  # WhiteNoise, able to run async too
    "tools_app.web.middleware.body_size_limit",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "agentweb.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "tools_app.web.context_processors.pending_approvals",
                "tools_app.web.notify_context.failing_channels",
            ],
        },
    },
]
WSGI_APPLICATION = "agentweb.wsgi.application"
ASGI_APPLICATION = "agentweb.asgi.application"


def _sqlite(path: Path) -> dict[str, object]:
    """SQLite tuned for a web process and workers sharing one file (Django's backend, its
    statements' rewrite to SQLite's style remembered: `tools_app/sql/sqlite3`)."""
    return {
        "ENGINE": "tools_app.sql.sqlite3",
        "NAME": path,
        "OPTIONS": {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": (
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=20000;"
            ),
        },
    }


def _database() -> dict[str, object]:
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith("sqlite:///"):
        return _sqlite(Path(url.removeprefix("sqlite:///")))
    if url:
        return _postgresql(url)
    return _sqlite(AGENTWEB_VAR / "agentweb.sqlite3")


def _postgresql(url: str) -> dict[str, object]:
    """A bounded pool per process (Django's psycopg pool): daphne runs each request's sync
    code in a thread of its own, and one connection per thread made PostgreSQL answer "too
    many clients" under 50 concurrent agents (BENCHMARKS.md, "Held waits"). A request
    past the pool's size waits for a connection up to AGENTWEB_DB_POOL_TIMEOUT seconds.
    With several web processes on one database, PgBouncer in front is the alternative."""
    database: dict[str, Any] = dict(
        dj_database_url.parse(url, conn_max_age=0, conn_health_checks=True)
    )
    # Django's backend, its pool pinging only a connection that sat idle: one round trip
    # fewer per hook (tools_app/sql/postgresql).
    database["ENGINE"] = "tools_app.sql.postgresql"
    options: dict[str, Any] = dict(database.get("OPTIONS") or {})
    options.setdefault("connect_timeout", envint("AGENTWEB_DB_CONNECT_TIMEOUT", 5))
    size = envint("AGENTWEB_DB_POOL_SIZE", 10)
    if size > 0:  # 0: no pool (a connection per thread, closed after each request)
        timeout = envint("AGENTWEB_DB_POOL_TIMEOUT", 20)
        options["pool"] = {"min_size": 1, "max_size": size, "timeout": timeout}
    return database | {"OPTIONS": options}


DATABASES = {"default": _database()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = AGENTWEB_VAR / "static"
STATIC_ROOT.mkdir(exist_ok=True)  # WhiteNoise warns about a missing one on every start
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Compressed copies at `collectstatic`; no manifest, so pages render before it ran.
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG
LOGIN_URL = "/login/"
LOGOUT_REDIRECT_URL = "/login/"
LOGIN_REDIRECT_URL = "/approvals/"

# Redis: REDIS_URL, else the embedded server that `manage.py up` starts on a unix socket.
REDIS_SOCKET = AGENTWEB_VAR / "redis.sock"
REDIS_URL = os.environ.get("REDIS_URL") or f"unix://{REDIS_SOCKET}"

DATA_UPLOAD_MAX_MEMORY_SIZE = envint("AGENTWEB_MAX_BODY_BYTES", 10 * 1024 * 1024)
# How long a gateway hook (Claude Code's PreToolUse) is held for a person's decision.
AGENTWEB_HOOK_WAIT_SECONDS = envint("AGENTWEB_HOOK_WAIT_SECONDS", 3300)
# How many hook events one web process judges and stores at once (each holds a database
# connection meanwhile); the rest queue on the event loop. SQLite: one (one writer).
# PostgreSQL: two, one using the interpreter while the other waits on the database; more
# share the interpreter, so a burst's hooks all finish late (BENCHMARKS.md §16).
_HOOKS_AT_ONCE_DEFAULT = 1 if str(DATABASES["default"]["ENGINE"]).endswith("sqlite3") else 2
AGENTWEB_HOOKS_AT_ONCE = max(1, envint("AGENTWEB_HOOKS_AT_ONCE", _HOOKS_AT_ONCE_DEFAULT))
# PostgreSQL: an allowed hook's record commits without waiting for the WAL's flush (a
# disk stalling a sync held every hook meanwhile); a database crash may lose the last of
# them. 1: they wait too (docs/settings.md, BENCHMARKS.md §16).
AGENTWEB_DURABLE_ALLOWED_CALLS = envbool("AGENTWEB_DURABLE_ALLOWED_CALLS", False)

# One log format for every process (up, daphne, the Celery workers and beat): text, or
# JSON lines for a log shipper (AGENTWEB_LOG_FORMAT=json). agentweb's own loggers log at
# AGENTWEB_LOG_LEVEL; libraries (Celery, daphne, Django) at AGENTWEB_LIBRARY_LOG_LEVEL:
# WARNING, so Celery's line per task (the 5-second sweep's too) shows at INFO only.
AGENTWEB_LOG_LEVEL = (os.environ.get("AGENTWEB_LOG_LEVEL") or "INFO").upper()
AGENTWEB_LIBRARY_LOG_LEVEL = (os.environ.get("AGENTWEB_LIBRARY_LOG_LEVEL") or "WARNING").upper()
AGENTWEB_LOG_FORMAT = os.environ.get("AGENTWEB_LOG_FORMAT") or "text"
if AGENTWEB_LOG_FORMAT not in {"text", "json"}:
    raise ImproperlyConfigured(f"AGENTWEB_LOG_FORMAT is {AGENTWEB_LOG_FORMAT!r}: text or json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "text": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "json": {"()": "agentweb.logformat.JsonFormatter"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": AGENTWEB_LOG_FORMAT},
    },
    "root": {"handlers": ["console"], "level": AGENTWEB_LIBRARY_LOG_LEVEL},
    "loggers": {
        # Django's own console handler is replaced: its records reach the one above.
        "django": {"level": AGENTWEB_LIBRARY_LOG_LEVEL},
        "agentweb": {"level": AGENTWEB_LOG_LEVEL},
        "tools_app": {"level": AGENTWEB_LOG_LEVEL},
    },
}


def kombu_url(redis_url: str) -> str:
    """Kombu spells a unix-socket Redis `redis+socket://PATH`; redis-py spells it `unix://PATH`."""
    if redis_url.startswith("unix://"):
        return "redis+socket://" + redis_url.removeprefix("unix://")
    return redis_url


# Celery: the agent runtime and tool execution run in workers, never in a web request.
AGENTWEB_WORKER_QUEUE = os.environ.get("AGENTWEB_WORKER_QUEUE") or f"host.{socket.gethostname()}"
CELERY_BROKER_URL = kombu_url(REDIS_URL)
CELERY_BROKER_CONNECTION_TIMEOUT = 3
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 4 * 3600, "socket_timeout": 5}
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("AGENTWEB_QUEUE") or "agentweb"
# Notification deliveries have a queue and worker of their own (services/queueing.notify_queue):
# "" means "<AGENTWEB_QUEUE>.notify".
AGENTWEB_NOTIFY_QUEUE = os.environ.get("AGENTWEB_NOTIFY_QUEUE", "")
AGENTWEB_NOTIFY_CONCURRENCY = envint("AGENTWEB_NOTIFY_CONCURRENCY", 4)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = 2 * 3600
CELERY_TASK_TIME_LIMIT = 2 * 3600 + 60
CELERY_TASK_PUBLISH_RETRY = True
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0.2, "interval_step": 0.3}
CELERY_TASK_ALWAYS_EAGER = envbool("AGENTWEB_TASKS_EAGER", False)
# Celery closes the database connection before and after every task; a pool process keeps
# its SQLite connection for this many tasks instead (opening one, with its PRAGMAs, was
# about 5% of the worker's CPU per call: BENCHMARKS.md, "Per call and per turn").
# PostgreSQL keeps closing.
CELERY_DB_REUSE_MAX = 1000 if str(DATABASES["default"]["ENGINE"]).endswith("sqlite3") else None
CELERY_BEAT_SCHEDULE = {
    "sweep": {"task": "tools_app.tasks.sweep", "schedule": 5.0},
}
CELERY_BEAT_SCHEDULE_FILENAME = str(AGENTWEB_VAR / "celerybeat-schedule")


def channel_layer_host(redis_url: str) -> dict[str, Any]:
    """channels_redis waits for a message with a 5 s BZPOPMIN; redis-py 8 gives up reading
    after 5 s too, which closed every websocket (and `?wait`) idle for 5 s. The socket
    timeout is kept, above the blocking read's."""
    return {"address": redis_url, "socket_timeout": 15}


CHANNEL_LAYER_BACKENDS = {
    # One PUBLISH per group, a commit's in one round trip, joins confirmed, lost connections
    # said (tools_app/live/layer.py).
    "pubsub": "tools_app.live.layer.PubSubChannelLayer",
    # channels_redis's per-channel layer, the default until issue 23 (BENCHMARKS.md,
    # "One push to many").
    "redis": "channels_redis.core.RedisChannelLayer",
    # One process only (no Redis): events never leave the process that publishes them.
    "memory": "channels.layers.InMemoryChannelLayer",
}


def channel_layers(redis_url: str, kind: str = "pubsub", prefix: str = "asgi") -> dict[str, Any]:
    """CHANNEL_LAYERS for `kind` (AGENTWEB_CHANNEL_LAYER: pubsub, redis or memory).

    `prefix` names the layer's Redis channels and keys. Redis pub/sub channels are not
    scoped by a database number, so two installations sharing one Redis keep apart only by
    their prefixes."""
    if kind not in CHANNEL_LAYER_BACKENDS:
        choices = ", ".join(CHANNEL_LAYER_BACKENDS)
        raise ImproperlyConfigured(
            f"AGENTWEB_CHANNEL_LAYER is {kind!r}; it must be one of {choices}"
        )
    layer: dict[str, Any] = {"BACKEND": CHANNEL_LAYER_BACKENDS[kind]}
    if kind != "memory":
        layer["CONFIG"] = {"hosts": [channel_layer_host(redis_url)], "prefix": prefix}
    return {"default": layer}


CHANNEL_LAYERS = channel_layers(
    REDIS_URL,
    os.environ.get("AGENTWEB_CHANNEL_LAYER") or "pubsub",
    os.environ.get("AGENTWEB_CHANNEL_PREFIX") or "asgi",
)

# Commits made by agents carry this identity, never the server user's git config.
AGENTWEB_GIT_AUTHOR_NAME = os.environ.get("AGENTWEB_GIT_AUTHOR_NAME", "agentweb")
AGENTWEB_GIT_AUTHOR_EMAIL = os.environ.get("AGENTWEB_GIT_AUTHOR_EMAIL", "agentweb@localhost")

# create_pull_request on GitHub (or GitHub Enterprise with its API URL).
GITHUB_TOKEN = os.environ.get("GITHUB_TOKEN", "")
GITHUB_API_URL = os.environ.get("GITHUB_API_URL", "https://api.github.com")

# The agent runtime: model specs (`script:PATH`, `openai:MODEL`, `anthropic:MODEL`) by role.
AGENTWEB_MODEL_FAST = os.environ.get("AGENTWEB_MODEL_FAST", "")
AGENTWEB_MODEL_CODER = os.environ.get("AGENTWEB_MODEL_CODER", "")
AGENTWEB_MODEL_ARCHITECT = os.environ.get("AGENTWEB_MODEL_ARCHITECT", "")
# Provider endpoints and keys. Keys are read here only: never stored, logged or shown,
# and never passed to the commands agents run.
OPENAI_API_KEY = os.environ.get("OPENAI_API_KEY", "")
OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "")
ANTHROPIC_API_KEY = os.environ.get("ANTHROPIC_API_KEY", "")
ANTHROPIC_BASE_URL = os.environ.get("ANTHROPIC_BASE_URL", "")
AGENTWEB_MODEL_TIMEOUT = envint("AGENTWEB_MODEL_TIMEOUT", 300)
AGENTWEB_MODEL_RETRIES = envint("AGENTWEB_MODEL_RETRIES", 2)
# Limits: model turns per session and per sub-agent, tokens per session (0: none),
# how deep sub-agents may nest.
AGENTWEB_MAX_ITERATIONS = envint("AGENTWEB_MAX_ITERATIONS", 50)
AGENTWEB_SUBAGENT_MAX_ITERATIONS = envint("AGENTWEB_SUBAGENT_MAX_ITERATIONS", 30)
AGENTWEB_TOKEN_BUDGET = envint("AGENTWEB_TOKEN_BUDGET", 2_000_000)
AGENTWEB_MAX_SUBAGENT_DEPTH = envint("AGENTWEB_MAX_SUBAGENT_DEPTH", 2)
# Environment variables an http skill tool may send as a header value (comma-separated
# names); no other secret of this server is reachable from a skill.
AGENTWEB_SKILL_SECRETS = envlist("AGENTWEB_SKILL_SECRETS", "")
# MCP (/mcp and `mcp_stdio`): how long a tool call's answer waits for a decision or the
# end of a run before it says "awaiting approval (call N)": under the 60 s that the MCP
# TypeScript SDK waits for an answer by default.
AGENTWEB_MCP_WAIT_SECONDS = envint("AGENTWEB_MCP_WAIT_SECONDS", 50)
# A client that sent a progress token hears of the wait every 5 s and may wait this long.
AGENTWEB_MCP_PROGRESS_WAIT_SECONDS = envint("AGENTWEB_MCP_PROGRESS_WAIT_SECONDS", 900)
# Third-party MCP servers behind /mcp (docs/mcp.md): how long one may take to start and to
# answer a call, when an idle one is stopped, and the private hosts an http one may be at.
AGENTWEB_MCP_UPSTREAM_START_SECONDS = envint("AGENTWEB_MCP_UPSTREAM_START_SECONDS", 30)
AGENTWEB_MCP_UPSTREAM_CALL_SECONDS = envint("AGENTWEB_MCP_UPSTREAM_CALL_SECONDS", 120)
AGENTWEB_MCP_UPSTREAM_IDLE_SECONDS = envint("AGENTWEB_MCP_UPSTREAM_IDLE_SECONDS", 600)
AGENTWEB_MCP_UPSTREAM_ALLOW_HOSTS = envlist("AGENTWEB_MCP_UPSTREAM_ALLOW_HOSTS", "")
# `up` starts the scripted demo session on its first run (no API key needed).
AGENTWEB_DEMO = envbool("AGENTWEB_DEMO", True)

# The audit trail (/audit/, GET /api/audit): entries older than this many days are
# pruned by the periodic sweep; 0 keeps them all.
AGENTWEB_AUDIT_DAYS = envint("AGENTWEB_AUDIT_DAYS", 365)

# Notification channels (webhook, Slack, email; configured in the admin). A channel may
# only send to a host named here (comma-separated; `*.example.com` wildcards).
AGENTWEB_NOTIFY_HOSTS = envlist("AGENTWEB_NOTIFY_HOSTS", "hooks.slack.com,slack.com")
# A listed host's address is still checked and pinned: one that resolves to a private,
# loopback or link-local address is refused unless it is also named here (same syntax).
AGENTWEB_NOTIFY_PRIVATE_HOSTS = envlist("AGENTWEB_NOTIFY_PRIVATE_HOSTS", "")
# Email goes through Django's backend: SMTP at EMAIL_HOST:EMAIL_PORT.
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = envint("EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = envint("EMAIL_TIMEOUT", 10)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "agentweb@localhost")

# Operations: /healthz, /readyz and Prometheus /metrics (README, "Operations").
# /metrics answers on the site only with `Authorization: Bearer AGENTWEB_METRICS_TOKEN`;
# AGENTWEB_METRICS_ADDRESS (HOST:PORT) has each tool worker serve it there instead, off the
# site. Neither set: /metrics is off (404).
AGENTWEB_METRICS_TOKEN = os.environ.get("AGENTWEB_METRICS_TOKEN", "")
AGENTWEB_METRICS_ADDRESS = os.environ.get("AGENTWEB_METRICS_ADDRESS", "")
# Every process of this host counts into files here (prometheus-client's multiprocess
# mode), so one scrape sums the web's and the workers' counts; `up` empties it at start.
AGENTWEB_METRICS_DIR = Path(
    os.environ.get("PROMETHEUS_MULTIPROC_DIR") or AGENTWEB_VAR / "metrics"
).resolve()
AGENTWEB_METRICS_DIR.mkdir(parents=True, exist_ok=True)
os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(AGENTWEB_METRICS_DIR)  # read by the client

# Single sign-on with OpenID Connect (mozilla-django-oidc, tools_app/web/sso.py and
# sso_oidc.py): on only when a client and its provider are configured, by the issuer (its
# endpoints are read from its discovery document at the first sign-in) or by every
# endpoint (explicit ones win).
AGENTWEB_OIDC_ISSUER = os.environ.get("AGENTWEB_OIDC_ISSUER", "").strip()
_OIDC_ENDPOINT_SETTINGS = {
    "authorization_endpoint": "AGENTWEB_OIDC_AUTHORIZATION_ENDPOINT",
    "token_endpoint": "AGENTWEB_OIDC_TOKEN_ENDPOINT",
    "userinfo_endpoint": "AGENTWEB_OIDC_USERINFO_ENDPOINT",
    "jwks_uri": "AGENTWEB_OIDC_JWKS_URI",
    "end_session_endpoint": "AGENTWEB_OIDC_END_SESSION_ENDPOINT",  # optional: sign-out
}
AGENTWEB_OIDC_ENDPOINTS = {
    key: os.environ[name].strip()
    for key, name in _OIDC_ENDPOINT_SETTINGS.items()
    if os.environ.get(name, "").strip()
}
AGENTWEB_OIDC_CLIENT_ID = os.environ.get("AGENTWEB_OIDC_CLIENT_ID", "").strip()
AGENTWEB_OIDC_CLIENT_SECRET = os.environ.get("AGENTWEB_OIDC_CLIENT_SECRET", "").strip()
AGENTWEB_OIDC_SCOPES = os.environ.get("AGENTWEB_OIDC_SCOPES") or "openid email profile"
AGENTWEB_OIDC_USERNAME_CLAIM = (
    os.environ.get("AGENTWEB_OIDC_USERNAME_CLAIM") or "preferred_username"
)
AGENTWEB_OIDC_GROUPS_CLAIM = os.environ.get("AGENTWEB_OIDC_GROUPS_CLAIM") or "groups"
# Provider group (claim value) → agentweb group, as JSON or `value=group,value=group`;
# checked by `manage.py check` (tools_app/checks.py), parsed at sign-in (tools_app/core/sso.py).
AGENTWEB_OIDC_GROUP_MAP = os.environ.get("AGENTWEB_OIDC_GROUP_MAP", "")
AGENTWEB_OIDC_PROVIDER_NAME = os.environ.get("AGENTWEB_OIDC_PROVIDER_NAME") or "single sign-on"
AGENTWEB_OIDC_SIGN_ALGO = os.environ.get("AGENTWEB_OIDC_SIGN_ALGO") or "RS256"
_OIDC_REQUIRED_ENDPOINTS = _OIDC_ENDPOINT_SETTINGS.keys() - {"end_session_endpoint"}
AGENTWEB_SSO = bool(
    AGENTWEB_OIDC_CLIENT_ID
    and AGENTWEB_OIDC_CLIENT_SECRET
    and (AGENTWEB_OIDC_ISSUER or AGENTWEB_OIDC_ENDPOINTS.keys() >= _OIDC_REQUIRED_ENDPOINTS)
)
# Passwords on the login page; off, only superusers' still work, at /admin/login/ (the
# break-glass for when the provider is down or misconfigured).
AGENTWEB_PASSWORD_LOGIN = envbool("AGENTWEB_PASSWORD_LOGIN", True)
# Failed passwords one account may have from one address (four times as many over all
# accounts from one address) before password sign-in from there shuts for the window.
AGENTWEB_SIGN_IN_ATTEMPTS = max(1, envint("AGENTWEB_SIGN_IN_ATTEMPTS", 5))
AGENTWEB_SIGN_IN_LOCK_MINUTES = max(1, envint("AGENTWEB_SIGN_IN_LOCK_MINUTES", 15))
# The proxies whose X-Forwarded-For names the client (`core/addresses.py`): by default the
# ones on this host, as deploy/'s nginx or Caddy.
try:
    AGENTWEB_TRUSTED_PROXIES = trusted_networks(
        envlist("AGENTWEB_TRUSTED_PROXIES", "127.0.0.0/8,::1")
    )
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from exc
AUTHENTICATION_BACKENDS = ["tools_app.web.sso.PasswordBackend"]
if AGENTWEB_SSO:
    AUTHENTICATION_BACKENDS.append("tools_app.web.sso_oidc.OidcBackend")
    # Signed out here: the login page offers the provider's own sign-out too.
    LOGOUT_REDIRECT_URL = "/login/?signed-out"
# mozilla-django-oidc's own settings, from the ones above.
OIDC_RP_CLIENT_ID = AGENTWEB_OIDC_CLIENT_ID
OIDC_RP_CLIENT_SECRET = AGENTWEB_OIDC_CLIENT_SECRET
OIDC_RP_SCOPES = AGENTWEB_OIDC_SCOPES
OIDC_RP_SIGN_ALGO = AGENTWEB_OIDC_SIGN_ALGO
OIDC_USE_PKCE = True  # authorization code flow with PKCE (S256), and a nonce
OIDC_USE_NONCE = True
OIDC_TIMEOUT = 10  # seconds for each request to the provider
