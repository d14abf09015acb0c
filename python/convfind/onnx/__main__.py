"""python -m convfind.onnx MODEL [--input-shape NAME=1,3,224,224 ...] [--math tf32]

Prints the problem list of an ONNX model (convfind.onnx.problems(), identical problems
merged) on standard output; `convfind tune model.onnx` reads it.  Exit status 0 on
success, 1 with one line on standard error when the model cannot be used, 2 for usage
errors."""

import argparse
import sys
import warnings

from . import ModelError, problems, write_problem_list


def _shape(text):
    name, sep, dims = text.partition("=")
    try:
        shape = tuple(int(d) for d in dims.split(","))
    except ValueError:
        shape = ()
    if not sep or not name or not shape or any(d <= 0 for d in shape):
        raise argparse.ArgumentTypeError(f"'{text}': expected NAME=D0,D1,... with positive dims")
    return name, shape


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m convfind.onnx", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="ONNX model file (external data next to it)")
    parser.add_argument("--input-shape", action="append", type=_shape, default=[],
                        metavar="NAME=D0,D1,...", help="bind a graph input's shape")
    parser.add_argument("--math", choices=("strict", "tf32"), default="strict")
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            found = problems(args.model, dict(args.input_shape), math=args.math)
    except ModelError as e:
        print(f"convfind.onnx: {args.model}: {e}", file=sys.stderr)
        return 1
    for w in caught:
        sys.stdout.write(f"# skipped: {w.message}\n")
    write_problem_list(found, sys.stdout, source=args.model)
    return 0


if __name__ == "__main__":
    sys.exit(main())
