"""One module per `zgen` subcommand, each with `add_parser(subparsers)` and `run(args, settings) -> int`."""
