"""test_cli_db.py - end-to-end tests of `convfind tune` and `convfind db`.

Tiny problems and a short Find budget keep it fast.  Checks the exact last line of
`tune`, that a second run measures nothing, the MIOpenDriver reader, every `db`
subcommand, and that bad input gives a non-zero exit with one line on stderr.
"""
import json
import os
import re
import subprocess

import pytest

CLI = os.environ.get("CONVFIND_CLI", "")
LAST = re.compile(r"^tuned=(\d+) finds=(\d+) db_hits=(\d+) seconds=\d+\.\d\d$")

CSV = """name,count,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,dil_h,dil_w,group
a_3x3,2,1,4,8,8,8,3,3,1,1,1,1,1,1,1
b_1x1,1,1,8,6,6,4,1,1,0,0,1,1,1,1,1
c_dw,1,1,8,7,7,8,3,3,1,1,2,2,1,1,8
"""
# The first line is row a_3x3 again (a cache hit in the same run); the second is new.
MIOPEN = """# MIOpenDriver problems
./bin/MIOpenDriver conv -n 1 -c 4 -H 8 -W 8 -k 8 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -g 1 -F 1 -t 1
MIOpenDriver conv --batchsize 1 --in_channels 6 --in_h 5 --in_w 5 --out_channels 6 --fil_h 3 --fil_w 3 --pad_h 0 --pad_w 0 -F 1
"""


@pytest.fixture(scope="module")
def cli():
    if not CLI or not os.access(CLI, os.X_OK):
        pytest.fail("CONVFIND_CLI must name the built convfind executable, got %r" % CLI)
    return CLI


def run(cli, tmp_path, *args, stdin=None):
    env = dict(os.environ, CONVFIND_DB_PATH=str(tmp_path / "f.sqlite"))
    env.pop("CONVFIND_SYSTEM_DB", None)
    return subprocess.run([cli] + [str(a) for a in args], capture_output=True, text=True,
                          env=env, timeout=300, input=stdin)


@pytest.fixture
def lists(tmp_path):
    (tmp_path / "p.csv").write_text(CSV)
    (tmp_path / "m.txt").write_text(MIOPEN)
    return tmp_path / "p.csv", tmp_path / "m.txt"


def last_line(r):
    m = LAST.match(r.stdout.rstrip("\n").split("\n")[-1])
    assert m, r.stdout
    return tuple(int(g) for g in m.groups())


def test_second_tune_measures_nothing(cli, tmp_path, lists):
    r = run(cli, tmp_path, "tune", "--budget-ms", "20", *lists)
    assert r.returncode == 0, r.stderr
    assert last_line(r) == (5, 4, 0)
    assert "[5/5]" in r.stdout  # not a terminal: one plain line per problem
    assert "measured" in r.stdout
    r = run(cli, tmp_path, "tune", "--budget-ms", "20", *lists)
    assert r.returncode == 0, r.stderr
    assert last_line(r) == (5, 0, 5)
    assert "measured" not in r.stdout
    r = run(cli, tmp_path, "tune", "--policy", "exhaustive", "--budget-ms", "20", lists[0])
    assert last_line(r) == (3, 3, 0)


def test_csv_without_count(cli, tmp_path):
    lines = CSV.splitlines()
    no_count = [",".join(f for i, f in enumerate(line.split(",")) if i != 1) for line in lines]
    (tmp_path / "nc.csv").write_text("\n".join(no_count) + "\n")
    r = run(cli, tmp_path, "tune", "--budget-ms", "20", tmp_path / "nc.csv")
    assert r.returncode == 0, r.stderr
    assert last_line(r) == (3, 3, 0)


def test_db_subcommands(cli, tmp_path, lists):
    assert run(cli, tmp_path, "tune", "--budget-ms", "20", lists[0]).returncode == 0
    r = run(cli, tmp_path, "db", "path")
    assert r.stdout.strip() == str(tmp_path / "f.sqlite")
    r = run(cli, tmp_path, "db", "list")
    rows = r.stdout.strip().split("\n")
    assert r.returncode == 0 and len(rows) == 3
    key = rows[0].split("\t")[0]
    r = run(cli, tmp_path, "db", "show", key)
    assert r.returncode == 0 and "chosen:" in r.stdout and "validated" in r.stdout
    r = run(cli, tmp_path, "db", "stats")
    assert "records:         3 (3 this environment" in r.stdout
    out = tmp_path / "e.jsonl"
    assert run(cli, tmp_path, "db", "export", out).returncode == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 3 and records[0]["format"] == "convfind-db-record/1"
    assert {"host", "time"} <= set(records[0]["provenance"])
    other = tmp_path / "other.sqlite"
    r = run(cli, tmp_path, "db", "import", out, "--db", other)
    assert r.returncode == 0 and "imported 3 records" in r.stdout, r.stderr
    r = run(cli, tmp_path, "db", "export", "-", "--db", other)
    assert sorted(r.stdout.splitlines()) == sorted(out.read_text().splitlines())
    for sub, text in (("verify", "ok:"), ("prune", "pruned 0"), ("vacuum", "vacuumed")):
        r = run(cli, tmp_path, "db", sub)
        assert r.returncode == 0 and text in r.stdout, (sub, r.stderr)


@pytest.mark.parametrize("args,content,code", [
    (("tune", "missing.csv"), None, 1),
    (("tune",), None, 2),
    (("tune", "bad.txt"), "MIOpenDriver conv -n 1 -Z 3\n", 1),
    (("tune", "bad.txt"), "MIOpenDriver conv -n 1 -F 2\n", 1),
    (("tune", "bad.txt"), "MIOpenDriver conv -n x\n", 1),
    (("tune", "bad.txt"), "name,count,n\nx,1,1\n", 1),
    (("tune", "bad.txt"), "name,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,dil_h,dil_w,group\n"
                          "x,1,4,8,8,4,3,3,1,1,1,1,1,1,1,7\n", 1),
    (("db",), None, 2),
    (("db", "frobnicate"), None, 2),
    (("db", "show"), None, 2),
    (("db", "show", "v1;no-such-key"), None, 1),
    (("db", "import", "bad.txt"), '{"format":"convfind-db-record/1"}\n', 1),
])
def test_bad_input_one_line(cli, tmp_path, args, content, code):
    if content is not None:
        (tmp_path / "bad.txt").write_text(content)
    args = [tmp_path / a if a in ("bad.txt", "missing.csv") else a for a in args]
    r = run(cli, tmp_path, *args)
    assert r.returncode == code, (r.stdout, r.stderr)
    assert len(r.stderr.strip().split("\n")) == 1, r.stderr
