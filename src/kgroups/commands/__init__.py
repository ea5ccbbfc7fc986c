"""The bodies of the `kgroups` subcommands; cli.py parses and dispatches."""
