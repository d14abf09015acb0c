"""test_cli_db.py - end-to-end tests of `convfind tune` and `convfind db`.

Tiny problems and a short Find budget keep it fast.  Checks the exact last line of
`tune`, that a second run measures nothing (exhaustive neither; --retune everything),
that a decision of low confidence is re-timed by a tune with a larger budget (issue 16:
conv1), that another thread count's records seed a re-time, how `db show` reports how a
decision was measured, the three problem-file formats (the
key=value problem list, the CSV shorthand, MIOpenDriver lines), .onnx models through a
stand-in `convfind.onnx` module, --json and --progress, options on either side of the
positional arguments, every `db` subcommand, and that bad input gives a non-zero exit
with one line on stderr.
"""
import json
import os
import re
import subprocess

import pytest

CLI = os.environ.get("CONVFIND_CLI", "")
LAST = re.compile(r"^tuned=(\d+) failed=(\d+) finds=(\d+) db_hits=(\d+) seeded=(\d+) "
                  r"unstored=(\d+) seconds=\d+\.\d\d$")

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


def run(cli, tmp_path, *args, stdin=None, env=None):
    full = dict(os.environ, CONVFIND_DB_PATH=str(tmp_path / "f.sqlite"), **(env or {}))
    full.pop("CONVFIND_SYSTEM_DB", None)
    return subprocess.run([cli] + [str(a) for a in args], capture_output=True, text=True,
                          env=full, timeout=300, input=stdin)


@pytest.fixture
def lists(tmp_path):
    (tmp_path / "p.csv").write_text(CSV)
    (tmp_path / "m.txt").write_text(MIOPEN)
    return tmp_path / "p.csv", tmp_path / "m.txt"


def summary(r):
    """(tuned, finds, db_hits, seeded) of tune's last line, which must report no failure
    and nothing unstored."""
    m = LAST.match(r.stdout.rstrip("\n").split("\n")[-1])
    assert m, r.stdout
    tuned, failed, finds, hits, seeded, unstored = (int(g) for g in m.groups())
    assert failed == 0 and unstored == 0, r.stdout
    return tuned, finds, hits, seeded


def last_line(r):
    """(tuned, finds, db_hits) of tune's last line (see summary)."""
    return summary(r)[:3]


def test_second_tune_measures_nothing(cli, tmp_path, lists):
    r = run(cli, tmp_path, "tune", *lists, "--budget-ms", "20", "--progress")
    assert r.returncode == 0, r.stderr
    assert last_line(r) == (5, 4, 0)
    assert "[5/5]" in r.stderr and "[5/5]" not in r.stdout  # piped: one line per problem
    assert "measured" in r.stdout
    r = run(cli, tmp_path, "tune", "--budget-ms", "20", *lists)
    assert r.returncode == 0, r.stderr
    assert last_line(r) == (5, 0, 5)
    assert "measured" not in r.stdout
    # Exhaustive uses stored decisions too (as MIOpen's find-db does); --retune measures
    # on purpose, under either policy, and replaces what is stored.
    r = run(cli, tmp_path, "tune", "--policy", "exhaustive", "--budget-ms", "20", lists[0])
    assert last_line(r) == (3, 0, 3)
    r = run(cli, tmp_path, "tune", "--retune", "--budget-ms", "20", lists[0])
    assert last_line(r) == (3, 3, 0)
    r = run(cli, tmp_path, "tune", "--policy", "exhaustive", "--retune", "--budget-ms", "20",
            lists[0], "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["finds"], out["db_hits"], out["seeded"]) == (3, 0, 0)
    assert {p["source"] for p in out["problems"]} == {"measured"}


CONV1 = CSV.splitlines()[0] + "\nconv1,1,1,3,224,224,64,7,7,3,3,2,2,1,1,1\n"


def shown(cli, tmp_path, key):
    """`db show KEY --json`'s only record."""
    out = json.loads(run(cli, tmp_path, "db", "show", key, "--json").stdout)
    assert len(out["records"]) == 1
    return out["records"][0]


def test_low_confidence_is_retimed_with_a_larger_budget(cli, tmp_path):
    """Issue 16: `tune --budget-ms 50` stored ResNet-50's conv1 -> cpu.direct_blocked at
    12 ms where cpu.direct_small_c takes 1.3 ms, because the budget was spent before the
    faster candidates ran, and later tunes kept it forever.  Since then a CPU Find looks
    past its budget (every candidate gets its check and one sample), and a decision that
    rests on one sample is of low confidence: a 1 ms budget makes that certain on any
    machine, and the next tune with a larger budget measures it again.  That budget is
    far above what the three candidates need (a minute): under the sanitizers one run of
    cpu.direct_blocked takes ~0.2 s, and the default 1 s left a candidate untimed."""
    (tmp_path / "conv1.csv").write_text(CONV1)
    r = run(cli, tmp_path, "tune", "--budget-ms", "1", "--threads", "1", tmp_path / "conv1.csv")
    assert summary(r) == (1, 1, 0, 0)
    key = run(cli, tmp_path, "db", "list").stdout.split("\t")[0]
    record = shown(cli, tmp_path, key)
    m = record["measured"]
    assert m["budget_ms"] == 1 and m["confidence"] == "low", m
    assert m["reasons"] == ["timed once"] and m["untimed"] == 0, m
    looked = [c for c in record["candidates"]
              if c["algo"] != "cpu.reference" and c["status"] != "not_applicable"]
    assert len(looked) == 3 and all(c["repeats"] == 1 for c in looked), record
    r = run(cli, tmp_path, "db", "show", key)
    assert "find:      budget 1 ms, spread" in r.stdout and "low: timed once" in r.stdout
    # The same budget again would spend it the same way: kept.
    r = run(cli, tmp_path, "tune", "--budget-ms", "1", "--threads", "1", tmp_path / "conv1.csv")
    assert summary(r) == (1, 0, 1, 0)
    r = run(cli, tmp_path, "tune", "--budget-ms", "60000", "--threads", "1",
            tmp_path / "conv1.csv")
    assert summary(r) == (1, 1, 0, 0)
    assert "measured" in r.stdout
    record = shown(cli, tmp_path, key)
    assert record["measured"]["budget_ms"] == 60000, record
    fast = [c for c in record["candidates"]
            if c["algo"] != "cpu.reference" and c["status"] != "not_applicable"]
    assert len(fast) == 3 and all(c["repeats"] > 0 for c in fast), record
    # The reference, never started once the others measured, is not "untimed".
    assert record["measured"]["untimed"] == 0, record
    assert not {"candidates untimed", "timed once"} & set(record["measured"]["reasons"])
    # Measured with that budget now: the next tune with it keeps the decision.
    r = run(cli, tmp_path, "tune", "--budget-ms", "60000", "--threads", "1",
            tmp_path / "conv1.csv")
    assert summary(r) == (1, 0, 1, 0)


def test_other_thread_count_seeds(cli, tmp_path, lists):
    r = run(cli, tmp_path, "tune", "--threads", "2", "--budget-ms", "20", lists[0])
    assert summary(r) == (3, 3, 0, 0)
    # One thread: a new key per problem, each seeded by its two-thread record.
    r = run(cli, tmp_path, "tune", "--threads", "1", "--budget-ms", "20", lists[0], "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["finds"], out["db_hits"], out["seeded"]) == (3, 0, 3)
    # Exhaustive never seeds: a full Find for each.
    r = run(cli, tmp_path, "tune", "--threads", "3", "--budget-ms", "20", "--policy",
            "exhaustive", lists[0])
    assert summary(r) == (3, 3, 0, 0)
    # Only the same problem seeds: the MIOpenDriver list repeats a_3x3 (stored for one
    # thread by now) and adds a problem no record has.
    r = run(cli, tmp_path, "tune", "--threads", "1", "--budget-ms", "20", lists[1])
    assert summary(r) == (2, 1, 1, 0)


def test_csv_without_count(cli, tmp_path):
    lines = CSV.splitlines()
    no_count = [",".join(f for i, f in enumerate(line.split(",")) if i != 1) for line in lines]
    (tmp_path / "nc.csv").write_text("\n".join(no_count) + "\n")
    r = run(cli, tmp_path, "tune", "--budget-ms", "20", tmp_path / "nc.csv")
    assert r.returncode == 0, r.stderr
    assert last_line(r) == (3, 3, 0)


# The suite format of data/suites in full: columns in another order, 1-D and 3-D, ConvTranspose
# with asymmetric pads and output padding, groups, bias and every kind of activation.
SUITE = """k,name,count,op,dims,n,c,d,h,w,t,r,s,pads,stride_d,stride_h,stride_w,dil_w,output_padding,group,bias,act,alpha,beta
4,line,1,conv,1,1,2,,,13,,,3,,,,2,2,,1,0,leaky_relu,0.2,
6,up3d,2,convT,3,1,4,3,4,5,2,2,3,0 1 0 1 0 2,2,2,1,1,1 0 0,2,1,clip,-1,6
8,dw,1,,,1,8,,9,9,,3,3,1 1 1 1,,2,2,,,8,0,hard_sigmoid,0.2,0.5
3,plain,1,,,2,5,,6,7,,1,1,,,,,,,1,1,,,
"""


def test_suite_csv_means_what_the_benchmark_reads(cli, tmp_path):
    """The C reader and bench/suite_format.py give every row the same problem: tuning the
    CSV and tuning a problem list written from the Python reader's layers store the same
    keys."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
    import suite_format
    (tmp_path / "s.csv").write_text(SUITE)
    lines = []
    for lay in suite_format.read_suite(tmp_path / "s.csv"):
        w = (lay.c, lay.k // lay.group) if lay.op == "convT" else (lay.k, lay.c // lay.group)
        ints = lambda v: ",".join(map(str, v))
        tokens = ["name=" + lay.name, "count=%d" % lay.count,
                  "op=" + ("conv_transpose" if lay.op == "convT" else "conv"),
                  "x=" + ints((lay.n, lay.c) + lay.x), "w=" + ints(w + lay.kern),
                  "group=%d" % lay.group, "pads=" + ints(lay.pads),
                  "strides=" + ints(lay.stride), "dilations=" + ints(lay.dil),
                  "bias=%d" % lay.bias, "act=" + lay.act]
        if lay.op == "convT":
            tokens.append("output_padding=" + ints(lay.opad))
        params = {"leaky_relu": 1, "clip": 2, "hard_sigmoid": 2}.get(lay.act, 0)
        tokens += ["alpha=%r" % lay.alpha, "beta=%r" % lay.beta][:params]
        lines.append(" ".join(tokens))
    (tmp_path / "s.txt").write_text("\n".join(lines) + "\n")
    keys = {}
    for f in ("s.csv", "s.txt"):
        db = tmp_path / (f + ".sqlite")
        r = run(cli, tmp_path, "tune", "--budget-ms", "1", "--db", db, tmp_path / f, "--json")
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert [p["name"] for p in out["problems"]] == ["line", "up3d", "dw", "plain"]
        assert [p["count"] for p in out["problems"]] == [1, 2, 1, 1]
        r = run(cli, tmp_path, "db", "list", "--json", "--db", db)
        keys[f] = sorted(x["key"] for x in json.loads(r.stdout)["records"])
    assert len(keys["s.csv"]) == 4 and keys["s.csv"] == keys["s.txt"], keys


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
    for args in (["db", "--json", "list"], ["db", "list", "--json"]):
        listed = json.loads(run(cli, tmp_path, *args).stdout)
        assert [x["key"] for x in listed["records"]] == [row.split("\t")[0] for row in rows]
        assert all(x["environment"]["current"] for x in listed["records"])
    shown = json.loads(run(cli, tmp_path, "db", "show", key, "--json").stdout)
    assert shown["records"][0]["candidates"][0]["status"] in ("ok", "failed")
    stats = json.loads(run(cli, tmp_path, "db", "stats", "--json").stdout)
    assert stats["records"] == 3 and stats["exists"] is True
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
    (("tune", "bad.txt"), "MIOpenDriver conv -n 1 -Q 3\n", 1),
    (("tune", "bad.txt"), "MIOpenDriver conv -n 1 -Z 3\n", 1),
    (("tune", "bad.txt"), "x=1,4,6,6 w=4,4,3,3 pads=1,x\n", 1),
    (("tune", "bad.txt"), "x=1,4,6,6 w=4,4,3,3 color=red\n", 1),
    (("tune", "bad.txt"), "x=1,4,6,6\n", 1),
    (("tune", "bad.txt"), "x=1,4,6,6 w=4,4,3,3 act=relu alpha=0.1\n", 1),
    (("tune", "bad.txt"), "# only a comment\n", 1),
    (("tune", "model.onnx", "--input-shape", "x"), None, 1),
    (("tune", "bad.txt", "--input-shape", "x"), "x=1,4,6,6 w=4,4,3,3\n", 2),
    (("tune", "bad.txt"), "MIOpenDriver conv -n 1 -F 2\n", 1),
    (("tune", "bad.txt"), "MIOpenDriver conv -n x\n", 1),
    (("tune", "bad.txt"), "name,count,n\nx,1,1\n", 1),
    (("tune", "bad.txt"), "name,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,dil_h,dil_w,group\n"
                          "x,1,4,8,8,4,3,3,1,1,1,1,1,1,1,7\n", 1),
    (("db",), None, 2),
    (("db", "frobnicate"), None, 2),
    (("db", "show"), None, 2),
    (("db", "list", "extra"), None, 2),
    (("db", "--budget-ms", "1", "list"), None, 2),
    (("db", "show", "v1;no-such-key"), None, 1),
    (("db", "import", "bad.txt"), '{"format":"convfind-db-record/1"}\n', 1),
])
def test_bad_input_one_line(cli, tmp_path, args, content, code):
    if content is not None:
        (tmp_path / "bad.txt").write_text(content)
    args = [tmp_path / a if a in ("bad.txt", "missing.csv", "model.onnx") else a for a in args]
    r = run(cli, tmp_path, *args)
    assert r.returncode == code, (r.stdout, r.stderr)
    assert len(r.stderr.strip().split("\n")) == 1, r.stderr


# One problem of each kind the problem list can express, and the expected key fields.
LIST = """# a problem list: key=value tokens with ONNX meanings
name=plain x=1,4,6,6 w=8,4,3,3 pads=1,1,1,1
name=fused count=2 x=1,4,6,6 w=4,4,1,1 bias=1 residual=1 act=leaky_relu alpha=0.2 weights=const
name=nhwc x=1,4,7,7 w=4,1,3,3 group=4 strides=2,2 auto_pad=same_upper layout=nhwc  # depthwise
name=dil x=1,4,9,9 w=4,4,3,3 dilations=2,2 pads=0,1,2,1 act=clip alpha=0 beta=6
name=up op=conv_transpose x=1,4,5,5 w=4,2,3,3 strides=2,2 output_padding=1,1 group=1 weights=var
name=shaped op=conv_transpose x=1,4,5,5 w=4,2,3,3 strides=2,2 output_shape=10,10
name=conv1d x=1,3,11 w=4,3,3 kernel_shape=3 pads=1,1 math=strict dtype=f32 act=hard_sigmoid
"""


def test_problem_list_format(cli, tmp_path):
    (tmp_path / "l.txt").write_text(LIST)
    r = run(cli, tmp_path, "tune", tmp_path / "l.txt", "--budget-ms", "20", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    names = [p["name"] for p in out["problems"]]
    assert names == ["plain", "fused", "nhwc", "dil", "up", "shaped", "conv1d"]
    assert out["tuned"] == 7 and out["failed"] == 0 and out["unstored"] == 0
    by = {p["name"]: p for p in out["problems"]}
    assert by["fused"]["count"] == 2 and by["fused"]["weights"] == "const"
    assert by["up"]["weights"] == "var" and by["plain"]["weights"] is None
    keys = [x["key"] for x in json.loads(run(cli, tmp_path, "db", "list", "--json").stdout)["records"]]
    assert len(keys) == 7
    assert any(";nhwc;" in k and ";g=4;" in k and ";s=2x2;" in k for k in keys)
    assert any(";bias=1;z=1;act=leaky_relu" in k for k in keys), keys
    assert any(k.startswith("v2;convtranspose;") and ";opad=1,1;" in k for k in keys), keys


def test_long_names_and_hashes_inside_values(cli, tmp_path):
    name = "/backbone/stage3/" + "block" * 60 + "/conv#2"
    (tmp_path / "l.txt").write_text("name=%s x=1,4,6,6 w=4,4,3,3  # a comment\n" % name)
    r = run(cli, tmp_path, "tune", tmp_path / "l.txt", "--budget-ms", "20", "--json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)["problems"][0]["name"]
    assert name.startswith(got) and len(got) >= 95


def test_problem_list_errors_name_line_and_key(cli, tmp_path):
    (tmp_path / "l.txt").write_text("x=1,4,6,6 w=4,4,3,3\n\nx=1,4,6,6 w=4,4,3,3 strides=1,y\n")
    r = run(cli, tmp_path, "tune", tmp_path / "l.txt")
    assert r.returncode == 1
    assert r.stderr.strip() == ("convfind tune: %s:3: key 'strides': 'y' in '1,y' is not an "
                                "integer (expected a list like 1,2,3)" % (tmp_path / "l.txt"))


def test_options_on_either_side(cli, tmp_path):
    (tmp_path / "p.csv").write_text(CSV)
    db = tmp_path / "x.sqlite"
    r = run(cli, tmp_path, "tune", tmp_path / "p.csv", "--db", db, "--budget-ms", "20")
    assert r.returncode == 0, r.stderr
    assert last_line(r) == (3, 3, 0)
    r = run(cli, tmp_path, "db", "--db", db, "list")
    assert r.returncode == 0 and len(r.stdout.strip().split("\n")) == 3
    r = run(cli, tmp_path, "db", "--db", db, "--", "list")
    assert r.returncode == 0 and len(r.stdout.strip().split("\n")) == 3


def test_one_problem_from_flags(cli, tmp_path):
    r = run(cli, tmp_path, "tune", "conv", "-n", "1", "-c", "4", "-H", "6", "-W", "6", "-k", "4",
            "-t", "1", "--budget-ms", "20")
    assert r.returncode == 0, r.stderr
    assert last_line(r) == (1, 1, 0)
    r = run(cli, tmp_path, "tune", "--x-shape", "1,4,6,6", "--w-shape", "4,4,3,3", "--pads",
            "1,1,1,1", "--budget-ms", "20")
    assert r.returncode == 0 and last_line(r) == (1, 1, 0), r.stderr


def fake_module(tmp_path, body):
    """A stand-in convfind.onnx on PYTHONPATH, as the Python package provides it."""
    pkg = tmp_path / "py" / "convfind"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    if body is not None:
        (pkg / "onnx.py").write_text(body)
    return {"PYTHONPATH": str(tmp_path / "py")}


def test_onnx_model_through_the_python_module(cli, tmp_path):
    env = fake_module(tmp_path, "import sys\n"
                      "assert sys.argv[1].endswith('m.onnx') and sys.argv[2:] == "
                      "['--input-shape', 'in=1,4,6,6', '--math', 'tf32']\n"
                      "print('# m.onnx')\n"
                      "print('name=a#1 x=1,4,6,6 w=4,4,3,3 pads=1,1,1,1 weights=const # ok')\n"
                      "print('name=b x=1,4,6,6 w=8,4,1,1')\n")
    (tmp_path / "m.onnx").write_bytes(b"not read by the tool")
    r = run(cli, tmp_path, "tune", tmp_path / "m.onnx", "--input-shape", "in=1,4,6,6",
            "--math", "tf32", "--budget-ms", "20", env=env)
    assert r.returncode == 0, r.stderr
    assert last_line(r) == (2, 2, 0)


def test_onnx_without_the_module_says_so(cli, tmp_path):
    env = fake_module(tmp_path, None)
    (tmp_path / "m.onnx").write_bytes(b"")
    r = run(cli, tmp_path, "tune", tmp_path / "m.onnx", env=env)
    assert r.returncode == 1
    assert len(r.stderr.strip().split("\n")) == 1
    assert "convfind.onnx is not importable" in r.stderr, r.stderr


def test_inspection_of_a_missing_database(cli, tmp_path):
    db = tmp_path / "no" / "such.sqlite"
    r = run(cli, tmp_path, "db", "stats", "--db", db)
    assert r.returncode == 0 and "does not exist yet" in r.stdout
    r = run(cli, tmp_path, "db", "verify", "--db", db)
    assert r.returncode == 1 and "does not exist" in r.stderr
    assert not (tmp_path / "no").exists()
