"""Shell command analysis: a command line parsed into the simple commands it runs.

Pure (no Django, no policy): `commands.py` parses with bashlex into `SimpleCommand`s
(`command_types.py`), looking through wrappers such as `sudo`, `env` and `sh -c`
(`wrappers.py`) and the programs that run other programs (`programs.py`). The policy
judges what this finds; the tools' `run_command` preview shows it.
"""
