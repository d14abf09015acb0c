"""test_cli_fleet.py - the fleet tier through the convfind tool: `tune` processes standing
in for machines share decisions through one server ($CONVFIND_FLEET_DB), and `convfind db
--fleet URL` looks into and maintains that server (stats, list, show, export, import,
prune).  The server is the test's own (pg_fixture.sh); without the server binaries or
libpq every test here is skipped with the reason."""
import json
import os
import pathlib
import subprocess
import tempfile

import pytest

CLI = os.environ.get("CONVFIND_CLI", "")
FIXTURE = os.environ.get("CONVFIND_PG_FIXTURE", "")
SECRET = "Sup3rS3cretPw"

# Small problems, so that Find is short and the machines really run at the same time.
PROBLEMS = """name,count,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,dil_h,dil_w,group
a,1,1,8,12,12,8,3,3,1,1,1,1,1,1,1
b,1,1,8,12,12,16,1,1,0,0,1,1,1,1,1
c,1,1,16,10,10,8,3,3,1,1,2,2,1,1,1
d,1,1,4,14,14,8,3,3,0,0,1,1,1,1,1
e,1,1,8,9,9,8,5,5,2,2,1,1,1,1,1
f,1,1,16,8,8,16,1,1,0,0,1,1,1,1,1
"""


def fixture(*args):
    return subprocess.run([FIXTURE] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def server():
    if not CLI or not FIXTURE:
        pytest.fail("CONVFIND_CLI and CONVFIND_PG_FIXTURE must be set")
    tmp = tempfile.mkdtemp(prefix="convfind-fleetcli-")
    r = fixture("start", tmp)
    if r.returncode == 77:
        pytest.skip(r.stderr.strip())
    assert r.returncode == 0, r.stderr
    yield {"dir": pathlib.Path(tmp), "url": r.stdout.strip()}
    fixture("destroy", tmp)
    subprocess.run(["rm", "-rf", tmp])


def tool(*args, fleet=None, **kw):
    env = dict(os.environ)
    env.pop("CONVFIND_FLEET_DB", None)
    if fleet is not None:
        env["CONVFIND_FLEET_DB"] = fleet
    return subprocess.run([CLI] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=300, env=env, **kw)


def tune(csv, db, fleet, **kw):
    args = ["tune", csv, "--db", db, "--threads", "1", "--budget-ms", "20", "--json"]
    return tool(*args, fleet=fleet, **kw)


def finds(result):
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["finds"]


def test_machines_tuning_at_once_measure_each_problem_once(server, tmp_path):
    csv = tmp_path / "problems.csv"
    csv.write_text(PROBLEMS)
    procs = [subprocess.Popen([CLI, "tune", csv, "--db", tmp_path / ("m%d.sqlite" % m),
                               "--threads", "1", "--budget-ms", "20", "--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, CONVFIND_FLEET_DB=server["url"]))
             for m in range(3)]
    total = 0
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert "warning" not in err, err
        total += json.loads(out)["finds"]
    assert total == 6, "%d Finds across 3 machines for 6 problems" % total
    # A machine joining later measures nothing, and keeps what it got on its own disk.
    assert finds(tune(csv, tmp_path / "late.sqlite", server["url"])) == 0
    assert finds(tune(csv, tmp_path / "late.sqlite", "")) == 0


def test_db_fleet_commands(server, tmp_path):
    url = server["url"]
    csv = tmp_path / "one.csv"
    csv.write_text(PROBLEMS.splitlines()[0] + "\ng,1,1,4,6,6,4,3,3,1,1,1,1,1,1,1\n")
    assert finds(tune(csv, tmp_path / "x.sqlite", url)) == 1
    stats = json.loads(tool("db", "stats", "--json", "--fleet", url).stdout)
    assert stats["records"] >= 1 and stats["current"] == stats["records"]
    assert stats["database"].startswith("host=") and "user=convfind" in stats["database"]
    listed = json.loads(tool("db", "list", "--json", "--fleet", url).stdout)["records"]
    assert len(listed) == stats["records"]
    key = [r["key"] for r in listed if "c=4;in=6x6" in r["key"]][0]
    shown = tool("db", "show", key, "--fleet", url)
    assert shown.returncode == 0 and "candidate" in shown.stdout
    assert tool("db", "path", "--fleet", url).stdout.strip() == stats["database"]

    # export -> a fresh database on the same server -> import: the same records.
    export = tmp_path / "fleet.jsonl"
    assert tool("db", "export", export, "--fleet", url).returncode == 0
    assert len(export.read_text().splitlines()) == stats["records"]
    fixture("sql", server["dir"], "CREATE DATABASE copy")
    copy = url.replace("dbname=postgres", "dbname=copy")
    r = tool("db", "import", export, "--fleet", copy, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["imported"] == stats["records"]
    assert tool("db", "export", "-", "--fleet", copy).stdout == export.read_text()

    # prune: expired leases and unreadable rows go, other environments' records stay.
    fixture("sql", server["dir"], "INSERT INTO convfind_fleet_leases VALUES "
            "('k', 'e', 'o', 'h', now() - interval '1 hour')")
    fixture("sql", server["dir"], "INSERT INTO convfind_fleet_decisions SELECT key, "
            "library_version, backend_versions, 'other-device', algo, decision, "
            "bad_candidates, host, created_at FROM convfind_fleet_decisions LIMIT 1")
    fixture("sql", server["dir"], "INSERT INTO convfind_fleet_decisions VALUES ('v1;bad', "
            "'0', 'cpu', 'd', 'x', 'not json', '', 'h', 0)")
    r = tool("db", "prune", "--json", "--fleet", url)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["pruned"] == 2
    after = json.loads(tool("db", "stats", "--json", "--fleet", url).stdout)
    assert after["leases"] == 0 and after["unreadable"] == 0
    assert after["foreign"] == 1 and after["records"] == stats["records"] + 1

    # Not for the fleet tier, or not together with it: usage errors.
    assert tool("db", "verify", "--fleet", url).returncode == 2
    assert tool("db", "vacuum", "--fleet", url).returncode == 2
    assert tool("db", "list", "--fleet", url, "--db", tmp_path / "y.sqlite").returncode == 2


def test_password_never_printed(server, tmp_path):
    dead = "postgresql://convfind:%s@/postgres?host=%s/nothing-here" % (SECRET, server["dir"])
    wrong = "host=%s/pg user=secretuser password=%s dbname=postgres" % (server["dir"], SECRET)
    for url in (dead, wrong):
        r = tool("db", "stats", "--fleet", url)
        assert r.returncode == 1 and "fleet tier" in r.stderr, r.stderr
        assert SECRET not in r.stdout + r.stderr
        # A tune run without its fleet tier works from its own disk, says so once.
        csv = tmp_path / "p.csv"
        csv.write_text(PROBLEMS.splitlines()[0] + "\nh,1,1,4,5,5,4,1,1,0,0,1,1,1,1,1\n")
        r = tune(csv, tmp_path / "alone.sqlite", url)
        assert r.returncode == 0, r.stderr
        assert r.stderr.count("warning") == 1 and "fleet tier" in r.stderr, r.stderr
        assert SECRET not in r.stdout + r.stderr
