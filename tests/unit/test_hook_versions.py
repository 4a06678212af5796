"""agentweb-hook and the versions a server states (`X-Agentweb-Hook-*` on every answer):
older than the minimum blocks, older than the one served is a note on stderr, and a
server that states none (one from before versions) is taken as it is."""

from __future__ import annotations

import pytest

from agentweb_hook import HookFailure, _versions, older

URL = "http://agentweb.test"
DOWNLOAD = f"{URL}/api/hooks/agentweb-hook.py"


@pytest.fixture(autouse=True)
def hook_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTWEB_URL", URL)


def served(version: str, minimum: str) -> dict[str, str]:
    return {"X-Agentweb-Hook-Version": version, "X-Agentweb-Hook-Minimum": minimum}


def test_versions_compare_as_numbers() -> None:
    assert older("1.9", "1.10") and older("1", "1.0.1") and not older("2.0", "1.10")
    assert not older("1.0", "1.0") and older("x", "1")


def test_an_outdated_hook_says_so_on_stderr_and_goes_on(capsys: pytest.CaptureFixture[str]) -> None:
    assert _versions(served("1.3", "1.0"), mine="1.2") != ""
    assert capsys.readouterr().err == (
        f"agentweb-hook: agentweb-hook 1.2 is outdated: 1.3 is at {DOWNLOAD}\n"
    )


def test_a_hook_below_the_minimum_is_blocked() -> None:
    with pytest.raises(HookFailure, match=r"1\.2 is older than 1\.3, the oldest this server"):
        _versions(served("1.4", "1.3"), mine="1.2")


def test_a_current_hook_or_a_silent_server_says_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert _versions(served("1.2", "1.0"), mine="1.2") == ""
    assert _versions({}, mine="1.2") == ""
    assert capsys.readouterr().err == ""
