"""Errors a service raises; each maps to one HTTP status in the API.

They live outside `services/` so that raising or catching one never loads the services.
"""

from __future__ import annotations


class ServiceError(Exception):
    """A request that cannot be carried out; the message is for the person who asked."""

    status = 400


class NotFound(ServiceError):
    status = 404


class Forbidden(ServiceError):
    status = 403


class Conflict(ServiceError):
    status = 409


class Invalid(ServiceError):
    status = 422


class Unavailable(ServiceError):
    status = 503
