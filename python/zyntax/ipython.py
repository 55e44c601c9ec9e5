"""The %%zynml cell magic (`%load_ext zyntax`):

    %%zynml ops --device cpu
    def double(x: tensor[n, f32]) { ... }

compiles the cell and binds the program to `ops` in the notebook (without a
name, each kernel is bound under its own name). A cell that does not
compile shows its diagnostics, located in the cell."""
import argparse
import shlex

import zyntax


def _parser():
    p = argparse.ArgumentParser(prog="%%zynml", add_help=False)
    p.add_argument("name", nargs="?")
    p.add_argument("--device", default="auto")
    return p


def zynml(line, cell, ipython):
    args = _parser().parse_args(shlex.split(line))
    try:
        prog = zyntax.compile(cell, device=args.device, name="<cell>")
    except zyntax.ProgramError as e:
        print(str(e), end="")
        return None
    if args.name:
        ipython.user_ns[args.name] = prog
    else:
        for k in prog.kernels:
            ipython.user_ns[k] = prog.kernel(k)
    return None


def register(ipython):
    ipython.register_magic_function(lambda line, cell: zynml(line, cell, ipython), magic_kind="cell", magic_name="zynml")
