"""`vdgr serve` argument handling: KEYS.yaml validation and the application it builds."""
from __future__ import annotations

import pytest

from runners.cli import make_parser
from runners.serve.auth import load_keys
from runners.serve_cli import build_app, run
from schemas.errors import ConfigError
from tests.support.live_server import write_keys


def _args(*argv):
    args, extra = make_parser().parse_known_args(["serve", *argv])
    assert not extra
    return args


def test_build_app_from_the_command_line(served_index, tmp_path):
    keys = write_keys(str(tmp_path / "keys.yaml"))
    app = build_app(_args("--index", served_index, "--api-keys", keys, "--embedding", "hashing",
                          "--embedding-dim", "64", "--rate-limit", "10/second"))
    paths = {r.path for r in app.routes}
    assert {"/", "/healthz", "/metrics", "/v1/query", "/v1/chat/completions", "/v1/models",
            "/v1/domains"} <= paths
    assert app.state.service.holder.current().build_id


@pytest.mark.parametrize("text, needle", [
    ("keys: [{key: short, name: a, groups: []}]", "keys.0.key"),
    ("keys: [{key: aaaaaaaaaaaaaaaaaaaa, name: a, groups: ['bad group']}]", "invalid access group"),
    ("keys: [{key: aaaaaaaaaaaaaaaaaaaa, name: a}, {key: aaaaaaaaaaaaaaaaaaaa, name: b}]", "unique"),
    ("keys: [{key: aaaaaaaaaaaaaaaaaaaa, name: a, rate_limit: lots}]", "rate limit"),
    ("keys: [oops", "not YAML"),
])
def test_invalid_keys_file_is_a_clear_config_error(tmp_path, text, needle):
    path = tmp_path / "keys.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=needle) as err:
        load_keys(str(path))
    assert "aaaaaaaaaaaaaaaaaaaa" not in str(err.value)          # never echoes a key


def test_serve_reports_a_bad_keys_file_and_exits_2(served_index, tmp_path, capsys):
    path = tmp_path / "keys.yaml"
    path.write_text("keys: [{key: short, name: a}]")
    assert run(_args("--index", served_index, "--api-keys", str(path), "--embedding", "hashing",
                     "--embedding-dim", "64")) == 2
    assert "keys file" in capsys.readouterr().err


def test_the_example_keys_file_of_the_readme_loads():
    import os

    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "keys.yaml")
    keys = load_keys(path)
    assert {k.name: k.groups for k in keys.keys} == {"demo-staff": ("staff",),
                                                     "demo-netops": ("staff", "netops")}
