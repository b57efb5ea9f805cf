"""The README's snippets run as written: every ```python block as a script, and the quick-start
command, from a folder that has the repository's scenarios/ (results land there, not in the repo)."""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def _workdir(tmp_path):
    (tmp_path / "scenarios").symlink_to(REPO / "scenarios")
    return tmp_path


def test_the_python_snippets_run_as_scripts(tmp_path):
    blocks = _blocks("python")
    assert blocks, "the README has Python snippets"
    cwd = _workdir(tmp_path)
    for i, block in enumerate(blocks):
        script = cwd / f"snippet_{i}.py"
        script.write_text(block)
        done = subprocess.run([sys.executable, str(script)], cwd=cwd, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (block, done.stderr)


def test_ci_runs_the_readmes_test_command():
    """The quick start's second command (the tests) is a line of .ci/run, as CI must call it: as
    it is, or in a subshell, `( command )`, which makes `set -e` stop on any of its failures."""
    quick_start = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [block.strip() for block in re.findall(r"```sh\n(.*?)```", quick_start, flags=re.S)]
    assert len(commands) == 2 and "pytest" in commands[1], commands
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert commands[1] in ci or f"( {commands[1]} )" in ci, (commands[1], ci)


def test_every_vcpusim_command_runs(tmp_path):
    """Each `vcpusim ...` line of the README's sh blocks (the quick start's after its install step)."""
    commands = []
    for block in _blocks("sh"):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if "&& vcpusim " in line and line.startswith("pip install"):
                line = line.split("&&", 1)[1].strip()  # the install step is the reader's
            if line.startswith("vcpusim "):
                commands.append(line.split())
    assert len(commands) >= 5, commands
    cwd = _workdir(tmp_path)
    for command in commands:
        done = subprocess.run([sys.executable, "-m", "vcpusim", *command[1:]], cwd=cwd, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (command, done.stderr)
    assert (cwd / "results" / "summary.json").exists()
    assert (cwd / "results" / "credit" / "summary.json").exists()


def test_the_introduction_names_every_policy_workload_family_and_seed():
    """The paragraphs before the quick start say what the simulator has: every policy of the
    catalog, every family of built-in workloads (`parsec.*`, `npb.*`, ...) and each of the five
    seeds. (It once ended "the other seeds' schemes are to follow" after all five were in.)"""
    import vcpusim

    intro = README.split("## Quick start", 1)[0]
    catalog = vcpusim.catalog()
    policies = [p["name"] for p in catalog["policies"]]
    assert {"cfs", "credit", "eevdf", "gang", "hybrid"} <= set(policies)
    families = sorted({w["name"].split(".", 1)[0] for w in catalog["workloads"] if "." in w["name"]})
    assert {"parsec", "npb", "mosbench"} <= set(families)
    missing = [p for p in policies if not re.search(rf"\b{re.escape(p)}\b", intro, flags=re.I)]
    missing += [f"{f}.*" for f in families if f"`{f}." not in intro]
    missing += [f"seed {n:03d}" for n in range(5) if f"seed {n:03d}" not in intro]
    assert not missing, f"README's introduction does not name: {missing}"
    assert "to follow" not in intro
