"""Hosts in the policy, judged without Django: a command's class names its hosts, a rule
adds or removes some, a remembered rule never gives more than it was approved with,
nothing ever gets the whole network, and a host pattern that is too wide, an address or
this machine is refused with a reason."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tools_app.core import outcomes
from tools_app.core.egress.classes import class_hosts, command_hosts_table, url_host
from tools_app.core.egress.grant import Connection
from tools_app.core.egress.patterns import covers, host_pattern_problem, matches, overlaps
from tools_app.core.policy.defaults import DEFAULT_POLICY
from tools_app.core.policy.engine import evaluate
from tools_app.core.policy.loader import PolicyInvalid, policy_from_dict, policy_to_dict
from tools_app.core.policy.types import CallFacts, HostChange, PolicySpec, Rule, SessionCounters
from tools_app.core.shell.commands import analyse_command

DEFAULT = policy_from_dict(DEFAULT_POLICY)
NETWORKED = replace(DEFAULT, command_network=True)
PYPI = ["pypi.org", "files.pythonhosted.org"]


def hosts(command: str, policy: PolicySpec = NETWORKED, workspace: Path = Path("/nowhere")):
    verdict = evaluate(
        policy, CallFacts("run_command", {"command": command}, workspace), SessionCounters()
    )
    return None if verdict.egress is None else list(verdict.egress.hosts)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("npm install lodash", ["registry.npmjs.org"]),
        ("yarn", ["registry.npmjs.org"]),
        ("pnpm add left-pad", ["registry.npmjs.org"]),
        ("pip install requests", PYPI),
        ("python3 -m pip install requests", PYPI),
        ("uv pip install requests", PYPI),
        ("cargo build", ["crates.io", "static.crates.io", "index.crates.io"]),
        ("go mod download", ["proxy.golang.org", "sum.golang.org"]),
        ("git clone https://github.com/team/app.git", ["github.com"]),
        ("git -C sub ls-remote git@gitlab.com:team/app.git", ["gitlab.com"]),
        ("git fetch", ["github.com", "gitlab.com"]),  # no remote known: the policy's list
        ("cd web && npm ci", ["registry.npmjs.org"]),
        ("npm ci && pip install x", ["registry.npmjs.org", *PYPI]),
    ],
)
def test_a_command_gets_the_hosts_of_its_class(command: str, expected: list[str]) -> None:
    assert hosts(command) == expected


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "curl https://example.com",
        "node build.js && npm install",  # an unknown part would share the grant
        "npm install $(cat pkgs)",  # opaque
        "npm run build",
        "pip list",
    ],
)
def test_a_command_of_no_known_class_gets_no_network(command: str) -> None:
    assert hosts(command) is None


def test_git_reads_the_remote_host_from_the_workspace_config(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text(
        '[core]\n\tbare = false\n[remote "origin"]\n\turl = https://git.corp.example/a.git\n'
        '[remote "fork"]\n\turl = ssh://git@fork.example.com/a.git\n'
    )
    assert hosts("git fetch", workspace=tmp_path) == ["git.corp.example"]
    assert hosts("git pull fork main", workspace=tmp_path) == ["fork.example.com"]
    assert hosts("git fetch ../local-copy", workspace=tmp_path) == ["github.com", "gitlab.com"]
    typed = "git clone https://git.corp.example/other.git"  # a host of its own remotes
    assert hosts(typed, workspace=tmp_path) == ["git.corp.example"]


def test_a_url_the_agent_typed_gets_its_host_only_when_the_policy_names_it() -> None:
    """An agent's own URL is not a grant: the policy's git list stays, and the proxy
    refuses the typed host and says how to allow it."""
    assert hosts("git clone https://attacker.example/x.git") == ["github.com", "gitlab.com"]
    corp = replace(NETWORKED, command_hosts=("git *.corp.example",))
    assert hosts("git clone https://git.corp.example/x.git", policy=corp) == ["git.corp.example"]


def test_a_local_or_address_remote_never_becomes_a_host() -> None:
    assert url_host("https://127.0.0.1/x.git") == "127.0.0.1"
    assert hosts("git clone https://127.0.0.1/x.git") == ["github.com", "gitlab.com"]
    assert hosts("git clone http://localhost:3000/x.git") == ["github.com", "gitlab.com"]


def test_command_network_off_gives_an_allowed_command_no_hosts_but_an_approval_opens_them() -> None:
    assert hosts("git fetch", policy=DEFAULT) is None  # allowed, no person, no rule
    verdict = evaluate(
        DEFAULT,
        CallFacts("run_command", {"command": "npm install x"}, Path("/w")),
        SessionCounters(),
    )
    assert verdict.kind == "require_approval"
    assert verdict.egress is not None and verdict.egress.hosts == ("registry.npmjs.org",)
    assert verdict.as_dict()["hosts"] == ["registry.npmjs.org"]


def test_a_rule_that_allows_a_command_gives_it_its_hosts_changed_as_the_rule_says() -> None:
    change = HostChange(add=("npm.corp.example",), remove=("registry.npmjs.org",))
    policy = replace(
        DEFAULT, rules=(Rule("1", "run_command", {"command": "npm *"}, "allow", hosts=change),)
    )
    assert hosts("npm install x", policy=policy) == ["npm.corp.example"]
    plain = replace(DEFAULT, rules=(Rule("1", "run_command", {"command": "npm *"}, "allow"),))
    assert hosts("npm install x", policy=plain) == ["registry.npmjs.org"]


def test_a_deny_has_no_hosts() -> None:
    policy = replace(NETWORKED, rules=(Rule("1", "run_command", {"command": "npm *"}, "deny"),))
    assert hosts("npm install x", policy=policy) is None


def test_a_remembered_grant_never_widens() -> None:
    only = HostChange(only=("registry.npmjs.org",))
    assert only.apply(("registry.npmjs.org", "npm.corp.example")) == ("registry.npmjs.org",)
    assert only.apply(("pypi.org", "files.pythonhosted.org")) == ()
    assert HostChange(add=("x.example.com",), only=()).apply(("registry.npmjs.org",)) == ()
    wider_class = replace(
        DEFAULT,
        command_hosts=("npm *.npmjs.org registry.npmjs.org",),
        rules=(Rule("7", "run_command", {"command": "*"}, "allow", remembered_by="3", hosts=only),),
    )
    assert hosts("npm install y", policy=wider_class) == ["registry.npmjs.org"]
    assert hosts("pip install y", policy=wider_class) is None
    assert hosts("curl https://registry.npmjs.org/x", policy=wider_class) is None


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        ("*", "matches every host"),
        ("*.*", "matches every host"),
        ("*.com", "every host under .com"),
        ("*.co.uk", "every host under .co.uk"),
        ("10.0.0.1", "is an IP address"),
        ("10.*", "is an IP address"),
        ("2001:db8::1", "is an IP address"),
        ("127.0.0.1", "loopback or link-local"),
        ("169.254.169.254", "loopback or link-local"),
        ("::1", "loopback or link-local"),
        ("[::1]:443", "loopback or link-local"),
        ("localhost", "loopback name"),
        ("api.localhost", "loopback name"),
        ("*.localhost", "loopback name"),
        ("https://pypi.org/simple", "not a host name"),
        ("pypi.org:0", "port"),
        ("reg*.npmjs.org", "only the first label"),
        ("intranet", "fully qualified"),
    ],
)
def test_a_host_pattern_too_wide_or_local_is_refused_with_a_reason(
    pattern: str, words: str
) -> None:
    problem = host_pattern_problem(pattern)
    assert problem is not None and words in problem


@pytest.mark.parametrize(
    "pattern", ["registry.npmjs.org", "*.pythonhosted.org", "git.example.com:8443"]
)
def test_a_named_host_or_one_domains_subdomains_is_fine(pattern: str) -> None:
    assert host_pattern_problem(pattern) is None


def test_matching_names_ports_and_subdomains() -> None:
    assert matches("files.pythonhosted.org", "*.pythonhosted.org", 443)
    assert not matches("pythonhosted.org", "*.pythonhosted.org")
    assert not matches("registry.npmjs.org", "registry.npmjs.org", 22)
    assert matches("git.example.com", "git.example.com:8443", 8443)
    assert covers(["*.example.com"], "npm.example.com")
    assert covers(["*.example.com"], "*.pkgs.example.com")
    assert not covers(["npm.example.com"], "*.example.com")
    assert overlaps(["npm.example.com"], "*.example.com")
    assert overlaps(["npm.example.com:8443"], "npm.example.com")
    assert not overlaps(["registry.npmjs.org"], "*.example.com")


def test_the_policy_file_checks_every_host_and_reads_back_equal() -> None:
    bad = DEFAULT_POLICY | {
        "command_hosts": ["npm registry.npmjs.org", "ruby rubygems.org", "pip *"],
        "rules": [
            {
                "tool": "run_command",
                "args": {},
                "decision": "allow",
                "hosts": {"add": ["127.0.0.1"], "keep": []},
            }
        ],
    }
    with pytest.raises(PolicyInvalid) as caught:
        policy_from_dict(bad)
    fields = {problem.field for problem in caught.value.problems}
    assert fields == {
        "command_hosts[1]",
        "command_hosts[2]",
        "rules[0].hosts.add[0]",
        "rules[0].hosts.keep",
    }
    good = DEFAULT_POLICY | {
        "rules": [
            {
                "tool": "run_command",
                "args": {},
                "decision": "allow",
                "hosts": {"add": ["npm.corp.example"], "remove": [], "only": ["npm.corp.example"]},
            }
        ],
    }
    spec = policy_from_dict(good)
    assert spec.rules[0].hosts == HostChange(("npm.corp.example",), (), ("npm.corp.example",))
    assert policy_from_dict(policy_to_dict(spec)) == spec


def test_the_class_table_unions_a_class_named_twice() -> None:
    table = command_hosts_table(["npm registry.npmjs.org", "npm npm.corp.example"])
    assert table == {"npm": ("registry.npmjs.org", "npm.corp.example")}
    assert class_hosts(analyse_command("npm ci").commands, table, Path("/w")) == table["npm"]


def test_a_refused_connection_never_reads_as_a_plain_success() -> None:
    connections = (
        Connection("registry.npmjs.org", 443, 900, 120_000, True),
        Connection("evil.example", 443, 0, 0, False, "not in this command's hosts"),
    )
    outcome = outcomes.command_outcome(
        outcomes.NOTHING, unsandboxed=False, granted=True, output="ok", connections=connections
    )
    assert outcome is not None and outcome.network == "refused"
    assert outcome.connections == connections
    assert "the proxy refused evil.example:443" in outcome.detail
    assert "command_hosts" in outcome.detail
    assert outcomes.badge("succeeded", outcome.detail) != "succeeded"
    fine = outcomes.command_outcome(
        outcomes.NOTHING, unsandboxed=False, granted=True, output="ok", connections=connections[:1]
    )
    assert fine is not None and fine.network == "granted" and fine.connections == connections[:1]
