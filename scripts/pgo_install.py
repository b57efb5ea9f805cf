"""Install vcpusim built with profile-guided optimization (PGO): the same simulator, the same
bytes of output, about a quarter less CPU time per run on this repository's experiment sets.

    rustup component add llvm-tools        # once: the llvm-profdata of rustc's own LLVM
    python scripts/pgo_install.py          # or: python scripts/pgo_install.py --extras test,plot

Four steps, each printed as it starts:

1. build a wheel whose engine counts what it executes (rustc's ``-Cprofile-generate``);
2. run the training scenarios through that wheel's extension (``_core.run``, as every run from
   Python goes): every golden case (``crates/vcpusim/tests/golden/cases``: three reduced cases of
   each ASPLOS'13 and hybrid figure, one per policy and overlay, the guest variants) and every
   scenario under ``scenarios/`` (CMT host, micro-sliced pool, IRS, KVM and the Linux 4.4 and 6.x
   guests, eevdf, devices, pools), so every policy and guest model is trained, not one set;
3. merge the counts (written under ``target/pgo/raw``) into ``target/pgo/vcpusim.profdata``
   (``llvm-profdata merge``);
4. ``pip install`` this checkout with ``-Cprofile-use=<that file>`` into the environment of the
   Python that runs this script (run it with a virtual environment's ``python`` to install there).

The training goes through the extension, not through the ``run_file`` example: the event loop is
generic over its progress callback (``Sim::run_watched``), so it is compiled into the extension's
crate under another name than into the example's, and a profile taken with the example leaves the
extension's hot loop unoptimized (measured: no gain). The builds use their own cargo target
folders (``target/pgo-generate``, ``target/pgo-use``), so they leave the usual ``target/`` as it
was. Optimization does not change what the engine computes (Rust has no fast-math): the outputs
are those of ``pip install .``; docs/speed.md has the measurements.

Needs: what ``pip install .`` needs, plus ``llvm-profdata`` of the same LLVM major version as
``rustc`` (``rustc -vV``): ``rustup component add llvm-tools`` puts it in rustc's sysroot, where
this script looks, or name one with ``LLVM_PROFDATA=/path/to/llvm-profdata``.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
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


def find_profdata(env: dict[str, str] | None = None) -> Path:
    """The ``llvm-profdata`` to merge with: ``LLVM_PROFDATA`` if set, else the one rustup's
    llvm-tools put in rustc's sysroot. Refused unless its LLVM major version is rustc's (a raw
    profile of one LLVM version is unreadable to another's tools)."""
    env = os.environ if env is None else env
    rustc = _output(["rustc", "-vV"])
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
    print(f"pgo_install: {what}", flush=True)
    if subprocess.run(cmd, env=env).returncode != 0:
        raise PgoError(f"{what} failed: {' '.join(cmd)}")


def build_env(flag: str, target_dir: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a build with rustc flag ``flag`` after the caller's own flags, in cargo's
    own target folder ``target_dir``. The flags go in ``CARGO_ENCODED_RUSTFLAGS`` (separated by
    0x1f), so a path with spaces in ``flag`` stays one argument; the caller's ``RUSTFLAGS`` (split
    on whitespace, as cargo splits it) or ``CARGO_ENCODED_RUSTFLAGS`` (which cargo prefers) come
    first."""
    env = dict(os.environ if env is None else env)
    if env.get("CARGO_ENCODED_RUSTFLAGS"):
        flags = env["CARGO_ENCODED_RUSTFLAGS"].split("\x1f")
    else:
        flags = env.get("RUSTFLAGS", "").split()
    env.pop("RUSTFLAGS", None)
    env["CARGO_ENCODED_RUSTFLAGS"] = "\x1f".join([*flags, flag])
    env["CARGO_TARGET_DIR"] = str(target_dir)
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extras", default="", help="extras to install, as in pip install '.[EXTRAS]' (e.g. test,plot)")
    args = parser.parse_args(argv)
    if args.extras and not re.fullmatch(r"[A-Za-z0-9_-]+(,[A-Za-z0-9_-]+)*", args.extras):
        parser.error(f"--extras {args.extras!r}: expected names separated by commas, such as test,plot")
    try:
        profdata = find_profdata()
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
                 "1/4 building the instrumented wheel")
            wheel = next((tmp / "wheel").glob("vcpusim-*.whl"), None)
            if wheel is None:
                raise PgoError(f"pip wheel wrote no vcpusim wheel into {tmp / 'wheel'}")
            with zipfile.ZipFile(wheel) as z:
                z.extractall(tmp / "pkg")
            ext = next((p for p in sorted((tmp / "pkg" / "vcpusim").glob("_core.*"))
                        if any(p.name.endswith(x) for x in importlib.machinery.EXTENSION_SUFFIXES)), None)
            if ext is None:
                raise PgoError(f"{wheel.name} holds no vcpusim/_core extension")
            print(f"pgo_install: 2/4 training on {len(scenarios)} scenario files", flush=True)
            shutil.rmtree(raw, ignore_errors=True)  # counts of an earlier run, perhaps of other code
            ran = train(ext, scenarios, raw)
            profile = out / "vcpusim.profdata"
            _run([str(profdata), "merge", "-o", str(profile), str(raw)], dict(os.environ),
                 f"3/4 merging the counts of {ran} runs into {profile}")
        target = f"{ROOT}[{args.extras}]" if args.extras else str(ROOT)
        env = build_env(f"-Cprofile-use={profile}", ROOT / "target" / "pgo-use")
        _run([sys.executable, "-m", "pip", "install", "-q", target], env, "4/4 installing the optimized build")
    except PgoError as e:
        print(f"pgo_install: {e}", file=sys.stderr)
        return 1
    print("pgo_install: done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
