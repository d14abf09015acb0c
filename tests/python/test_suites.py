"""test_suites.py - the benchmark suites in data/suites and their format (bench/suite_format.py).

The suites are generated; these tests keep the committed files equal to what
data/gen_suites.py writes (its architecture checks included) and check the reader on
the legacy files, on the richer columns and on malformed input.  No timing here.
"""
import filecmp
import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bench"))
import suite_format as sf  # noqa: E402


def test_generated_suites_are_current(tmp_path):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "data", "gen_suites.py"),
                          str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "FAIL" not in out.stdout
    committed = os.path.join(ROOT, "data", "suites")
    names = sorted(os.listdir(tmp_path))
    assert names == sorted(os.listdir(committed))
    _, mismatch, errors = filecmp.cmpfiles(tmp_path, committed, names, shallow=False)
    assert not mismatch and not errors, f"stale: {mismatch + errors}; rerun data/gen_suites.py"


@pytest.mark.parametrize("name,rows,convs", [("resnet50_convs.csv", 23, 53),
                                             ("mobilenetv2_convs.csv", 30, 52)])
def test_legacy_files_read(name, rows, convs):
    layers = sf.read_suite(os.path.join(ROOT, "data", name))
    assert len(layers) == rows and sum(lay.count for lay in layers) == convs
    assert sf.needed_columns(layers) == sf.LEGACY_HEADER


def test_rich_rows(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text("# a comment\n"
                 "name,op,dims,n,c,h,w,k,r,s,stride_h,stride_w,pads,output_padding,bias,act,beta\n"
                 "up,convT,2,2,8,5,7,4,3,3,2,2,1 0 1 1,1 0,1,clip,6\n")
    (lay,) = sf.read_suite(str(p))
    assert lay.pads == (1, 0, 1, 1) and lay.opad == (1, 0) and lay.count == 1
    # (x - 1) * stride + kernel - pads + output_padding, per dim
    assert lay.out_spatial() == ((5 - 1) * 2 + 3 - 2 + 1, (7 - 1) * 2 + 3 - 1)
    assert lay.macs() == 2 * 8 * 5 * 7 * 4 * 9
    back = sf.Layer.from_wire(lay.wire(), name=lay.name, count=lay.count)
    assert back == lay
    out = tmp_path / "w.csv"
    sf.write_suite(str(out), [lay])
    assert sf.read_suite(str(out)) == [lay]


def test_three_d_and_one_d(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text("name,dims,n,c,d,h,w,k,t,r,s,pad_d,pad_h,pad_w\nv,3,1,3,16,112,112,64,3,7,7,1,3,3\n")
    (lay,) = sf.read_suite(str(p))
    assert lay.out_spatial() == (16, 112, 112)
    p.write_text("name,dims,n,c,w,k,s,stride_w\na,1,1,1,16000,512,10,5\n")
    (lay,) = sf.read_suite(str(p))
    assert lay.out_spatial() == (3199,)


@pytest.mark.parametrize("text,message", [
    ("name,n,c,h,w,k,r,s,colour\na,1,1,4,4,1,1,1,red\n", "unknown column"),
    ("name,n,c,h,w,k,r,s,pads\na,1,1,4,4,1,1,1,1 1\n", "pads has 2 values"),
    ("name,n,c,d,h,w,k,r,s\na,1,1,2,4,4,1,1,1\n", "d given for a 2-D layer"),
    ("name,n,c,h,w,k,r,s,output_padding\na,1,1,4,4,1,1,1,1 1\n", "only convT"),
    ("name,n,c,h,w,k,r,s,group\na,1,3,4,4,2,1,1,2\n", "does not divide"),
    ("name,n,c,h,w,k,r,s\na,1,1,2,2,1,3,3\n", "output would be empty"),
    ("name,n,c,h,w,k,r,s\na,1,x,2,2,1,1,1\n", "'x' is not an integer"),
    ("name,n,c,h,w,k,r,s\na,1,1,4,4,1,1,1\na,1,1,4,4,1,1,1\n", "names repeat"),
])
def test_malformed(tmp_path, text, message):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(sf.SuiteError, match=message):
        sf.read_suite(str(p))
