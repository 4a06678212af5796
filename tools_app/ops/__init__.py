"""What operators read: health, readiness, worker heartbeats and Prometheus metrics."""
