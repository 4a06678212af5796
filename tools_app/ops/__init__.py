"""What operators read (health, readiness, worker heartbeats, Prometheus metrics), and
how a process runs its hot path (judging threads, SQLite's kept log, SQL written once)."""
