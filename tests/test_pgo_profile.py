"""scripts/pgo_profile.py: the parts that decide without building (which llvm-profdata, what it
trains on, how the training loads the extension, what profile.json says). The whole script builds
an instrumented wheel (minutes) and needs rustup's llvm-tools, so it is run by hand when the
profile is taken again (docs/speed.md), not here; tests/test_build_backend.py checks the profile
it committed."""

import stat
import sys
from pathlib import Path

import pytest
from conftest import COMMIT, rustc_vv

from vcpusim import _core

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import pgo_profile  # noqa: E402
import vcpusim_build  # noqa: E402  (on sys.path through pgo_profile)


def test_llvm_major_reads_rustc_and_llvm_tools_output():
    assert pgo_profile.llvm_major("rustc 1.95.0\nhost: x86_64-unknown-linux-gnu\nLLVM version: 20.1.8\n") == 20
    assert pgo_profile.llvm_major("Ubuntu LLVM version 14.0.0\n  Optimized build.\n") == 14
    assert pgo_profile.llvm_major("rustc 1.95.0\n") is None


def test_a_missing_llvm_profdata_is_named():
    with pytest.raises(pgo_profile.PgoError, match=r"LLVM_PROFDATA=/no/such/llvm-profdata: no such file"):
        pgo_profile.find_profdata(rustc_vv(), {"LLVM_PROFDATA": "/no/such/llvm-profdata"})


def _fake_profdata(folder: Path, script: str) -> dict[str, str]:
    """An llvm-profdata stand-in running ``script`` (sh), as the environment naming it."""
    fake = folder / "llvm-profdata"
    fake.write_text("#!/bin/sh\n" + script)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return {"LLVM_PROFDATA": str(fake)}


@pytest.mark.parametrize("script, message", [
    ("echo 'LLVM version 3.0.0'\n", r"is LLVM 3, rustc is LLVM \d+"),
    # LLVM 14's llvm-profdata (Ubuntu's) answers --version with "Unknown command!" and exit 1.
    ("echo 'llvm-profdata: Unknown command!'\nexit 1\n", r"does not say its LLVM version .*`rustup component add llvm-tools`"),
])
def test_an_llvm_profdata_of_another_llvm_is_refused(tmp_path, script, message):
    with pytest.raises(pgo_profile.PgoError, match=message):
        pgo_profile.find_profdata(rustc_vv(), _fake_profdata(tmp_path, script))


def test_one_of_rustcs_llvm_is_taken(tmp_path):
    major = pgo_profile.llvm_major(rustc_vv(llvm="22.1.2"))
    assert major == 22
    env = _fake_profdata(tmp_path, f"echo 'LLVM (http://llvm.org/):\n  LLVM version {major}.1.0'\n")
    assert pgo_profile.find_profdata(rustc_vv(llvm="22.1.2"), env) == Path(env["LLVM_PROFDATA"])


def test_training_covers_every_golden_case_and_example():
    files = pgo_profile.training_scenarios()
    assert files == sorted(files)
    golden = sorted((ROOT / "crates/vcpusim/tests/golden/cases").glob("*.toml"))
    examples = sorted((ROOT / "scenarios/examples").glob("*.toml"))
    assert golden and examples
    assert set(golden) <= set(files) and set(examples) <= set(files)


def test_training_loads_the_extension_by_its_file(tmp_path):
    # The installed extension stands in for the instrumented one: the loader must find and run it
    # from its file alone (the wheel is unpacked, not installed), skipping what is no scenario.
    extension = Path(_core.__file__)
    scenario = ROOT / "scenarios/examples/cpu-stacking.toml"
    not_a_scenario = tmp_path / "not-a-scenario.toml"
    not_a_scenario.write_text("[host]\npcpus = 0\n")
    assert pgo_profile.train(extension, [scenario, not_a_scenario, scenario], tmp_path / "raw") == 2
    with pytest.raises(pgo_profile.PgoError, match="training failed"):
        pgo_profile.train(extension, [not_a_scenario], tmp_path / "raw")


def test_the_instrumented_build_keeps_the_callers_flags_and_skips_the_committed_profile(tmp_path):
    flag = "-Cprofile-generate=/a folder/raw"
    env = pgo_profile.build_env(flag, tmp_path / "t", {"RUSTFLAGS": " -Ctarget-cpu=native  -g", "PATH": "/bin"})
    assert env["CARGO_ENCODED_RUSTFLAGS"].split("\x1f") == ["-Ctarget-cpu=native", "-g", flag]
    assert "RUSTFLAGS" not in env and env["PATH"] == "/bin" and env["CARGO_TARGET_DIR"] == str(tmp_path / "t")
    # An instrumented build cannot also use a profile: the backend is told to leave it out.
    assert env[vcpusim_build.SWITCH] == "off"
    assert vcpusim_build.decide(env, "rustc 1.0.0\n").apply is False




def test_profile_json_describes_the_rustc_the_sources_and_the_training(tmp_path):
    meta = pgo_profile.describe(rustc_vv(), pgo_profile.training_scenarios())
    assert meta["rustc_release"] == "1.95.0" and meta["rustc_commit"] == COMMIT and meta["llvm"] == "22.1.2"
    assert meta["sources"] == vcpusim_build.source_digest()
    assert "scenarios/quickstart.toml" in meta["training"] and all(not p.startswith("/") for p in meta["training"])
    with pytest.raises(pgo_profile.PgoError, match="does not say its commit, llvm"):
        pgo_profile.describe("rustc 1.95.0\nrelease: 1.95.0\n", [])


def test_check_says_whether_the_committed_profile_applies_and_is_current(pgo_project, monkeypatch, capsys):
    monkeypatch.setattr(vcpusim_build, "rustc_version", lambda env: rustc_vv())
    # The switch is ignored: --check speaks of the committed profile, not of this shell's build.
    assert pgo_profile.check({vcpusim_build.SWITCH: "off"}, pgo_project) == 0
    assert "taken on these sources" in capsys.readouterr().out
    (pgo_project / "crates" / "engine" / "src" / "lib.rs").write_text("pub fn run() { loop {} }\n")
    assert pgo_profile.check({}, pgo_project) == 1
    out = capsys.readouterr()
    assert "taken on other sources" in out.out and "take it again: python scripts/pgo_profile.py" in out.err
    monkeypatch.setattr(vcpusim_build, "rustc_version", lambda env: rustc_vv(commit="1" * 40))
    assert pgo_profile.check({}, pgo_project) == 1
    assert "built without the PGO profile: the profile was made by" in capsys.readouterr().out
    (pgo_project / vcpusim_build.META).write_text("[]")
    assert pgo_profile.check({}, pgo_project) == 1
    assert "profile.json: expected a JSON object" in capsys.readouterr().err


def test_unknown_options_are_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        pgo_profile.main(["--extras", "test"])
    assert e.value.code == 2
    assert "unrecognized arguments: --extras test" in capsys.readouterr().err
