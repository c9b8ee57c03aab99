"""Multiplier tables: a mode's table, 16-bit tables from a Python function,
8-bit tables from a function, an array or a C file, reading them back and
describing them (against `amdnn-onnx lut --describe`)."""
import hashlib
import re
import shutil

import numpy as np
import pytest

import amdnn
from conftest import REPO, read_vectors, run_cli, same_bits

# docs/multipliers.md, section 5
SHA_MBM7 = "dc2c5c50eb820657f593fde6927a18fbb591582e5e050d8cb727895f9a350d7a"
SHA_ACC7 = "96a1b918f9dea7db98eceb484d1b606e3cf60982274d7443b9ed65baf4dfcbee"


def _vectors_ab():
    names, rows = read_vectors()
    return rows[:, 0].view(np.float32), rows[:, 1].view(np.float32), names, rows


def test_mode_table_round_trip(tmp_path):
    """am16's table is MBM_7's (its SHA-256 is the spec's), and lut: of it equals am16 on every vector."""
    path = tmp_path / "am16.lut"
    amdnn.write_table("am16", path)
    data = path.read_bytes()
    assert len(data) == 16384 and hashlib.sha256(data).hexdigest() == SHA_MBM7 and data[8256] == 0x87
    a, b, _, _ = _vectors_ab()
    assert same_bits(amdnn.multiply(a, b, f"lut:{path}"), amdnn.multiply(a, b, "am16"))
    info = amdnn.describe_table(path)
    assert info.lut_bits == 7 and info.sha256 == SHA_MBM7 and info.bytes == 16384


def test_lut_from_a_python_function(tmp_path):
    """The exact significand product, truncated to 7 bits, is the bfloat16
    multiplier: the ACC_7 table, and lut: of it equals acc16 on normal operands."""
    path = tmp_path / "trunc7.lut"
    data = amdnn.write_lut(path, lambda x, y: x * y)
    assert hashlib.sha256(data).hexdigest() == SHA_ACC7 == amdnn.describe_table(path).sha256
    # a function of two floats (no numpy) gives the same table
    assert amdnn.lut_from_function(lambda x, y: float(x) * float(y) if isinstance(x, float) else None) == data
    a, b, names, rows = _vectors_ab()
    normal = (((rows[:, 0] >> 23) & 255) != 0) & (((rows[:, 1] >> 23) & 255) != 0)
    normal &= (((rows[:, 0] >> 23) & 255) != 255) & (((rows[:, 1] >> 23) & 255) != 255)
    got = amdnn.multiply(a[normal], b[normal], f"lut:{path}")
    want = rows[normal, 2 + names.index("acc16")].view(np.float32)
    # acc16 keeps products that underflow to subnormals, the lut: rules flush them (section 2): normal results only
    keep = np.abs(want) >= np.finfo(np.float32).tiny
    assert keep.sum() > 1900 and same_bits(got[keep], want[keep])
    with pytest.raises(amdnn.ArgumentError, match="in \\[1, 4\\)"):
        amdnn.lut_from_function(lambda x, y: x * y * 3)
    with pytest.raises(amdnn.ArgumentError, match="bits 9"):
        amdnn.lut_from_function(lambda x, y: x * y, bits=9)


@pytest.mark.parametrize("signed", [False, True])
def test_q8_table_from_a_function_round_trips(tmp_path, signed):
    """A table written from a function reads back entry for entry, multiplies
    as its entries, and the .bin format holds the same table."""
    def drop4(a, b):  # the exact product with its low 4 bits cleared (the README's mine.c)
        return (a * b) & ~0xF
    path = tmp_path / "t.amdq8"
    t = amdnn.write_q8_table(path, drop4, signed=signed)
    codes = np.arange(256, dtype=np.uint8)
    c = codes.view(np.int8) if signed else codes
    a, b = np.meshgrid(c, c, indexing="ij")
    assert np.array_equal(t, (a.astype(np.int64) * b & ~0xF).astype(np.int32))
    back = amdnn.read_q8_table(path)
    assert back.signed == signed and np.array_equal(back.table, t)
    mode = f"q8{'s' if signed else 'u'}:{path}"
    assert np.array_equal(amdnn.multiply(a, b, mode), t)
    # from the array itself, in TFApprox's .bin format
    bpath = tmp_path / "t.bin"
    amdnn.write_q8_table(bpath, t, signed=signed, format="bin")
    assert bpath.stat().st_size == 131072
    assert np.array_equal(amdnn.read_q8_table(bpath, bin_signed=signed).table, t)
    # a scalar-only function (an if on the operands) gives the same table
    scalar = amdnn.q8_table_from_function(lambda x, y: (x * y) & ~0xF if isinstance(x, int) else None, signed)
    assert np.array_equal(scalar, t)


def test_q8_table_errors(tmp_path):
    with pytest.raises(amdnn.ArgumentError, match="65536"):
        amdnn.write_q8_table(tmp_path / "x", np.zeros(100, np.int32))
    with pytest.raises(amdnn.ArgumentError, match="outside"):
        amdnn.write_q8_table(tmp_path / "x", np.full(65536, 1 << 20))
    with pytest.raises(amdnn.ArgumentError):
        amdnn.write_q8_table(tmp_path / "x.bin", np.full(65536, -1), signed=False, format="bin")
    with pytest.raises(amdnn.FailedError, match="nonexistent"):
        amdnn.read_q8_table(tmp_path / "nonexistent.amdq8")
    with pytest.raises(amdnn.FailedError):
        amdnn.describe_table(tmp_path / "nonexistent")


@pytest.mark.cli
def test_tabulate_c_is_the_tools_script(tmp_path):
    """tabulate_c runs the project's tools/tabulate_mul8.py: the same bytes as
    the script run by hand; a broken C file is an exception with the
    compiler's message."""
    if not shutil.which("cc"):
        pytest.skip("no C compiler")
    import subprocess
    import sys
    src = REPO / "tools" / "mul8" / "mul8s_trunc6.c"
    amdnn.tabulate_c(src, "mul8s_trunc6", tmp_path / "a.amdq8")
    subprocess.run([sys.executable, str(REPO / "tools" / "tabulate_mul8.py"), str(src), "mul8s_trunc6", "-o",
                    str(tmp_path / "b.amdq8")], check=True)
    assert (tmp_path / "a.amdq8").read_bytes() == (tmp_path / "b.amdq8").read_bytes()
    assert amdnn.read_q8_table(tmp_path / "a.amdq8").signed
    bad = tmp_path / "bad.c"
    bad.write_text("int mul8u_bad(unsigned char a, unsigned char b) { return a * b\n")
    with pytest.raises(amdnn.FailedError, match="compiling"):
        amdnn.tabulate_c(bad, "mul8u_bad", tmp_path / "c.amdq8")


@pytest.mark.cli
def test_describe_equals_the_cli(tmp_path):
    """describe_table's numbers are `amdnn-onnx lut --describe`'s."""
    path = tmp_path / "bam.amdq8"
    t = amdnn.write_q8_table(path, lambda a, b: sum(((a >> i) & 1) * ((b >> j) & 1) << (i + j)
                                                    for j in range(1, 8) for i in range(8) if i + j >= 6))
    out = run_cli("lut", "--describe", path).stdout
    info = amdnn.describe_table(path)
    assert info.sha256 in out and f"{info.bytes} bytes" in out
    assert re.search(rf"range:\s+{info.lo} \.\. {info.hi}", out)
    assert re.search(rf"differ:\s+{info.n_diff} of 65536", out)
    assert re.search(rf"mean \|e\|:\s+{info.mean_abs_error:.4f}", out)
    assert re.search(rf"max \|e\|:\s+{info.max_abs_error}\b", out)
    assert info.bilinear and "bilinear" in out
    # the broken-array multiplier keeps the partial products j >= 1, i + j >= 6: weight 1 there, 0 elsewhere
    w = info.bit_weights
    assert all(w[i][j] == (1.0 if j >= 1 and i + j >= 6 else 0.0) for i in range(8) for j in range(8))
    assert info.lo == int(t.min()) and info.hi == int(t.max())
