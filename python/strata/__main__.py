"""`python -m strata`: the admin jobs on the executors driven from Python.

    python -m strata rechunk SRC DST --chunks 500,20000 --executor ray [--address HOST:PORT]
    python -m strata copy SRC DST --codec zstd:level=3 --executor ray
    python -m strata write-region SRC DST (--at 100,0 | --append-dim 0) --executor ray

The `strata` command runs these jobs on inline, threads, processes and mpi;
the ray and dask executors are driven from Python (a Ray driver or a
distributed.Client lives in the calling process), so their command line is
this one, with the options of `strata rechunk` it shares and --address (the
Ray cluster's, or the Dask scheduler's; Ray's default: the cluster this
machine runs, else a new local instance). Errors are one line on stderr,
"strata: error: ...": exit code 2 for usage, 1 for everything else.
"""
import argparse
import sys

from . import Spec, from_zarr, to_zarr

EXECUTORS = ("threads", "inline", "ray", "dask")


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f"strata: error: {message}", file=sys.stderr)
        sys.exit(2)


def _shape(text, option):
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise ValueError(f"{option} must be integers separated by commas, got '{text}'") from None
    return values


def _spec(args):
    options = {}
    if args.executor == "dask":
        import distributed
        if not args.address:
            raise ValueError("--executor dask needs --address (the Dask scheduler's)")
        options["client"] = distributed.Client(args.address)
    elif args.executor == "ray" and args.address:
        options["address"] = args.address
    elif args.address:
        raise ValueError(f"--address is for --executor ray or dask, not {args.executor}")
    return Spec(executor=args.executor, allowed_mem=args.allowed_mem,
                reserved_mem=args.reserved_mem, total_system_mem=args.total_system_mem,
                workers=args.workers, tier=args.tier, work_dir=args.work_dir,
                object_store_url=args.tier_object, **options)


def _add_common(p):
    p.add_argument("SRC", help="Source array")
    p.add_argument("DST", help="Destination array")
    p.add_argument("--executor", choices=EXECUTORS, default="threads",
                   help="ray (a Ray cluster), dask (a Dask scheduler), threads or inline")
    p.add_argument("--address", help="The Ray cluster's address (HOST:PORT; default: the one "
                                     "this machine runs, else a new local instance) or the "
                                     "Dask scheduler's")
    p.add_argument("--allowed-mem", default="2GB", help="Memory one task may use")
    p.add_argument("--reserved-mem", help="Memory a task needs before any chunk")
    p.add_argument("--total-system-mem", help="Memory for all tasks and RAM intermediates "
                                              "(default: the cluster's)")
    p.add_argument("--workers", type=int, help="Tasks at once, for planning (default: the "
                                               "cluster's CPUs)")
    p.add_argument("--tier", default="auto", help="auto, memory, spill, disk, object")
    p.add_argument("--work-dir", help="Directory for disk intermediates (seen by every node)")
    p.add_argument("--tier-object", help="Object-store prefix for the object tier")
    p.add_argument("--quiet", action="store_true", help="Print nothing but errors")


def main(argv=None):
    ap = _Parser(prog="python -m strata", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="verb", required=True)
    rechunk = sub.add_parser("rechunk", help="Rewrite SRC with new chunks into DST")
    _add_common(rechunk)
    rechunk.add_argument("--chunks", required=True, help="Target chunk shape, e.g. 500,20000")
    rechunk.add_argument("--codec", help="Codec of DST, e.g. zstd:level=3 (default blosc lz4)")
    rechunk.add_argument("--overwrite", action="store_true")
    copy = sub.add_parser("copy", help="Re-encode SRC into DST (same shape and chunks)")
    _add_common(copy)
    copy.add_argument("--codec", help="New codec, e.g. zstd:level=3 (default blosc lz4)")
    copy.add_argument("--overwrite", action="store_true")
    region = sub.add_parser("write-region", help="Write SRC into a region of the existing DST")
    _add_common(region)
    where = region.add_mutually_exclusive_group(required=True)
    where.add_argument("--at", help="Origin of the region in DST, e.g. 100,0")
    where.add_argument("--append-dim", type=int, help="Append along this axis instead")
    args = ap.parse_args(argv)
    try:
        spec = _spec(args)
        x = from_zarr(args.SRC, spec=spec)
        if args.verb == "rechunk":
            to_zarr(x.rechunk(_shape(args.chunks, "--chunks")), args.DST, codec=args.codec,
                    overwrite=args.overwrite)
        elif args.verb == "copy":
            to_zarr(x, args.DST, codec=args.codec, overwrite=args.overwrite)
        elif args.at is not None:
            to_zarr(x, args.DST, region=_shape(args.at, "--at"))
        else:
            to_zarr(x, args.DST, append_dim=args.append_dim)
    except (ValueError, TypeError, OSError, MemoryError, RuntimeError) as e:
        print(f"strata: error: {e}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"{args.verb}: {args.SRC} -> {args.DST} on {args.executor}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
