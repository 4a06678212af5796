"""SQL made once for the hook's hot path, where building statements through the ORM cost
more than running them: lookups compiled by Django once per process (`prepared.py`), and
INSERTs and claiming UPDATEs written from the model's columns (`rows.py`). Both give what
the ORM gives; the services and selectors that use them stay the only readers and
writers."""
