"""The command line (click only): options, commands, printers and exit codes."""
