"""`vdgr update` (apply corpus changes once) and `vdgr watch` (apply them as they happen)."""
from __future__ import annotations

import sys

from runners.index_cli import (add_build_arguments, fewer_full_collections, print_report, progress_printer,
                               setup_logging, update_config)
from runners.early_embedder import early_embedder, stop_on_signals
from runners.presets import apply_preset
from schemas.config import BuildConfig, check_settings
from schemas.errors import VdgrError
from vdgr_core.safety import content_rules
from vdgr_core.store.location import IndexLocation
from vdgr_core.store.manifest import MANIFEST_NAME, read_manifest


def register(subparsers) -> None:
    p = subparsers.add_parser("update", help="apply added/changed/deleted/moved documents to an index",
                              description="Unknown --flags are passed to Beam as pipeline options.")
    add_build_arguments(p, recorded_defaults=True)
    _add_update_arguments(p)
    p.set_defaults(func=run_update_cmd, accepts_beam_args=True)

    w = subparsers.add_parser("watch", help="watch a corpus and apply changes in micro-batches")
    add_build_arguments(w, recorded_defaults=True)
    _add_update_arguments(w)
    w.add_argument("--interval", type=float, default=10.0, help="seconds between polls")
    w.add_argument("--max-polls", type=int, help="stop after this many polls")
    w.add_argument("--until", type=float, help="stop at this Unix time")
    w.set_defaults(func=run_watch_cmd, accepts_beam_args=True)


def _add_update_arguments(p) -> None:
    p.add_argument("--in-driver-max-documents", type=int, default=None,
                   help="process at most this many added/changed documents in this process, "
                        "more through the Beam pipeline (default: 200; the index is the same)")
    p.add_argument("--new-settings", action="store_true",
                   help="the settings flags given differ from the ones recorded in the index on "
                        "purpose: rebuild every domain with them (without this flag such a "
                        "difference is an error; settings left out are always the recorded ones)")


def _config(args) -> tuple[BuildConfig, bool]:
    """(configuration, index exists): the recorded settings with the flags given; exits with a
    clear message when they differ from the recorded ones without --new-settings."""
    exists = IndexLocation(args.index).exists(MANIFEST_NAME)
    recorded = read_manifest(args.index).config if exists else None
    config = update_config(args, recorded)
    if recorded is not None:
        check_settings(recorded, config, args.new_settings, content_rules())
    return config, exists


def run_update_cmd(args, beam_args) -> int:
    # before anything imports Beam: its import-time notices must meet the filtered handler
    setup_logging(args.quiet)
    try:
        config, exists = _config(args)
        # the model starts loading now, before Beam and LanceDB are imported and the corpus
        # scanned; it is stopped at once if the update has nothing to embed
        # Ctrl-C or SIGTERM: children stopped, what was embedded kept, nothing committed
        with early_embedder(config.slices.embed, wanted=exists) as child, \
                stop_on_signals("update", config.slices.embed, child):
            from pipelines.run_update import run_update

            with fewer_full_collections():
                report = run_update(config, apply_preset(args.preset, beam_args), progress_printer(args.quiet),
                                    settings_change=args.new_settings)
    except (VdgrError, ValueError) as exc:
        print(f"vdgr update: error: {exc}", file=sys.stderr)
        return 2
    print(report.plan.summary())
    if report.build is None:
        print("index unchanged: nothing to commit")
    else:
        print_report(report.build)
    return 0


def run_watch_cmd(args, beam_args) -> int:
    setup_logging(args.quiet)
    try:
        config, _ = _config(args)
    except VdgrError as exc:
        print(f"vdgr watch: error: {exc}", file=sys.stderr)
        return 2
    from pipelines.watch import run_watch

    def on_poll(r):
        print(f"[watch] {r.summary}" + (f" -> index {r.build_id}" if r.build_id else ""), flush=True)

    run_watch(config, interval_s=args.interval, max_polls=args.max_polls, until=args.until,
              beam_args=apply_preset(args.preset, beam_args), on_poll=on_poll,
              settings_change=args.new_settings)
    print("[watch] stopped", file=sys.stderr)
    return 0
