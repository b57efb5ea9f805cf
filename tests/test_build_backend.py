"""build_backend/vcpusim_build.py: when `pip install .` applies the committed PGO profile, the
flags and environment it builds with, the hooks' wiring, the committed profile itself, and that
the installed extension reports what the backend decided."""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path

import pytest

from vcpusim import _core

from conftest import COMMIT, rustc_vv  # and the fixture pgo_project, a checkout in miniature
from conftest import vcpusim_build as vb

ROOT = Path(__file__).resolve().parents[1]

def test_the_profile_applies_with_its_own_rustc_on_its_own_sources(pgo_project):
    d = vb.decide({}, rustc_vv(), pgo_project)
    assert d.apply
    assert d.flags == [f"-Cprofile-use={(pgo_project / vb.PROFILE).resolve()}"]
    assert "taken on these sources" in d.note and vb.source_digest(pgo_project)[:12] in d.note and d.sources_match
    assert vb.decide({vb.SWITCH: "require"}, rustc_vv(), pgo_project).apply


def test_changed_sources_still_apply_it_and_say_so(pgo_project):
    (pgo_project / "crates" / "engine" / "src" / "lib.rs").write_text("pub fn run() { let _ = 1; }\n")
    d = vb.decide({}, rustc_vv(), pgo_project)
    assert d.apply and "taken on other sources: any function changed since is built without it" in d.note
    assert not d.sources_match


def test_the_digest_covers_the_compiled_sources_only(pgo_project):
    before = vb.source_digest(pgo_project)
    (pgo_project / "crates" / "engine" / "tests" / "t.rs").write_text("// not in the extension\n")
    (pgo_project / "README.md").write_text("words\n")
    assert vb.source_digest(pgo_project) == before
    for changed in ("Cargo.lock", "crates/engine/Cargo.toml", "crates/engine/src/lib.rs"):
        path = pgo_project / changed
        text = path.read_text()
        path.write_text(text + "\n")
        assert vb.source_digest(pgo_project) != before, changed
        path.write_text(text)
    # A file renamed with the same bytes is another source tree.
    (pgo_project / "crates/engine/src/lib.rs").rename(pgo_project / "crates/engine/src/main.rs")
    assert vb.source_digest(pgo_project) != before


def test_another_rustc_builds_without_it_and_names_both(pgo_project):
    d = vb.decide({}, rustc_vv(commit="0" * 40, release="1.96.0", llvm="23.0.0"), pgo_project)
    assert not d.apply and d.flags == []
    assert "made by rustc 1.95.0 (59807616e, LLVM 22.1.2), this is rustc 1.96.0 (000000000, LLVM 23.0.0)" in d.note
    with pytest.raises(vb.BuildError, match="VCPUSIM_PGO=require, but the profile cannot be applied: the profile was made by"):
        vb.decide({vb.SWITCH: "require"}, rustc_vv(commit="0" * 40), pgo_project)
    assert not vb.decide({}, None, pgo_project).apply


def test_the_switch(pgo_project):
    off = vb.decide({vb.SWITCH: "OFF"}, rustc_vv(), pgo_project)
    assert not off.apply and off.note == "built without the PGO profile: VCPUSIM_PGO=off"
    assert vb.decide({vb.SWITCH: ""}, rustc_vv(), pgo_project).apply  # empty: the default, auto
    with pytest.raises(vb.BuildError, match=r"VCPUSIM_PGO='yes': expected one of auto, off, require"):
        vb.decide({vb.SWITCH: "yes"}, rustc_vv(), pgo_project)


def test_no_profile_builds_without_it(pgo_project):
    (pgo_project / vb.PROFILE).unlink()
    d = vb.decide({}, rustc_vv(), pgo_project)
    assert not d.apply and "no profile" in d.note
    with pytest.raises(vb.BuildError, match="no profile"):
        vb.decide({vb.SWITCH: "require"}, rustc_vv(), pgo_project)


@pytest.mark.parametrize("text, message", [
    ("{not json", r"profile.json: not JSON"),
    ("[1, 2]", r"profile.json: expected a JSON object with keys rustc_release, rustc_commit, llvm, sources, training"),
    (json.dumps({"rustc_release": "1.95.0", "rustc_commit": COMMIT, "llvm": "22.1.2", "sources": "ab"}),
     r"profile.json: key 'training' = None: expected a list of paths"),
    (json.dumps({"rustc_release": "1.95.0", "rustc_commit": 7, "llvm": "22", "sources": "ab", "training": []}),
     r"profile.json: key 'rustc_commit' = 7: expected a string"),
])
def test_a_bad_profile_json_is_named_with_its_key(pgo_project, text, message):
    (pgo_project / vb.META).write_text(text)
    with pytest.raises(vb.BuildError, match=message):
        vb.decide({}, rustc_vv(), pgo_project)


def test_the_build_environment_keeps_the_callers_flags_first(pgo_project):
    d = vb.decide({}, rustc_vv(), pgo_project)
    env = vb.build_env(d, {"RUSTFLAGS": " -Ctarget-cpu=native  -g", "PATH": "/bin"}, pgo_project)
    assert env["CARGO_ENCODED_RUSTFLAGS"].split("\x1f") == ["-Ctarget-cpu=native", "-g", *d.flags]
    assert "RUSTFLAGS" not in env and env["PATH"] == "/bin"
    assert env["CARGO_TARGET_DIR"] == str(pgo_project / "target" / "pgo-use")
    assert env[vb.BUILD_PGO_VAR] == "on" and env[vb.BUILD_NOTE_VAR] == d.note
    encoded = vb.build_env(d, {"CARGO_ENCODED_RUSTFLAGS": "-C\x1fopt-level=3", "RUSTFLAGS": "-g",
                               "CARGO_TARGET_DIR": "/mine"}, pgo_project)
    assert encoded["CARGO_ENCODED_RUSTFLAGS"].split("\x1f") == ["-C", "opt-level=3", *d.flags]
    assert encoded["CARGO_TARGET_DIR"] == "/mine"
    # Without the profile the caller's build is untouched, and the engine is told why.
    off = vb.decide({vb.SWITCH: "off"}, rustc_vv(), pgo_project)
    plain = vb.build_env(off, {"RUSTFLAGS": "-g"}, pgo_project)
    assert plain["RUSTFLAGS"] == "-g" and "CARGO_ENCODED_RUSTFLAGS" not in plain and "CARGO_TARGET_DIR" not in plain
    assert plain[vb.BUILD_PGO_VAR] == "off" and plain[vb.BUILD_NOTE_VAR] == off.note


class FakeMaturin:
    """Stands in for maturin's backend: records the environment each hook ran in."""

    def __init__(self):
        self.seen = {}

    def build_wheel(self, wheel_directory, config_settings=None, metadata_directory=None):
        self.seen["build_wheel"] = (wheel_directory, config_settings, metadata_directory, dict(os.environ))
        return "vcpusim-0-cp39-abi3-linux_x86_64.whl"

    def build_editable(self, wheel_directory, config_settings=None, metadata_directory=None):
        self.seen["build_editable"] = (wheel_directory, config_settings, metadata_directory, dict(os.environ))
        return "editable.whl"

    def get_requires_for_build_wheel(self, config_settings=None):
        return ["maturin>=1.16"]


def test_the_hooks_build_in_the_decisions_environment_and_restore_the_callers(monkeypatch, capsys):
    fake = FakeMaturin()
    monkeypatch.setattr(vb, "_maturin", lambda: fake)
    monkeypatch.setenv("RUSTFLAGS", "-g")
    monkeypatch.delenv("CARGO_TARGET_DIR", raising=False)
    monkeypatch.setattr(vb, "rustc_version", lambda env: rustc_vv(commit="f" * 40))
    assert vb.build_wheel("dist", {"k": "v"}, "meta") == "vcpusim-0-cp39-abi3-linux_x86_64.whl"
    wheel_dir, settings, meta_dir, env = fake.seen["build_wheel"]
    assert (wheel_dir, settings, meta_dir) == ("dist", {"k": "v"}, "meta")
    # Another rustc: no profile, the caller's flags as they were, the reason recorded and printed.
    assert env[vb.BUILD_PGO_VAR] == "off" and "this is rustc 1.95.0 (fffffffff" in env[vb.BUILD_NOTE_VAR]
    assert env["RUSTFLAGS"] == "-g"
    assert "vcpusim build: built without the PGO profile" in capsys.readouterr().err
    assert vb.BUILD_PGO_VAR not in os.environ and os.environ["RUSTFLAGS"] == "-g"
    assert vb.get_requires_for_build_wheel() == ["maturin>=1.16"]

    monkeypatch.setenv(vb.SWITCH, "maybe")
    with pytest.raises(SystemExit) as e:
        vb.build_editable("dist")
    assert e.value.code == 1 and "build_editable" not in fake.seen
    assert "vcpusim build: VCPUSIM_PGO='maybe': expected one of auto, off, require" in capsys.readouterr().err


def test_pyproject_builds_through_the_backend():
    system = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]
    assert system["build-backend"] == "vcpusim_build" and system["backend-path"] == ["build_backend"]
    assert any(r.startswith("maturin") for r in system["requires"])
    names = {"build_wheel", "build_sdist", "build_editable", "get_requires_for_build_wheel",
             "get_requires_for_build_sdist", "get_requires_for_build_editable",
             "prepare_metadata_for_build_wheel", "prepare_metadata_for_build_editable"}
    assert all(callable(getattr(vb, n)) for n in names)


def test_the_committed_profile_is_whole():
    meta = vb.read_meta()
    # llvm-profdata's indexed format starts with this magic number (llvm/ProfileData/InstrProf.h).
    assert (ROOT / vb.PROFILE).read_bytes()[:8] == b"\xfflprofi\x81"
    assert len(meta["rustc_commit"]) == 40 and len(meta["sources"]) == 64
    sys.path.insert(0, str(ROOT / "scripts"))
    import pgo_profile

    assert meta["training"] == [p.relative_to(ROOT).as_posix() for p in pgo_profile.training_scenarios()]


def test_the_installed_extension_reports_what_the_backend_decides():
    # The README's test command installs with `pip install .`, which goes through the backend: the
    # extension must say what the backend decides for this checkout and this rustc now.
    info = _core.build_info()
    assert info["profile"] == "release"
    assert info["pgo_note"] != "", info
    want = vb.decide(os.environ, vb.rustc_version(os.environ))
    assert (info["pgo"], info["pgo_note"]) == (want.apply, want.note), (
        "the installed vcpusim was not built by `pip install .` from this checkout as it is now "
        f"(it says: {info['pgo_note']!r}); install it again with `pip install .`"
    )
