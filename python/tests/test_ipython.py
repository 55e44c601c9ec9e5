"""The %%zynml cell magic in an IPython shell."""
import numpy as np
import pytest

IPython = pytest.importorskip("IPython")
from IPython.testing.globalipapp import start_ipython  # noqa: E402

CELL = """
def double(x: tensor[n, f32]) {
    return compute(x) {
        @kernel elementwise
        for i in 0..n:
            out[i] = x[i] * 2.0
    }
}
"""


@pytest.fixture(scope="module")
def shell():
    ip = start_ipython()
    ip.run_line_magic("load_ext", "zyntax")
    return ip


def test_a_named_cell_binds_the_program(shell):
    shell.run_cell_magic("zynml", "ops --device cpu", CELL)
    y = shell.user_ns["ops"].double(np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(y, [0, 2, 4])


def test_an_unnamed_cell_binds_each_kernel(shell):
    shell.run_cell_magic("zynml", "", CELL)
    np.testing.assert_array_equal(shell.user_ns["double"](np.ones(2, np.float32)), [2, 2])


def test_a_cell_that_does_not_compile_shows_where(shell, capsys):
    shell.run_cell_magic("zynml", "bad", "let x = y\n")
    out = capsys.readouterr().out
    assert "<cell>:1:9: error: unknown name 'y'" in out and "^" in out
    assert "bad" not in shell.user_ns
