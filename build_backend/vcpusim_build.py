"""vcpusim's build backend: maturin's, with the committed profile of the engine at work applied.

``pyproject.toml`` names this module as its PEP 517 backend (``backend-path``), so ``pip install .``
comes here. Every hook is maturin's; the wheel and editable builds first decide whether to
apply the profile-guided-optimization (PGO) profile committed under ``pgo/``:

    pgo/vcpusim.profdata   the merged profile (llvm-profdata's indexed format)
    pgo/profile.json       what made it: rustc (release, commit, LLVM), the digest of the Rust
                           sources it was taken on, the training scenarios

The profile is applied (``-Cprofile-use``) when this machine's ``rustc`` is the one that made it
(same commit hash: an indexed profile is read only by its own LLVM, and the function hashes
it is keyed by are rustc's). Otherwise the build goes on without it and says why. The switch
``VCPUSIM_PGO`` (environment) takes ``auto`` (the default: apply when usable), ``off`` (never) or
``require`` (apply, or fail with the reason).

A profile taken on older sources still applies, function by function: LLVM drops the counts of
each function whose control flow changed since (with a "hash mismatch" warning in the build log,
``pip install -v`` shows it) and builds that one as without a profile. The counts are taken
after early inlining, so a change to a small helper drops the counts of every caller it was
inlined into (measured: one added branch in ``time::mul_div`` dropped nine functions', cfs's
``do_schedule`` and ``charge_curr`` among them). The build records whether its sources are those
the profile was taken on, and ``vcpusim --version`` and ``vcpusim bench`` report it: take the
profile again (``python scripts/pgo_profile.py``) before measuring speed after changing the
engine, and commit it with the change.

The flags go after the caller's own (``CARGO_ENCODED_RUSTFLAGS``, or ``RUSTFLAGS`` split on
whitespace), and the build uses its own cargo target folder (``target/pgo-use``, unless
``CARGO_TARGET_DIR`` is set) so that ``cargo test`` in ``target/`` is not rebuilt each time.
Optimization does not change what the engine computes (Rust has no fast-math): the outputs are
those of a build without the profile, and the golden hashes check both builds
(``crates/vcpusim/tests/golden.rs`` under ``cargo test``, which builds without it;
``tests/test_golden_wheel.py`` on the installed wheel).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

ROOT = Path(__file__).resolve().parents[1]
#: The committed profile and its description, relative to the project root.
PROFILE = Path("pgo") / "vcpusim.profdata"
META = Path("pgo") / "profile.json"
#: The switch's environment variable and the values it takes.
SWITCH = "VCPUSIM_PGO"
SWITCH_VALUES = ("auto", "off", "require")
#: Compile-time environment the engine reads (``option_env!``, crates/vcpusim/src/build_info.rs):
#: whether the profile was applied ("on" / "off") and the one-line reason.
BUILD_PGO_VAR = "VCPUSIM_BUILD_PGO"
BUILD_NOTE_VAR = "VCPUSIM_BUILD_PGO_NOTE"
#: The keys profile.json must hold (all strings but ``training``, a list of paths).
META_KEYS = ("rustc_release", "rustc_commit", "llvm", "sources", "training")


class BuildError(Exception):
    """A bad switch value, an unreadable profile.json, or ``require`` with no usable profile."""


def source_files(root: Path = ROOT) -> list[Path]:
    """The files the extension is compiled from, in a fixed order: the workspace's Cargo files and
    lock, and each crate's ``Cargo.toml`` and ``src/`` (tests, benches and examples are not in
    the extension)."""
    files = [root / "Cargo.toml", root / "Cargo.lock"]
    for crate in sorted((root / "crates").iterdir()):
        if (crate / "Cargo.toml").is_file():
            files.append(crate / "Cargo.toml")
            files.extend(sorted(p for p in (crate / "src").rglob("*") if p.is_file()))
    return [p for p in files if p.is_file()]


def source_digest(root: Path = ROOT) -> str:
    """SHA-256 over the relative path and bytes of each of ``source_files``: which sources a
    profile was taken on."""
    h = hashlib.sha256()
    for p in source_files(root):
        rel = p.relative_to(root).as_posix().encode()
        data = p.read_bytes()
        h.update(len(rel).to_bytes(8, "little") + rel + len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def parse_rustc(version_text: str) -> dict[str, str]:
    """``release``, ``commit-hash`` and ``LLVM version`` from ``rustc -vV`` output (missing ones
    left out)."""
    keys = {"release": "release", "commit-hash": "commit", "LLVM version": "llvm"}
    out = {}
    for line in version_text.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip() in keys:
            out[keys[name.strip()]] = value.strip()
    return out


def read_meta(root: Path = ROOT) -> dict[str, Any]:
    """profile.json, checked: each of ``META_KEYS`` present with the right type."""
    path = root / META
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise BuildError(f"{path}: not JSON ({e}); `python scripts/pgo_profile.py` writes it again") from None
    if not isinstance(meta, dict):
        raise BuildError(f"{path}: expected a JSON object with keys {', '.join(META_KEYS)}")
    for key in META_KEYS:
        want = list if key == "training" else str
        if not isinstance(meta.get(key), want):
            raise BuildError(
                f"{path}: key {key!r} = {meta.get(key)!r}: expected a {'list of paths' if want is list else 'string'}"
            )
    return meta


@dataclass(frozen=True)
class Decision:
    """Whether the profile is applied, the rustc flags that apply it, and why, in one line;
    ``sources_match``: it is applied and was taken on these sources."""

    apply: bool
    note: str
    flags: list[str] = field(default_factory=list)
    sources_match: bool = False


def decide(env: Mapping[str, str], rustc_version: str | None, root: Path = ROOT) -> Decision:
    """What the build does with the committed profile, for switch ``env[SWITCH]`` and this
    machine's ``rustc -vV`` output (None: rustc could not be run)."""
    switch = env.get(SWITCH, "auto").strip().lower() or "auto"
    if switch not in SWITCH_VALUES:
        raise BuildError(f"{SWITCH}={env[SWITCH]!r}: expected one of {', '.join(SWITCH_VALUES)}")

    def without(reason: str) -> Decision:
        if switch == "require":
            raise BuildError(f"{SWITCH}=require, but the profile cannot be applied: {reason}")
        return Decision(False, f"built without the PGO profile: {reason}")

    if switch == "off":
        return Decision(False, f"built without the PGO profile: {SWITCH}=off")
    profile, meta_path = root / PROFILE, root / META
    if not profile.is_file() or not meta_path.is_file():
        return without(f"no profile ({PROFILE} and {META} are not both there)")
    meta = read_meta(root)
    made_by = f"rustc {meta['rustc_release']} ({meta['rustc_commit'][:9]}, LLVM {meta['llvm']})"
    if rustc_version is None:
        return without(f"rustc could not be run to check that it is the profile's {made_by}")
    here = parse_rustc(rustc_version)
    if here.get("commit") != meta["rustc_commit"]:
        this = f"rustc {here.get('release', '?')} ({here.get('commit', '?')[:9]}, LLVM {here.get('llvm', '?')})"
        return without(
            f"the profile was made by {made_by}, this is {this} "
            "(`python scripts/pgo_profile.py` takes one with this rustc)"
        )
    current = source_digest(root) == meta["sources"]
    state = (
        "taken on these sources"
        if current
        else "taken on other sources: any function changed since is built without it"
    )
    flags = [f"-Cprofile-use={profile.resolve()}"]
    return Decision(True, f"profile-guided ({PROFILE}, sources {meta['sources'][:12]}, {state})", flags, current)


def with_rustc_flags(env: Mapping[str, str], flags: list[str]) -> dict[str, str]:
    """``env`` with rustc ``flags`` after the caller's own. They go in ``CARGO_ENCODED_RUSTFLAGS``
    (separated by 0x1f), so a path with spaces stays one argument; the caller's
    ``CARGO_ENCODED_RUSTFLAGS`` (which cargo prefers) or ``RUSTFLAGS`` (split on whitespace, as
    cargo splits it) come first."""
    env = dict(env)
    if env.get("CARGO_ENCODED_RUSTFLAGS"):
        before = env["CARGO_ENCODED_RUSTFLAGS"].split("\x1f")
    else:
        before = env.get("RUSTFLAGS", "").split()
    env.pop("RUSTFLAGS", None)
    env["CARGO_ENCODED_RUSTFLAGS"] = "\x1f".join([*before, *flags])
    return env


def build_env(decision: Decision, env: Mapping[str, str], root: Path = ROOT) -> dict[str, str]:
    """The environment of a build that carries out ``decision``: the caller's rustc flags first,
    then the profile's, in ``target/pgo-use`` unless the caller names a target folder; the
    decision recorded for the engine to report."""
    env = with_rustc_flags(env, decision.flags) if decision.apply else dict(env)
    env[BUILD_PGO_VAR] = "on" if decision.apply else "off"
    env[BUILD_NOTE_VAR] = decision.note
    if decision.apply:
        env.setdefault("CARGO_TARGET_DIR", str(root / "target" / "pgo-use"))
    return env


def rustc_version(env: Mapping[str, str]) -> str | None:
    """``rustc -vV`` of the rustc cargo will use (``RUSTC`` if set), or None."""
    try:
        done = subprocess.run([env.get("RUSTC", "rustc"), "-vV"], capture_output=True, text=True)
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


def _maturin():
    """maturin's backend, imported when a hook runs (the build environment has it; importing this
    module for its decisions, as the tests and scripts/pgo_profile.py do, does not need it)."""
    import maturin

    return maturin


def _with_profile(build):
    """Run ``build()`` in the environment of ``decide``'s decision, restoring the caller's after."""
    before = dict(os.environ)
    try:
        decision = decide(before, rustc_version(before))
    except BuildError as e:
        print(f"vcpusim build: {e}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None
    print(f"vcpusim build: {decision.note}", file=sys.stderr, flush=True)
    os.environ.clear()
    os.environ.update(build_env(decision, before))
    try:
        return build()
    finally:
        os.environ.clear()
        os.environ.update(before)


# PEP 517 hooks: the two builds of the extension apply the profile; the rest are maturin's.


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _with_profile(lambda: _maturin().build_wheel(wheel_directory, config_settings, metadata_directory))


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _with_profile(lambda: _maturin().build_editable(wheel_directory, config_settings, metadata_directory))


def build_sdist(sdist_directory, config_settings=None):
    return _maturin().build_sdist(sdist_directory, config_settings)


def get_requires_for_build_wheel(config_settings=None):
    return _maturin().get_requires_for_build_wheel(config_settings)


def get_requires_for_build_editable(config_settings=None):
    return _maturin().get_requires_for_build_editable(config_settings)


def get_requires_for_build_sdist(config_settings=None):
    return _maturin().get_requires_for_build_sdist(config_settings)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _maturin().prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return _maturin().prepare_metadata_for_build_editable(metadata_directory, config_settings)
