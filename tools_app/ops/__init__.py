"""What operators read (health, readiness, worker heartbeats, Prometheus metrics), and
how a web process runs its hot path (judging threads, SQLite's kept log)."""
