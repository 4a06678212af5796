"""Tables kept out of models.py to keep it short: the audit trail (audit.py) and notification
channels with their deliveries (channels.py). models.py imports them, so Django and
`tools_app.models` know every one."""
