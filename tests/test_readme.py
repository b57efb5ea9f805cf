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


def test_the_quick_start_command_runs(tmp_path):
    commands = [line for block in _blocks("sh") for line in block.splitlines() if line.startswith("pip install . && vcpusim run")]
    assert len(commands) == 1, "the quick start names one run command"
    command = commands[0].split("&&", 1)[1].split()  # the install step is the reader's
    cwd = _workdir(tmp_path)
    done = subprocess.run([sys.executable, "-m", "vcpusim", *command[1:]], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert (cwd / "results" / "summary.json").exists()
