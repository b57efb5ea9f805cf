"""Take the profile-guided-optimization (PGO) profile that ``pip install .`` builds with.

    rustup component add llvm-tools        # once: the llvm-profdata of rustc's own LLVM
    python scripts/pgo_profile.py          # writes pgo/vcpusim.profdata and pgo/profile.json
    python scripts/pgo_profile.py --check  # is the committed one applied, and current? (exit 1 if not)

The build backend (``build_backend/vcpusim_build.py``) applies the committed profile to every
``pip install .`` made with the rustc that took it: the same simulator, the same bytes of output,
about a quarter less CPU time per run on this repository's experiment sets (docs/speed.md).
Take it again after changing the engine's hot code or the toolchain: a profile taken on earlier
sources still applies to the functions that did not change, and ``vcpusim --version`` says
whether the installed build's sources are the profile's.

Three steps, each printed as it starts:

1. build a wheel whose engine counts what it executes (rustc's ``-Cprofile-generate``; the
   committed profile is not applied to it, ``VCPUSIM_PGO=off``);
2. run the training scenarios through that wheel's extension (``_core.run``, as every run from
   Python goes): every golden case (``crates/vcpusim/tests/golden/cases``: three reduced cases of
   each ASPLOS'13 and hybrid figure, one per policy and overlay, the guest variants) and every
   scenario under ``scenarios/`` (CMT host, micro-sliced pool, IRS, KVM and the Linux 4.4 and 6.x
   guests, eevdf, devices, pools), so every policy and guest model is trained, not one set;
3. merge the counts (written under ``target/pgo/raw``) into ``pgo/vcpusim.profdata``
   (``llvm-profdata merge``) and describe it in ``pgo/profile.json`` (the rustc that made it,
   the digest of the sources it was taken on, the training scenarios).

Then ``pip install .`` builds with it. The training goes through the extension, not through the
``run_file`` example: the event loop is generic over its progress callback (``Sim::run_watched``),
so it is compiled into the extension's crate under another name than into the example's, and a
profile taken with the example leaves the extension's hot loop unoptimized (measured: no gain).
The instrumented build uses its own cargo target folder (``target/pgo-generate``), so it leaves
the usual ``target/`` as it was. The training runs are deterministic, so the same sources and
rustc give the same profile, byte for byte.

Needs: what ``pip install .`` needs, plus ``llvm-profdata`` of the same LLVM major version as
``rustc`` (``rustc -vV``): ``rustup component add llvm-tools`` puts it in rustc's sysroot, where
this script looks, or name one with ``LLVM_PROFDATA=/path/to/llvm-profdata``.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "build_backend"))
import vcpusim_build  # noqa: E402  (the backend's decisions and source digest: one copy of each)

#: Scenario folders trained on (every ``*.toml`` below them that is a scenario).
TRAINING_DIRS = (ROOT / "crates" / "vcpusim" / "tests" / "golden" / "cases", ROOT / "scenarios")


class PgoError(Exception):
    """A missing tool or a failed step: printed as one message, no traceback."""


def llvm_major(version_text: str) -> int | None:
    """The LLVM major version in ``rustc -vV`` ("LLVM version: 20.1.8") or ``llvm-profdata
    --version`` ("LLVM version 20.1.8") output; None when it names none."""
    m = re.search(r"LLVM version:?\s+(\d+)\.", version_text)
    return int(m.group(1)) if m else None


def _output(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    except FileNotFoundError:
        raise PgoError(f"{cmd[0]} not found: install Rust (https://rustup.rs)") from None
    except subprocess.CalledProcessError as e:
        raise PgoError(f"{' '.join(cmd)} failed: {e.stderr.strip()}") from None


def find_profdata(rustc: str, env: dict[str, str] | None = None) -> Path:
    """The ``llvm-profdata`` to merge with: ``LLVM_PROFDATA`` if set, else the one rustup's
    llvm-tools put in rustc's sysroot. Refused unless its LLVM major version is that of the rustc
    whose ``rustc -vV`` is ``rustc`` (a raw profile of one LLVM version is unreadable to another's
    tools)."""
    env = os.environ if env is None else env
    want = llvm_major(rustc)
    if "LLVM_PROFDATA" in env:
        tool = Path(env["LLVM_PROFDATA"])
        if not tool.is_file():
            raise PgoError(f"LLVM_PROFDATA={env['LLVM_PROFDATA']}: no such file; expected the path of llvm-profdata")
    else:
        host = re.search(r"^host:\s*(\S+)", rustc, re.MULTILINE)
        sysroot = Path(_output(["rustc", "--print", "sysroot"]).strip())
        exe = "llvm-profdata.exe" if os.name == "nt" else "llvm-profdata"
        tool = sysroot / "lib" / "rustlib" / (host.group(1) if host else "") / "bin" / exe
        if not tool.is_file():
            raise PgoError(
                f"llvm-profdata not found in rustc's sysroot ({tool}): install it with "
                "`rustup component add llvm-tools`, or set LLVM_PROFDATA to one of LLVM "
                f"{want if want is not None else '(rustc -vV names no version)'}"
            )
    try:
        done = subprocess.run([str(tool), "--version"], capture_output=True, text=True)
    except OSError as e:
        raise PgoError(f"{tool} cannot be run: {e.strerror or e}") from None
    got = llvm_major(done.stdout) if done.returncode == 0 else None
    if got is None:
        raise PgoError(
            f"{tool} does not say its LLVM version (`{tool} --version`), so it is not the llvm-profdata "
            f"of rustc's LLVM {want}: install that one with `rustup component add llvm-tools`"
        )
    if want is None or got != want:
        raise PgoError(
            f"{tool} is LLVM {got}, rustc is LLVM {want}: the profile rustc writes needs the "
            "llvm-profdata of its own LLVM (`rustup component add llvm-tools`)"
        )
    return tool


def training_scenarios() -> list[Path]:
    """Every scenario file the profile is trained on, in a fixed order."""
    files = sorted(p for d in TRAINING_DIRS for p in d.rglob("*.toml"))
    if not files:
        raise PgoError(f"no training scenarios under {', '.join(str(d) for d in TRAINING_DIRS)}")
    return files


#: Run in a fresh interpreter against the instrumented extension: its counts are written when
#: that process exits. A file that is not a runnable scenario (a sweep file) is skipped.
_TRAIN = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("vcpusim._core", sys.argv[1])
core = importlib.util.module_from_spec(spec)
spec.loader.exec_module(core)
ran = 0
for path in sys.argv[2:]:
    try:
        core.run(open(path, encoding="utf-8").read(), path, trace=False, check=False)
        ran += 1
    except core.VcpusimError:
        pass
print(ran)
"""


def train(extension: Path, scenarios: list[Path], raw: Path) -> int:
    """Run ``scenarios`` through the extension file ``extension`` in a fresh interpreter, its
    counts written under ``raw``; the number of runs (at least one, else refused)."""
    done = subprocess.run([sys.executable, "-c", _TRAIN, str(extension), *map(str, scenarios)],
                          env={**os.environ, "LLVM_PROFILE_FILE": str(raw / "vcpusim-%p-%m.profraw")},
                          capture_output=True, text=True)
    ran = done.stdout.strip()
    if done.returncode != 0 or not ran.isdigit() or int(ran) == 0:
        raise PgoError(f"training failed: {done.stderr.strip() or ran or 'no scenario ran'}")
    return int(ran)


def _run(cmd: list[str], env: dict[str, str], what: str) -> None:
    print(f"pgo_profile: {what}", flush=True)
    if subprocess.run(cmd, env=env).returncode != 0:
        raise PgoError(f"{what} failed: {' '.join(cmd)}")


def build_env(flag: str, target_dir: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of the instrumented build: rustc flag ``flag`` after the caller's own flags
    (the backend's ``with_rustc_flags``), cargo's target folder ``target_dir``, and the committed
    profile not applied (``VCPUSIM_PGO=off``: an instrumented build cannot use one)."""
    env = vcpusim_build.with_rustc_flags(os.environ if env is None else env, [flag])
    env["CARGO_TARGET_DIR"] = str(target_dir)
    env[vcpusim_build.SWITCH] = "off"
    return env


def describe(rustc_version: str, training: list[Path], root: Path = ROOT) -> dict[str, object]:
    """profile.json's content for a profile made by rustc ``rustc_version`` (``rustc -vV``) on
    the sources now under ``root``, trained on ``training``."""
    rustc = vcpusim_build.parse_rustc(rustc_version)
    missing = [k for k in ("release", "commit", "llvm") if k not in rustc]
    if missing:
        raise PgoError(f"`rustc -vV` does not say its {', '.join(missing)}: cannot describe the profile")
    return {
        "rustc_release": rustc["release"],
        "rustc_commit": rustc["commit"],
        "llvm": rustc["llvm"],
        "sources": vcpusim_build.source_digest(root),
        "training": [p.relative_to(root).as_posix() for p in training],
    }


def check(env: dict[str, str] | None = None, root: Path = ROOT) -> int:
    """``--check``: print the build backend's decision for this checkout and this rustc; 0 when
    the profile applies and was taken on these sources, else 1 (take it again)."""
    env = dict(os.environ if env is None else env)
    env.pop(vcpusim_build.SWITCH, None)  # the committed profile's state, whatever the switch says
    try:
        decision = vcpusim_build.decide(env, vcpusim_build.rustc_version(env), root)
    except vcpusim_build.BuildError as e:
        print(f"pgo_profile: {e}", file=sys.stderr)
        return 1
    print(f"pgo_profile: {decision.note}")
    if not decision.sources_match:
        print("pgo_profile: take it again: python scripts/pgo_profile.py", file=sys.stderr)
    return 0 if decision.sources_match else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="take nothing: say whether `pip install .` would apply the committed profile, "
                             "and whether it was taken on these sources (exit 1 if not)")
    args = parser.parse_args(argv)
    if args.check:
        return check()
    try:
        rustc = _output(["rustc", "-vV"])
        profdata = find_profdata(rustc)
        scenarios = training_scenarios()
        out = ROOT / "target" / "pgo"
        out.mkdir(parents=True, exist_ok=True)
        # The counts go to a fixed folder: the instrumented build embeds its path, so a fixed
        # one lets a rerun reuse that build (cargo rebuilds everything when a flag changes).
        raw = out / "raw"
        with tempfile.TemporaryDirectory(prefix="vcpusim-pgo-") as tmp_name:
            tmp = Path(tmp_name)
            env = build_env(f"-Cprofile-generate={raw}", ROOT / "target" / "pgo-generate")
            _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp / "wheel"), str(ROOT)], env,
                 "1/3 building the instrumented wheel")
            wheel = next((tmp / "wheel").glob("vcpusim-*.whl"), None)
            if wheel is None:
                raise PgoError(f"pip wheel wrote no vcpusim wheel into {tmp / 'wheel'}")
            with zipfile.ZipFile(wheel) as z:
                z.extractall(tmp / "pkg")
            ext = next((p for p in sorted((tmp / "pkg" / "vcpusim").glob("_core.*"))
                        if any(p.name.endswith(x) for x in importlib.machinery.EXTENSION_SUFFIXES)), None)
            if ext is None:
                raise PgoError(f"{wheel.name} holds no vcpusim/_core extension")
            print(f"pgo_profile: 2/3 training on {len(scenarios)} scenario files", flush=True)
            shutil.rmtree(raw, ignore_errors=True)  # counts of an earlier run, perhaps of other code
            ran = train(ext, scenarios, raw)
            profile = ROOT / vcpusim_build.PROFILE
            profile.parent.mkdir(parents=True, exist_ok=True)
            _run([str(profdata), "merge", "-o", str(profile), str(raw)], dict(os.environ),
                 f"3/3 merging the counts of {ran} runs into {profile.relative_to(ROOT)}")
        meta = ROOT / vcpusim_build.META
        meta.write_text(json.dumps(describe(rustc, scenarios), indent=2) + "\n", encoding="utf-8")
    except PgoError as e:
        print(f"pgo_profile: {e}", file=sys.stderr)
        return 1
    print(f"pgo_profile: done; `pip install .` builds with it ({meta.relative_to(ROOT)} describes it)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
