"""test_demo_cli.py - end-to-end tests of `convfind demo` (tools/cmd_demo.c).

The demo must put its decisions in the find database's default place (no --db, no
$CONVFIND_DB_PATH), so every test points $XDG_CACHE_HOME and $HOME at a temporary
directory and removes $CONVFIND_DB_PATH, which ctest sets to ":memory:" for the other
CLI tests.  Tiny layers and a short Find budget keep each run well under a second.
"""
import os
import re
import subprocess

import pytest

CLI = os.environ.get("CONVFIND_CLI", "")
HEADER = "name,count,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,dil_h,dil_w,group\n"
TINY = HEADER + "a_3x3,2,1,4,9,9,8,3,3,1,1,2,2,1,1,1\nb_1x1,1,1,8,6,6,4,1,1,0,0,1,1,1,1,1\n"
PASS = re.compile(r"^pass (\d): layers=(\d+) finds=(\d+) db_hits=(\d+) seconds=\d+\.\d+$",
                  re.M)


@pytest.fixture(scope="module")
def cli():
    if not CLI or not os.access(CLI, os.X_OK):
        pytest.fail("CONVFIND_CLI must name the built convfind executable, got %r" % CLI)
    return CLI


def demo(cli, tmp_path, *args, cwd=None, xdg=True):
    env = dict(os.environ, HOME=str(tmp_path / "home"))
    for var in ("CONVFIND_DB_PATH", "CONVFIND_SYSTEM_DB", "XDG_CACHE_HOME"):
        env.pop(var, None)
    if xdg:
        env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    args = [str(a) for a in args]
    for flag, value in (("--budget-ms", "20"), ("--repeats", "1")):
        if flag not in args:
            args += [flag, value]
    return subprocess.run([cli, "demo"] + args, capture_output=True, text=True, env=env,
                          cwd=cwd or tmp_path, timeout=120)


def passes(r):
    """{pass: (layers, finds, db_hits)} from the two summary lines."""
    found = {int(m[0]): tuple(int(v) for v in m[1:]) for m in PASS.findall(r.stdout)}
    assert sorted(found) == [1, 2], r.stdout
    return found


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.csv"
    path.write_text(TINY)
    return path


def test_second_pass_and_second_run_measure_nothing(cli, tmp_path, tiny):
    db = tmp_path / "cache" / "convfind" / "finddb.sqlite"
    assert not db.exists()
    first = demo(cli, tmp_path, "--layers", tiny)
    assert first.returncode == 0, first.stderr
    assert passes(first) == {1: (2, 2, 0), 2: (2, 0, 2)}
    assert db.is_file()
    assert not (tmp_path / "home").exists()  # XDG_CACHE_HOME comes before ~/.cache
    assert "find database: %s\n" % db in first.stdout
    assert "nothing was re-measured" in first.stdout
    assert "earlier run" not in first.stdout

    again = demo(cli, tmp_path, "--layers", tiny)
    assert again.returncode == 0, again.stderr
    assert passes(again) == {1: (2, 0, 2), 2: (2, 0, 2)}
    assert "already in the database from an earlier run" in again.stdout


def test_without_xdg_cache_home_the_db_is_under_home(cli, tmp_path, tiny):
    r = demo(cli, tmp_path, "--layers", tiny, xdg=False)
    assert r.returncode == 0, r.stderr
    assert passes(r)[2] == (2, 0, 2)
    assert (tmp_path / "home" / ".cache" / "convfind" / "finddb.sqlite").is_file()


def test_decisions_and_execution_are_reported(cli, tmp_path, tiny):
    r = demo(cli, tmp_path, "--layers", tiny)
    assert r.returncode == 0, r.stderr
    rows = [line.split() for line in r.stdout.splitlines()
            if line.startswith(("a_3x3 ", "b_1x1 "))]
    # Each layer appears in the decision table of pass 1 and in the execution table.
    assert [row[0] for row in rows] == ["a_3x3", "b_1x1"] * 2
    assert rows[0][2] == rows[1][2] == "measured"
    assert rows[0][1] == rows[2][2] and rows[1][1] == rows[3][2]  # the decision is what runs
    assert rows[2][1] == "2" and rows[3][1] == "1"  # the count column
    assert "network: 2 shapes, 3 convolutions" in r.stdout


def test_default_layers_file_is_relative_to_the_current_directory(cli, tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "resnet50_convs.csv").write_text(TINY)
    r = demo(cli, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "tune the convolutions of data/resnet50_convs.csv (2 shapes, 3 convolutions)" \
        in r.stdout


def test_missing_default_layers_file_says_where_to_run(cli, tmp_path):
    r = demo(cli, tmp_path)
    assert r.returncode != 0
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "data/resnet50_convs.csv" in lines[0], r.stderr
    assert "run it from the repository root" in lines[0]


def test_suite_with_convtranspose_3d_1d_and_bias(cli, tmp_path):
    """The demo reads the suite format in full and runs rows with a bias (data/suites'
    U-Net, R3D-18 and wav2vec 2.0 files use these columns)."""
    suite = tmp_path / "suite.csv"
    suite.write_text(
        "k,name,count,op,dims,n,c,d,h,w,t,r,s,pads,stride_d,stride_h,stride_w,output_padding,"
        "group,bias,act,alpha,beta\n"
        "4,line,1,conv,1,1,2,,,13,,,3,,,,2,,1,1,relu,,\n"
        "6,up3d,2,convT,3,1,4,3,4,5,2,2,3,0 1 0 1 0 2,2,2,1,1 0 0,2,1,clip,-1,6\n")
    r = demo(cli, tmp_path, "--layers", suite)
    assert r.returncode == 0, r.stderr
    assert passes(r)[2] == (2, 0, 2)
    assert re.search(r"^up3d +2 cpu\.", r.stdout, re.M), r.stdout
    assert "network: 2 shapes, 3 convolutions" in r.stdout, r.stdout


@pytest.mark.parametrize("content,needle", [
    ("name,count\n", "line 1: the header lacks the required column 'n'"),
    ("name,n,c,k,hue\n", "line 1: unknown column 'hue'"),
    (HEADER + "a,1,1,4,9,9,8,3,3,1,1,x,2,1,1,1\n", "line 2: stride_h 'x' is not an integer"),
    (HEADER + "a,1,1,4,9,9,8,3,3\n", "line 2: 9 fields, expected 16"),
    (HEADER + "a,1,1,4,9,9,8,3,3,1,1,1,1,1,1,1,7\n", "line 2: more than 16 fields"),
    (HEADER + "a,0,1,4,9,9,8,3,3,1,1,1,1,1,1,1\n", "line 2: count 0 must be >= 1"),
    (HEADER, "no layers in the file"),
    (HEADER + "a,1,1,4,9,9,8,3,3,1,1,1,1,1,1,0\n", "line 2: group 0 must be >= 1"),
    (HEADER + "a,1,1,4,2,2,8,3,3,0,0,1,1,1,1,1\n", "layer a: CONVFIND_ERR_"),
])
def test_bad_layers_file_one_line(cli, tmp_path, content, needle):
    csv = tmp_path / "bad.csv"
    csv.write_text(content)
    r = demo(cli, tmp_path, "--layers", csv)
    assert r.returncode != 0
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and needle in lines[0], r.stderr
    assert "run it from the repository root" not in lines[0]


@pytest.mark.parametrize("args,needle", [
    (["--repeats", "0"], "--repeats 0 is out of range"),
    (["--budget-ms", "-1"], "--budget-ms -1 must be >= 0"),
    (["--layer", "conv1"], "--layer"),
])
def test_bad_flags_one_line(cli, tmp_path, tiny, args, needle):
    r = demo(cli, tmp_path, "--layers", tiny, *args)
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and needle in lines[0], r.stderr
