"""The sweep's saved runs cannot be forged or redirected by accident: a run folder or file that
is a link is never served (nor written through), and values a run cannot have produced are
recomputed with a warning, even when the forger recomputed run.json's hashes."""

import hashlib
import json
import shutil
import warnings

import pytest

import vcpusim

TEXT = """
[host]
pcpus = 2
[[vm]]
name = "a"
vcpus = 2
workload = "cpu-bound"
[run]
duration = "20ms"
"""


def sweep(out):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = vcpusim.sweep(vcpusim.Scenario(TEXT, "c.toml"), grid={"seed": [1]}, out=out, processes=1)
    return table, [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


def the_run(out):
    folders = [p for p in (out / "runs").iterdir() if not p.name.startswith(".") and p.is_dir()]
    assert len(folders) == 1, folders
    return folders[0]


def forge(folder, cpu_time_ms: str):
    """Rewrite vms.csv's cpu_time_ms and recompute run.json's hashes, as a forger would."""
    vms = (folder / "vms.csv").read_text().splitlines()
    header = vms[0].split(",")
    at = header.index("cpu_time_ms")
    row = vms[1].split(",")
    row[at] = cpu_time_ms
    (folder / "vms.csv").write_text("\n".join([vms[0], ",".join(row), *vms[2:]]) + "\n")
    record = json.loads((folder / "run.json").read_text())
    data = (folder / "vms.csv").read_bytes()
    record["files"]["vms.csv"] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (folder / "run.json").write_text(json.dumps(record, indent=1, sort_keys=True))


def test_impossible_saved_values_are_recomputed_with_a_warning(tmp_path):
    table, _ = sweep(tmp_path)
    true_time = float(table["cpu_time_ms"].iloc[0])
    forge(the_run(tmp_path), "1000000.000")
    table, warned = sweep(tmp_path)
    assert any("outside what 2 pCPUs had" in w for w in warned), warned
    assert float(table["cpu_time_ms"].iloc[0]) == true_time


def test_a_run_folder_swapped_for_a_link_is_not_served_and_its_target_is_left_alone(tmp_path):
    table, _ = sweep(tmp_path)
    true_time = float(table["cpu_time_ms"].iloc[0])
    folder = the_run(tmp_path)
    forged = tmp_path / "elsewhere"
    shutil.copytree(folder, forged)
    forge(forged, str(true_time - 1.0))  # plausible, hashes whole: only the link gives it away
    shutil.rmtree(folder)
    folder.symlink_to(forged, target_is_directory=True)
    table, warned = sweep(tmp_path)
    assert any("symbolic link" in w for w in warned), warned
    assert float(table["cpu_time_ms"].iloc[0]) == true_time
    assert folder.is_dir() and not folder.is_symlink(), "the link was replaced by the recomputed run"
    assert (forged / "vms.csv").exists(), "the link's target was not touched"


def test_a_planted_partial_link_does_not_redirect_the_writes(tmp_path):
    sweep(tmp_path)
    folder = the_run(tmp_path)
    shutil.rmtree(folder)
    target = tmp_path / "victim"
    target.mkdir()
    (folder.parent / f".{folder.name}.partial").symlink_to(target, target_is_directory=True)
    table, _ = sweep(tmp_path)
    assert list(target.iterdir()) == [], "the sweep wrote through the planted link"
    assert folder.is_dir() and not folder.is_symlink() and (folder / "vms.csv").exists()
    assert not (folder.parent / f".{folder.name}.partial").exists()
