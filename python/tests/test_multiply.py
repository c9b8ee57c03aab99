"""Multipliers from numpy: every mode's products against the spec's vectors
bit for bit, the 8-bit tables, the host GEMM, error statistics, and the
errors of bad operands."""
import numpy as np
import pytest

import amdnn
from conftest import read_vectors, same_bits


def test_modes_and_version():
    ms = amdnn.modes()
    assert ms[0] == "acc32" and "am16" in ms and "lut" in ms
    assert set(amdnn.mode_summaries()) == set(ms)
    assert "q8u:FILE" in amdnn.mode_choices()
    assert amdnn.__version__.count(".") == 2


@pytest.mark.parametrize("mode", read_vectors()[0])
def test_products_equal_the_spec_vectors(mode):
    names, rows = read_vectors()
    a, b = rows[:, 0].view(np.float32), rows[:, 1].view(np.float32)
    want = rows[:, 2 + names.index(mode)].view(np.float32)
    got = amdnn.multiply(a, b, mode)
    assert got.dtype == np.float32 and got.shape == a.shape
    bad = [i for i in range(len(a)) if not same_bits(got[i], want[i])]
    assert not bad, (f"{mode}: {len(bad)} of {len(a)} rows differ, first row {bad[0] + 2}: "
                     f"{a[bad[0]]!r} x {b[bad[0]]!r} = {got[bad[0]]!r}, the spec says {want[bad[0]]!r}")


def test_every_float_mode_has_vectors():
    names, _ = read_vectors()
    assert set(amdnn.modes()) - {"lut"} == set(names)


def test_multiply_broadcasts_and_takes_scalars():
    assert float(amdnn.multiply(1.5, 1.5, "am16")) == 2.109375  # docs/multipliers.md, section 6
    assert amdnn.multiply(1.5, 1.5, "am16").shape == ()
    out = amdnn.multiply(np.ones((3, 1), np.float32), np.full(4, 1.5, np.float32), "am32")
    assert out.shape == (3, 4) and np.all(out == amdnn.multiply(1, 1.5, "am32"))
    m = amdnn.Multiplier("mit16")
    assert float(m(np.float32(np.pi), np.float32(np.e))) == 7.6875
    # other real dtypes are rounded to fp32 first
    assert amdnn.multiply(np.float64(3.0), 2, "acc32") == np.float32(6.0)


def test_q8_exact_codes():
    u = np.arange(256, dtype=np.uint8)
    a, b = np.meshgrid(u, u, indexing="ij")
    assert np.array_equal(amdnn.multiply(a, b, "q8u:exact"), a.astype(np.int32) * b.astype(np.int32))
    s = u.view(np.int8)
    a, b = np.meshgrid(s, s, indexing="ij")
    got = amdnn.multiply(a, b, "q8s:exact")
    assert got.dtype == np.int32 and np.array_equal(got, a.astype(np.int32) * b.astype(np.int32))
    # integer codes of another dtype are taken when they fit
    assert amdnn.multiply(np.array([-3, 127]), np.array([7, -1]), "q8s:exact").tolist() == [-21, -127]


def test_q8_table_from_a_c_multiplier(tmp_path):
    """tools/mul8's truncated multiplier, tabulated by the project's own
    tools/tabulate_mul8.py: the products are the table's entries, and equal
    the definition (the exact product less the partial products of the 6 low
    columns)."""
    pytest.importorskip("shutil").which("cc") or pytest.skip("no C compiler")
    from conftest import REPO
    path = tmp_path / "trunc6.amdq8"
    table = amdnn.tabulate_c(REPO / "tools" / "mul8" / "mul8u_trunc6.c", "mul8u_trunc6", path)
    a, b = np.meshgrid(np.arange(256), np.arange(256), indexing="ij")
    dropped = np.zeros_like(a)
    for i in range(8):
        for j in range(8):
            if i + j < 6:
                dropped += ((a >> i) & 1) * ((b >> j) & 1) << (i + j)
    assert np.array_equal(table, a * b - dropped)
    got = amdnn.multiply(a.astype(np.uint8), b.astype(np.uint8), f"q8u:{path}")
    assert np.array_equal(got, table)
    st = amdnn.error_stats(f"q8u:{path}")
    info = amdnn.describe_table(path)
    assert st.n == 65536 and st.max_abs_error == info.max_abs_error == 321
    assert st.mean_abs_error == pytest.approx(info.mean_abs_error, rel=1e-12)
    assert st.mean_abs_rel_error == pytest.approx(info.mean_rel_error, rel=1e-12)
    assert st.bias == pytest.approx(-80.25, abs=1e-9)  # every error is a drop: the bias is -MAE (README: 80.25)
    assert st.error_rate == pytest.approx(info.n_diff / 65536)


@pytest.mark.parametrize("mode,mean,mean_abs", [("acc16", -0.81, 0.81), ("am16", -0.10, 2.60), ("mit16", -4.37, 4.37),
                                               ("am32", -0.10, 2.58), ("fp16", 0.0, 0.03)])
def test_error_stats_reproduce_the_spec(mode, mean, mean_abs):
    """docs/multipliers.md, section 6: the error of the product over random
    mantissas (mean, mean |.|), in percent to the two decimals it gives."""
    st = amdnn.error_stats(mode, n=400_000, seed=3)
    assert round(100 * st.mean_rel_error, 2) == pytest.approx(mean, abs=0.011)
    assert round(100 * st.mean_abs_rel_error, 2) == pytest.approx(mean_abs, abs=0.011)
    assert st.max_abs_rel_error >= st.mean_abs_rel_error >= abs(st.mean_rel_error)
    assert st.n == st.n_rel == 400_000


def test_error_stats_of_given_operands():
    a = np.array([1.5, 3.0, 0.0, np.inf], np.float32)
    b = np.array([1.5, 1.0, 2.0, 1.0], np.float32)
    st = amdnn.error_stats("am16", a, b)
    # MBM_7 (section 3): 1.5 x 1.5 = 2.109375 (exact 2.25); 3 x 1: S = 0.5 + 2 * 2^-7, plus K = 0.078125,
    # P = 2 * 1.59375 = 3.1875 (exact 3); 0 x 2 = 0 exactly; the Inf pair is left out
    e = np.array([2.109375 - 2.25, 3.1875 - 3.0, 0.0])
    assert st.n == 3 and st.n_rel == 2
    assert st.bias == pytest.approx(e.mean()) and st.max_abs_error == pytest.approx(0.1875)
    assert st.mean_rel_error == pytest.approx(((2.109375 - 2.25) / 2.25 + 0.1875 / 3) / 2)
    assert st.error_rate == pytest.approx(2 / 3)
    with pytest.raises(amdnn.ArgumentError):
        amdnn.error_stats("am16", a)


def test_matmul_is_the_sum_of_the_products():
    """amdnn.matmul: each output the fp32 sum in k order of amdnn.multiply's
    products (K under one K block), also batched and broadcast."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 5, 40)).astype(np.float32)
    b = rng.standard_normal((40, 6)).astype(np.float32)
    for mode in ("am16", "mit16", "acc16"):
        c = amdnn.matmul(a, b, mode)
        p = amdnn.multiply(a[:, :, :, None], b[None, None, :, :], mode)  # [3, 5, 40, 6]
        ref = np.zeros((3, 5, 6), np.float32)
        for k in range(40):
            ref = ref + p[:, :, k, :]
        assert same_bits(c, ref), mode
    bb = rng.standard_normal((3, 40, 6)).astype(np.float32)
    c = amdnn.matmul(a, bb, "am16")
    assert same_bits(c[1], amdnn.matmul(a[1], bb[1], "am16"))


def test_bad_operands_raise():
    with pytest.raises(amdnn.ArgumentError, match="am17"):
        amdnn.multiply(1.0, 1.0, "am17")
    with pytest.raises(ValueError, match="broadcast"):
        amdnn.multiply(np.ones(3, np.float32), np.ones(4, np.float32), "am16")
    with pytest.raises(amdnn.ArgumentError, match="uint8"):
        amdnn.multiply(np.ones(3, np.float32), np.ones(3, np.float32), "q8u:exact")
    with pytest.raises(amdnn.ArgumentError, match=r"\[0, 255\]"):
        amdnn.multiply(np.array([256]), np.array([1]), "q8u:exact")
    with pytest.raises(amdnn.ArgumentError, match="complex"):
        amdnn.multiply(np.ones(2, np.complex64), np.ones(2, np.float32), "am16")
    with pytest.raises(amdnn.FailedError, match="nonexistent"):
        amdnn.multiply(1.0, 1.0, "lut:/nonexistent/table.lut")
    with pytest.raises(amdnn.ArgumentError, match="8-bit"):
        amdnn.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), "q8u:exact")
    with pytest.raises(amdnn.ArgumentError, match="4 columns against 3 rows"):
        amdnn.matmul(np.ones((2, 4), np.float32), np.ones((3, 2), np.float32), "am16")
