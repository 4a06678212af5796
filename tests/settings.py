"""The test suite's settings: agentweb's own, with a password hasher made for tests.

Django's default hasher (PBKDF2, a million rounds) spends about half a second of CPU on
every password it sets or checks, which is its purpose in production and nothing a test
checks. pytest-django exports this module's name in DJANGO_SETTINGS_MODULE, so the
Celery workers, daphne and `manage.py up` that the tests start use it too."""

from agentweb.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
