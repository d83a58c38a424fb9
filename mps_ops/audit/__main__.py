"""python -m mps_ops.audit [example ...] [--torch 2.13] [--forward-only | --eval] [--markdown | --json]

Audits the built-in examples (transformer: nn.TransformerEncoder with a
padding mask; cnn: a small CNN with batch norm and pooling; lstm: an LSTM),
training mode, forward and backward unless told otherwise."""

from __future__ import annotations

import argparse
import json
import sys

from . import audit, coverage
from .examples import EXAMPLES


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mps_ops.audit", description=__doc__.split("\n\n")[0])
    parser.add_argument("examples", nargs="*", choices=[[]] + sorted(EXAMPLES), metavar="example",
                        help=f"which built-in examples ({', '.join(sorted(EXAMPLES))}; default: all)")
    parser.add_argument("--torch", dest="torch_version", default=None,
                        help=f"the torch release to answer for ({coverage.releases()[0]} to "
                             f"{coverage.releases()[-1]}; default: the running torch's)")
    parser.add_argument("--forward-only", action="store_true", help="no backward pass")
    parser.add_argument("--eval", action="store_true", help="the modules in eval mode, without gradients")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--markdown", action="store_true")
    output.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    import torch

    reports = {}
    for name in args.examples or sorted(EXAMPLES):
        model, inputs, kwargs = EXAMPLES[name]()
        model.train(not args.eval)
        with torch.set_grad_enabled(not args.eval):
            reports[name] = audit(model, *inputs, backward=not (args.forward_only or args.eval),
                                  torch_version=args.torch_version, **kwargs)
    if args.json:
        print(json.dumps({name: r.to_dict() for name, r in reports.items()}, indent=2))
        return 0
    for name, report in reports.items():
        doc = EXAMPLES[name].__doc__.strip()
        if args.markdown:
            print(f"### {name}: {doc}\n\n{report.markdown()}\n")
        else:
            print(f"=== {name}: {doc}\n{report.table()}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
