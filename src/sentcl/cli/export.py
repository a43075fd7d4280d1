"""``sentcl export --format onnx MODEL OUT``: the whole encoder (backbone, pooler, head) as an ONNX folder;
``--format openvino``: the same folder with OpenVINO's IR of the graph, which OpenVINO runs."""

from __future__ import annotations

import argparse
import json

from sentcl.cli.options import add_pooler
from sentcl.files.kinds import model_name, own_folder
from sentcl.files.pathcheck import check_output_dir

FORMATS = ("onnx", "openvino")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="Export a model for deployment (ONNX: input_ids + attention_mask -> sentence embedding).",
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="onnx",
        help="Export format (default onnx; openvino: the same folder with OpenVINO's IR, run by OpenVINO).",
    )
    p.add_argument(
        "model", type=model_name, metavar="MODEL", help="Local folder, hub id or offline short name."
    )
    p.add_argument("out", metavar="OUT", type=own_folder, help="Output folder (new or a previous export).")
    add_pooler(p)
    p.add_argument(
        "--int8",
        action="store_true",
        help="Quantise with onnxruntime's dynamic int8 quantisation (int8 weights per output channel).",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="Replace an earlier export at OUT (a folder of anything else is never replaced).",
    )
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from sentcl.files.output import claim_folder
    from sentcl.interop.onnx import ONNX_CONFIG, ONNX_MODEL, OPENVINO_MODEL, export_inputs, export_onnx

    openvino = args.format == "openvino"
    claim_folder(args.out, "export", "OUT", export_inputs(args.model), replace=True, overwrite=args.overwrite)
    check_output_dir(args.out, "OUT", whole=True)  # before the export's work
    out = export_onnx(
        args.model,
        args.out,
        int8=args.int8,
        pooler=args.pooler,
        verbose=getattr(args, "verbose", False),
        openvino=openvino,
        overwrite=args.overwrite,
    )
    meta = json.loads((out / ONNX_CONFIG).read_text(encoding="utf-8"))
    size_mb = (out / ONNX_MODEL).stat().st_size / 2**20
    print(
        f"wrote {out / ONNX_MODEL} ({size_mb:.1f} MiB, pooler {meta['pooler']}, dim {meta['dim']}, "
        f"max_length {meta['max_length']}, head {str(meta['head']).lower()}, normalize "
        f"{str(meta['normalize']).lower()}, {'int8' if args.int8 else 'fp32'}; -v shows onnxruntime's log)"
    )
    if openvino:
        print(f"wrote {out / OPENVINO_MODEL} and its .bin: the folder runs with OpenVINO")
    return 0
