"""Shared test settings: hypothesis profiles, and the tracing tests' ``spans`` exporter.

``default`` keeps ``make test`` fast and reproducible (derandomized);
``long`` is for a deep run by hand: ``HYPOTHESIS_PROFILE=long make test``.
"""

import os

from hypothesis import HealthCheck, settings

from tests.otel_support import spans  # noqa: F401 -- a fixture for every test module

settings.register_profile(
    "default",
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "long",
    max_examples=20_000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
