"""ASGI entry point for daphne: pages, admin, API, MCP, static files and websockets on one port."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import django
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentweb.settings")
django.setup(set_prefix=False)  # as get_asgi_application does, before anything imports models

from tools_app.web.site_handler import SiteHandler  # noqa: E402

django_application = SiteHandler()  # the site's chain on one thread, in one hop

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import OriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from tools_app.api.hook_handler import WithHooks  # noqa: E402
from tools_app.api.mcp_http import WithMcp  # noqa: E402
from tools_app.live.routing import websocket_urlpatterns  # noqa: E402
from tools_app.ops.daphne_requests import skip_twisted_form_parse  # noqa: E402


def _serves_static_from_apps() -> bool:
    """Until `collectstatic` has filled STATIC_ROOT (a fresh checkout, `make run`), the app
    serves /static/ straight from the source folders, so `up` needs no other step; once it
    has, WhiteNoise serves the collected, compressed copies with caching headers. After an
    upgrade, run `collectstatic` again."""
    collected = Path(settings.STATIC_ROOT) / "agentweb" / "app.css"
    return settings.DEBUG or not collected.exists()


http_application = (
    ASGIStaticFilesHandler(django_application) if _serves_static_from_apps() else django_application
)

application = ProtocolTypeRouter(
    {
        "http": WithHooks(WithMcp(http_application)),
        # Exactly the origin of AGENTWEB_BASE_URL, plus the extras (agentweb/site_names.py).
        "websocket": OriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns)),
            settings.AGENTWEB_WEBSOCKET_ORIGINS,
        ),
    }
)


skip_twisted_form_parse()  # Django alone reads a POST's body


def _settle() -> None:
    """What startup made lives as long as the process: out of the garbage collector's
    full passes, which otherwise walk all of it (120-190 ms each in daphne, every few
    seconds under load, and then the p99 of 50 agents' hooks; 6 ms at most after this,
    BENCHMARKS.md §16). The views are imported first, as the first request would."""
    get_resolver().url_patterns  # noqa: B018 - the views' imports, done now
    gc.collect()
    gc.freeze()


_settle()
