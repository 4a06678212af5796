"""Tables kept out of models.py to keep it short: the audit trail (audit.py), notification
channels with their deliveries (channels.py), and people's decisions with each approval
towards a quorum (decisions.py), and the credentials the egress proxy adds
(credentials.py). models.py imports them, so Django and
`tools_app.models` know every one."""
