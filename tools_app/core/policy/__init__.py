"""The policy engine: pure Python, no Django. See engine.py for the order of checks.

Nothing is re-exported here: each name is imported from the module that defines it
(`types.py` the data, `engine.py` `evaluate`, `loader.py` policy files, `preview.py`
what a reviewer reads of a command …), so that one fact has one name.
"""
